package full

import (
	"context"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/attachments/extract"
	"github.com/tenantkit/tenantkit/attachments/thumbs"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/payments/stripeprovider"
)

// Open opens a Kit with every built-in plug-in: Configure(cfg), then
// tenantkit.Open.
func Open(ctx context.Context, cfg tenantkit.Config) (*tenantkit.Kit, error) {
	return tenantkit.Open(ctx, Configure(cfg))
}

// Configure returns cfg with the built-in plug-ins filled in where cfg
// leaves them unset:
//
//   - Payments.Providers: Providers() (mock, mock_processing and stripe);
//   - Attachments.Images: thumbs.Images{} (PNG, JPEG, GIF and WebP
//     resizing for the image route);
//   - Attachments.Extractor: extract.Extractor{} (text of plain text,
//     PDF and .docx files, with extract's default limits).
//
// What cfg sets is kept as it is.
func Configure(cfg tenantkit.Config) tenantkit.Config {
	if cfg.Payments.Providers == nil {
		cfg.Payments.Providers = Providers()
	}
	if cfg.Attachments.Images == nil {
		cfg.Attachments.Images = thumbs.Images{}
	}
	if cfg.Attachments.Extractor == nil {
		cfg.Attachments.Extractor = extract.Extractor{}
	}
	return cfg
}

// Providers returns a registry of the built-in payment providers: mock,
// mock_processing and stripe (stripeprovider, with its default options).
// Register more on it before passing it in Config.Payments.Providers.
func Providers() *payments.Registry {
	return payments.NewRegistry(payments.NewMock(payments.KeyMock), payments.NewMock(payments.KeyMockProcessing),
		stripeprovider.New(stripeprovider.Options{}))
}
