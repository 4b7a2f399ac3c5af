// Package full opens a tenantkit Kit of any of the built-in areas, by
// name, with every built-in plug-in, for the standalone server and for
// hosts that want everything:
//
//	kit, err := full.Open(ctx, full.Config{DatabaseURL: "sqlite:app.db"}) // Areas nil: every area
//	api, err := httpapi.New(kit.Kit, httpapi.Options{})
//
// Config holds every area's options (as the areas' modules take them),
// Modules turns it into the modules of tenantkit.Config.Areas, and Kit is
// the tenantkit.Kit with a typed field per area (kit.Toggles,
// kit.Payments, …; nil for an area it does not have). Open adds Stripe
// among the payment providers, image resizing for the attachments' image
// route (package attachments/thumbs) and text extraction of plain text,
// PDF and .docx files (package attachments/extract); OpenPlain adds no
// plug-in. Configure does the former to a Config without opening it.
//
// # Decisions
//
// This package imports every area and every plug-in: a host that wants a
// few areas lists their modules in tenantkit.Config.Areas instead, and
// links those areas only. The plug-ins are heavy code: the Stripe client,
// image codecs (image/jpeg, image/png, golang.org/x/image) and a PDF
// parser. Package tenantkit and the area packages link none of them, so a
// host that composes a few areas (feature toggles and business rules,
// say) and mounts httpapi builds a program without them (deps_test.go in
// the module root checks it). The S3 file storage is a plug-in of the same
// kind, package attachments/s3blobs, but it needs a bucket, so this
// package does not set it; the standalone server does when FILES_URL is
// s3://….
//
// Without this package a Kit takes payments through mock and
// mock_processing only (the catalogue then lists no Stripe gateway), the
// image route serves originals unresized, and no text is extracted but by
// an OCR a host plugs in; package attachments and package payments
// document that.
//
// Only what cfg leaves unset is filled in: a host's own Providers
// registry, Images or Extractor is kept (start from Providers() to keep
// Stripe beside a provider of its own).
package full
