package payments

import (
	"context"
	"os"
)

// CredentialSource gives a tenant's credentials for a provider. A missing
// setting is an absent key, not an error.
type CredentialSource interface {
	// Credentials returns the settings of providerKey for tenantID.
	Credentials(ctx context.Context, tenantID, providerKey string) (Credentials, error)
}

// CredentialFunc adapts a function to CredentialSource.
type CredentialFunc func(ctx context.Context, tenantID, providerKey string) (Credentials, error)

// Credentials implements CredentialSource.
func (f CredentialFunc) Credentials(ctx context.Context, tenantID, providerKey string) (Credentials, error) {
	return f(ctx, tenantID, providerKey)
}

// envCredentials are the environment variables of each provider's
// credentials, the same for every tenant.
var envCredentials = map[string]map[string]string{
	"stripe": {
		"secretKey":      "STRIPE_SECRET_KEY",
		"publishableKey": "STRIPE_PUBLISHABLE_KEY",
		"webhookSecret":  "STRIPE_WEBHOOK_SECRET",
	},
	KeyMock:           {"webhookSecret": "MOCK_GATEWAY_WEBHOOK_SECRET"},
	KeyMockProcessing: {"webhookSecret": "MOCK_GATEWAY_WEBHOOK_SECRET"},
}

// EnvCredentials reads every tenant's credentials from the environment:
// STRIPE_SECRET_KEY, STRIPE_PUBLISHABLE_KEY and STRIPE_WEBHOOK_SECRET for
// stripe, MOCK_GATEWAY_WEBHOOK_SECRET for the mock providers.
type EnvCredentials struct {
	// Getenv reads a variable; nil is os.Getenv (the standalone server
	// passes its own, where flags win).
	Getenv func(string) string
}

// Credentials implements CredentialSource.
func (e EnvCredentials) Credentials(_ context.Context, _, providerKey string) (Credentials, error) {
	getenv := e.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	out := Credentials{}
	for key, env := range envCredentials[providerKey] {
		if v := getenv(env); v != "" {
			out[key] = v
		}
	}
	return out, nil
}

// Fallback returns a source that takes each setting from primary and, where
// primary has none, from fallback: a tenant's stored credentials first,
// the environment's after.
func Fallback(primary, fallback CredentialSource) CredentialSource {
	return CredentialFunc(func(ctx context.Context, tenantID, providerKey string) (Credentials, error) {
		out, err := fallback.Credentials(ctx, tenantID, providerKey)
		if err != nil {
			return nil, err
		}
		own, err := primary.Credentials(ctx, tenantID, providerKey)
		if err != nil {
			return nil, err
		}
		for k, v := range own {
			if v != "" {
				out[k] = v
			}
		}
		return out, nil
	})
}
