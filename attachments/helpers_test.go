package attachments_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/extract"
	"github.com/tenantkit/tenantkit/attachments/thumbs"
	"github.com/tenantkit/tenantkit/store"
)

// quiet is a logger that drops everything (refusals the tests provoke).
func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newService returns a Kit-less service over db with opts (quiet unless
// opts names a logger), with the built-in plug-ins (thumbs, extract)
// unless opts names others. bareService has none.
func newService(db *store.DB, opts attachments.Options) *attachments.Service {
	if opts.Images == nil {
		opts.Images = thumbs.Images{}
	}
	if opts.Extractor == nil {
		opts.Extractor = extract.Extractor{}
	}
	return bareService(db, opts)
}

// bareService returns a Kit-less service over db with opts as they are
// (quiet unless opts names a logger).
func bareService(db *store.DB, opts attachments.Options) *attachments.Service {
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	return must(attachments.New(db, opts))
}

// tenant is a tenant of the test with its first organization's scope.
type tenant struct {
	id, org string
	ctx     context.Context
}

// newTenant returns a fresh tenant whose context acts in a fresh
// organization of it.
func newTenant(t testing.TB) tenant {
	tn := tenant{id: store.NewID(), org: store.NewID()}
	tn.ctx = store.WithScope(t.Context(), store.Scope{TenantID: tn.id, OrganizationID: tn.org})
	return tn
}

// in returns a context of the tenant with another scope's organizations.
func (tn tenant) in(t testing.TB, org string, readable []string) context.Context {
	return store.WithScope(t.Context(), store.Scope{TenantID: tn.id, OrganizationID: org, OrganizationIDs: readable})
}

// upload stores body as fileName on orders/record in the tenant, failing
// the test on an error.
func upload(t testing.TB, svc *attachments.Service, ctx context.Context, record, fileName string, body []byte,
	edit func(in *attachments.UploadInput)) *attachments.Attachment {
	t.Helper()
	in := attachments.UploadInput{EntityID: "orders", RecordID: record, FileName: fileName, File: bytes.NewReader(body)}
	if edit != nil {
		edit(&in)
	}
	a, err := svc.Upload(ctx, in)
	if err != nil {
		t.Fatalf("Upload %s: %v", fileName, err)
	}
	return a
}

// pngImage encodes a w×h PNG of a colour gradient.
func pngImage(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 255 / max(w-1, 1)), uint8(y * 255 / max(h-1, 1)), 128, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// blobKeys lists the keys under prefix, sorted.
func blobKeys(t testing.TB, b attachments.Blobs, prefix string) []string {
	t.Helper()
	list, err := b.List(t.Context(), prefix)
	if err != nil {
		t.Fatalf("List %q: %v", prefix, err)
	}
	out := make([]string, 0, len(list))
	for _, info := range list {
		out = append(out, info.Key)
	}
	slices.Sort(out)
	return out
}

// blobBytes reads the blob under key.
func blobBytes(t testing.TB, b attachments.Blobs, key string) []byte {
	t.Helper()
	r, err := b.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open %q: %v", key, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// usage is the tenant's stored bytes as the SQL store counts them.
func usage(t testing.TB, db *store.DB, tenantID string) int64 {
	t.Helper()
	n, err := attachments.NewSQLStore().Usage(t.Context(), db, tenantID)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// events returns the data of the tenant's events of type typ, oldest
// first.
func events(t testing.TB, db *store.DB, tenantID, typ string) []map[string]any {
	t.Helper()
	evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: tenantID, Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]map[string]any, len(evs))
	for i, ev := range evs {
		if err := json.Unmarshal(ev.Data, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func fileNames(list []*attachments.Attachment) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.FileName
	}
	return out
}

// fakeOCR is a plugged-in OCR that answers text and records the types it
// was asked to read.
type fakeOCR struct {
	text string
	mu   sync.Mutex
	// calls are the MIME types and first bytes of each call.
	calls []string
}

func (o *fakeOCR) Text(_ context.Context, r io.Reader, mimeType string) (string, error) {
	head := make([]byte, 8)
	n, _ := io.ReadFull(r, head)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, mimeType+" "+string(head[:n]))
	return o.text, nil
}

func (o *fakeOCR) Calls() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls)
}

// fakeFields declares the custom fields color and count for attachments,
// and the attachment field photo of products.
type fakeFields struct{}

func (fakeFields) CheckValues(_ context.Context, entityID string, values map[string]any, _ bool) (map[string]any, error) {
	var v store.ValidationError
	out := map[string]any{}
	for k, val := range values {
		k = strings.TrimPrefix(k, "cf_")
		if entityID != attachments.CustomFieldsEntity || (k != "color" && k != "count") {
			v.Add("cf_"+k, "Unknown custom field")
			continue
		}
		out[k] = val
	}
	return out, v.Err()
}

func (fakeFields) FieldConfig(_ context.Context, entityID, key string) (map[string]any, error) {
	if entityID == "products" && key == "photo" {
		return map[string]any{"maxAttachmentSizeMb": 0.002, "acceptExtensions": []any{"png", ".JPG"}, "partitionCode": attachments.PublicPartition}, nil
	}
	return nil, store.ErrNotFound
}

// countingReader yields n bytes of a text pattern, never holding them,
// and counts what was read.
type countingReader struct {
	n, read int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), r.n-r.read))
	for i := range k {
		p[i] = 'a' + byte((r.read+int64(i))%26)
	}
	r.read += int64(k)
	return k, nil
}

func readerOf(s string) io.Reader { return strings.NewReader(s) }
