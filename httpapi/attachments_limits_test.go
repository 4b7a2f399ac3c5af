package httpapi

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/thumbs/thumbstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// attFlat16 is the file: a 7000×7000 16-bit RGBA PNG (49 MP,
// under the 50 MP guard) of some 400 KB that decodes to 392 MB.
var attFlat16 = sync.OnceValue(func() []byte { return thumbstest.FlatPNG(7000, 7000, 16, 6) })

// attGatedBlobs is MemBlobs whose originals, once a resize has read the
// header and seeked back (inside the resize's memory and CPU), stop
// reading until gate closes.
type attGatedBlobs struct {
	*attachments.MemBlobs
	gate    chan struct{}
	holding chan struct{}
}

func (b *attGatedBlobs) Open(ctx context.Context, key string) (attachments.Blob, error) {
	blob, err := b.MemBlobs.Open(ctx, key)
	if err != nil || !strings.HasSuffix(key, "/original") {
		return blob, err
	}
	return &attGatedBlob{Blob: blob, b: b}, nil
}

type attGatedBlob struct {
	attachments.Blob
	b                     *attGatedBlobs
	read, rewound, waited bool
}

func (g *attGatedBlob) Seek(off int64, whence int) (int64, error) {
	g.rewound = g.read // after the header: a resize (serving the file seeks first)
	return g.Blob.Seek(off, whence)
}

func (g *attGatedBlob) Read(p []byte) (int, error) {
	g.read = true
	if g.rewound && !g.waited {
		g.waited = true
		g.b.holding <- struct{}{}
		<-g.b.gate
	}
	return g.Blob.Read(p)
}

// The image route's cost is bounded for anonymous callers: the issue's
// 16-bit 49 MP PNG is refused (400, saying why) at any size before it is
// decoded, while its original is still served; a resize that finds no
// room is 503 with Retry-After.
func TestAttachmentImageLimits(t *testing.T) {
	t.Parallel()
	big := attFlat16()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := &attGatedBlobs{MemBlobs: attachments.NewMemBlobs(), gate: make(chan struct{}), holding: make(chan struct{}, 8)}
		e := attNewEnv(t, db, attachments.Options{Blobs: blobs, ImageResizes: 1, ImageResizesPerTenant: 1, ImageWait: 100 * time.Millisecond})
		f := attSetup(e, "Acme")
		pub := func(name string, data []byte) string {
			return attBase + "/image/" + f.upload("r", name, data, "partitionCode", "productsMedia")["id"].(string) + "/" + name
		}

		bigPath := pub("big16.png", big)
		for _, q := range []string{"?width=1&height=1", "?width=320&height=320", "?width=4000&height=4000&cropType=contain"} {
			r := e.attGet(bigPath+q, "")
			if r.Status != 400 || !strings.Contains(r.JSON()["error"].(string), "needs about") {
				t.Errorf("%s: status %d, want 400 with the budget's reason; body %s", q, r.Status, r.Body)
			}
		}
		r := e.attGet(bigPath, "").expect(200)
		is.True(bytes.Equal(r.Body, big)) // the original, decoding nothing

		// One resize holds the only CPU: the tenant's next is refused at
		// once, another tenant's after waiting ImageWait.
		small := pub("small.png", attPNG(t, 60, 40))
		other := attSetup(e, "Globex")
		otherSmall := attBase + "/image/" + other.upload("r", "o.png", attPNG(t, 60, 40), "partitionCode", "productsMedia")["id"].(string)
		first := make(chan *response, 1)
		go func() { first <- e.attGet(small+"?width=20&height=20", "") }()
		select {
		case <-blobs.holding:
		case <-time.After(10 * time.Second):
			t.Fatal("the first resize never started")
		}
		for _, path := range []string{small + "?width=21&height=21", otherSmall + "?width=20&height=20"} {
			r := e.attGet(path, "")
			if r.Status != 503 || r.Header.Get("Retry-After") != "5" {
				t.Errorf("%s: status %d Retry-After %q, want 503 with Retry-After 5; body %s", path, r.Status, r.Header.Get("Retry-After"), r.Body)
			}
			is.True(strings.Contains(r.JSON()["error"].(string), "retry"))
		}
		close(blobs.gate)
		(<-first).expect(200)
		e.attGet(small+"?width=21&height=21", "").expect(200)
		e.attGet(otherSmall+"?width=20&height=20", "").expect(200)
	})
}

// File names with bidirectional control characters are refused on upload
// (naming file) and on rename (naming fileName); a rename otherwise keeps
// the extension and shows in the library and the download's name.
func TestAttachmentFileNamesBidi(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		for _, r := range []rune{0x202a, 0x202e, 0x2066, 0x2069, 0x200e, 0x200f, 0x061c} {
			name := "cat_" + string(r) + "gnp.zip"
			body := e.attUpload(f.key, f.fields("r"), name, []byte("zip?")).JSON()
			details, _ := body["details"].(map[string]any)
			if msg, _ := details["file"].(string); !strings.Contains(msg, "bidirectional") {
				t.Errorf("upload of %q: %v, want 400 naming file", name, body)
			}
		}
		is.Equal(e.attBlobCount(f.tf.ID), 0)

		item := f.upload("r", "invoice.pdf", []byte("%PDF-1.4\n%%EOF\n"))
		id := item["id"].(string)
		lib := attBase + "/library/" + id
		for _, name := range []string{"invoice\u202Efdp.txt", "x\u2067.pdf"} {
			r := e.do("PATCH", lib, f.key, map[string]any{"fileName": name})
			details, _ := r.JSON()["details"].(map[string]any)
			if msg, _ := details["fileName"].(string); r.Status != 400 || !strings.Contains(msg, "bidirectional") {
				t.Errorf("rename to %q: %d %s, want 400 naming fileName", name, r.Status, r.Body)
			}
		}
		r := e.do("PATCH", lib, f.key, map[string]any{"fileName": "invoice.txt"})
		is.Equal(r.Status, 400)
		is.True(strings.Contains(r.JSON()["details"].(map[string]any)["fileName"].(string), "extension"))
		r = e.do("PATCH", lib, f.key, map[string]any{"fileName": 42})
		is.Equal(r.Status, 400)
		is.Equal(r.JSON()["details"], map[string]any{"fileName": "Must be a string."})
		is.Equal(e.do("GET", lib, f.key, nil).expect(200).JSON()["item"].(map[string]any)["fileName"], "invoice.pdf")

		e.do("PATCH", lib, f.key, map[string]any{"fileName": "Invoice 2025-11.pdf"}).expect(200)
		is.Equal(e.do("GET", lib, f.key, nil).expect(200).JSON()["item"].(map[string]any)["fileName"], "Invoice 2025-11.pdf")
		d := e.attGet(attBase+"/file/"+id, f.key).expect(200)
		is.Equal(attDispositionName(t, d.Header.Get("Content-Disposition")), "Invoice 2025-11.pdf")
	})
}
