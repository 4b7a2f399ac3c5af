package httpapi

import (
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Over a Kit without plug-ins (tenantkit.Open): the image route serves
// the original, with its own type, for any valid size; bad sizes and
// files that are not images are still 400; and the payment providers are
// the mocks.
func TestAttachmentsWithoutPlugins(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnvOpen(t, db, full.Config{}, full.OpenPlain)
		f := attSetup(e, "Acme")
		pngData := attPNG(t, 200, 100)
		item := f.upload("r", "photo.png", pngData)
		img := attBase + "/image/" + item["id"].(string)
		for _, path := range []string{item["thumbnailUrl"].(string), img + "?width=50&height=50", img + "/photo.png?width=30&cropType=contain", img} {
			r := e.attGet(path, f.key).expect(200)
			is.Equal(r.Body, pngData)
			is.Equal(r.Header.Get("Content-Type"), "image/png")
		}
		for _, q := range []string{"width=0", "width=4001", "width=10&cropType=stretch"} {
			if r := e.attGet(img+"?"+q, f.key); r.Status != 400 {
				t.Errorf("%s: status %d, want 400", q, r.Status)
			}
		}
		txt := f.upload("r", "notes.txt", []byte("plain words"))["id"].(string)
		attError(t, e.attGet(attBase+"/image/"+txt+"?width=10", f.key), 400, "Unsupported media type")
		is.Equal(e.kit.Payments.Providers().Keys(), []string{"mock", "mock_processing"})
	})
}
