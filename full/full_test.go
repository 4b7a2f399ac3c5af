package full_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/extract"
	"github.com/tenantkit/tenantkit/attachments/thumbs"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// kitOf opens a Kit with open on a fresh SQLite database.
func kitOf(t *testing.T, open func(context.Context, full.Config) (*full.Kit, error)) *full.Kit {
	t.Helper()
	kit, err := open(t.Context(), full.Config{DB: storetest.SQLite(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close(context.Background()) })
	return kit
}

// gateways lists the payment gateways of the Kit's integration catalogue.
func gateways(kit *full.Kit) []string {
	var out []string
	for _, d := range kit.Integrations.Definitions() {
		if d.Hub == "payment_gateways" {
			out = append(out, d.ID)
		}
	}
	slices.Sort(out)
	return out
}

// full.Open adds stripe to the mock providers, and the catalogue lists its
// gateway; full.OpenPlain has the mocks only, and no Stripe gateway.
func TestOpenProviders(t *testing.T) {
	t.Parallel()
	kit := kitOf(t, full.Open)
	if got := kit.Payments.Providers().Keys(); !slices.Equal(got, []string{"mock", "mock_processing", "stripe"}) {
		t.Errorf("full.Open: providers %v, want mock, mock_processing and stripe", got)
	}
	if got := gateways(kit); !slices.Equal(got, []string{integrationsapi.IntegrationGatewayMock, integrationsapi.IntegrationGatewayStripe}) {
		t.Errorf("full.Open: payment gateways %v", got)
	}
	bare := kitOf(t, full.OpenPlain)
	if got := bare.Payments.Providers().Keys(); !slices.Equal(got, []string{"mock", "mock_processing"}) {
		t.Errorf("full.OpenPlain: providers %v, want mock and mock_processing", got)
	}
	if got := gateways(bare); !slices.Equal(got, []string{integrationsapi.IntegrationGatewayMock}) {
		t.Errorf("full.OpenPlain: payment gateways %v, want the mock's only", got)
	}
}

// myImages is a host's own Images.
type myImages struct{ thumbs.Images }

// Configure fills in the plug-ins cfg leaves unset and keeps the others.
func TestConfigure(t *testing.T) {
	t.Parallel()
	cfg := full.Configure(full.Config{})
	if cfg.Payments.Providers == nil || cfg.Attachments.Images != (thumbs.Images{}) || cfg.Attachments.Extractor != (extract.Extractor{}) {
		t.Errorf("Configure(zero) = providers %v, images %v, extractor %v", cfg.Payments.Providers, cfg.Attachments.Images, cfg.Attachments.Extractor)
	}
	own := payments.NewRegistry(payments.NewMock(payments.KeyMock))
	limited := extract.Extractor{Limits: extract.Limits{MaxPages: 3}}
	cfg = full.Configure(full.Config{Payments: payments.Options{Providers: own},
		Attachments: attachments.Options{Images: myImages{}, Extractor: limited}})
	if cfg.Payments.Providers != own || cfg.Attachments.Images != (myImages{}) || cfg.Attachments.Extractor != limited {
		t.Errorf("Configure replaced what the host set: %v, %v, %v", cfg.Payments.Providers, cfg.Attachments.Images, cfg.Attachments.Extractor)
	}
}
