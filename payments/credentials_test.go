package payments_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantkit/tenantkit/payments"
)

// TestCredentialSources: the environment source reads through its Getenv
// per provider, and Fallback takes each setting from the tenant's own
// credentials first, the fallback's where the tenant has none (or an
// empty one); an error of either is returned.
func TestCredentialSources(t *testing.T) {
	t.Parallel()
	env := payments.EnvCredentials{Getenv: func(name string) string {
		return map[string]string{"STRIPE_SECRET_KEY": "sk_env", "STRIPE_WEBHOOK_SECRET": "whsec_env",
			"MOCK_GATEWAY_WEBHOOK_SECRET": "mock_env"}[name]
	}}
	ctx := context.Background()
	got, err := env.Credentials(ctx, "t1", "stripe")
	if err != nil || len(got) != 2 || got["secretKey"] != "sk_env" || got["webhookSecret"] != "whsec_env" {
		t.Fatalf("env stripe: %v, %v", got, err)
	}
	if got, _ := env.Credentials(ctx, "t1", payments.KeyMockProcessing); got["webhookSecret"] != "mock_env" {
		t.Fatalf("env mock_processing: %v", got)
	}

	own := payments.CredentialFunc(func(_ context.Context, tenantID, _ string) (payments.Credentials, error) {
		if tenantID == "broken" {
			return nil, errors.New("store down")
		}
		return payments.Credentials{"secretKey": "sk_" + tenantID, "webhookSecret": ""}, nil
	})
	layered := payments.Fallback(own, env)
	got, err = layered.Credentials(ctx, "t1", "stripe")
	if err != nil || got["secretKey"] != "sk_t1" || got["webhookSecret"] != "whsec_env" {
		t.Fatalf("layered: %v, %v; want the tenant's key and the environment's webhook secret", got, err)
	}
	if _, err := layered.Credentials(ctx, "broken", "stripe"); err == nil {
		t.Fatal("the tenant source's error was swallowed")
	}
}
