package httpapi

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	_ "image/png" // decode resized PNGs
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
	_ "golang.org/x/image/webp" // decode the WebP fixture's size

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/attachmentsapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The delivery routes: GET /attachments/file/{id} and
// /attachments/image/{id}[/{slug}].

// attGet is a GET with key ("" for none) and extra headers (name, value
// pairs).
func (e *testEnv) attGet(path, key string, headers ...string) *response {
	e.t.Helper()
	return e.send("GET", path, nil, func(req *http.Request) {
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
	})
}

// attJPEG is a w×h JPEG.
func attJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{R: uint8(x), G: uint8(y), B: 200, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// attGIF is a w×h GIF.
func attGIF(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	for y := range h {
		for x := range w {
			img.SetColorIndex(x, y, uint8((x+y)%2))
		}
	}
	var buf bytes.Buffer
	if err := gif.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// attPNGHeader is a PNG signature and an IHDR chunk (with its CRC)
// declaring w×h, 8-bit RGB, and an IEND: no pixel data, a valid header.
func attPNGHeader(w, h uint32) []byte {
	var buf bytes.Buffer
	buf.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&buf, binary.BigEndian, uint32(len(data)))
		body := append([]byte(typ), data...)
		buf.Write(body)
		_ = binary.Write(&buf, binary.BigEndian, crc32.ChecksumIEEE(body))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // bit depth, colour type RGB
	chunk("IHDR", ihdr)
	chunk("IEND", nil)
	return buf.Bytes()
}

// attDecodeSize decodes an image body and returns its format and size.
func attDecodeSize(t testing.TB, body []byte) (string, int, int) {
	t.Helper()
	img, format, err := image.Decode(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the body is not an image: %v", err)
	}
	b := img.Bounds()
	return format, b.Dx(), b.Dy()
}

// attDispositionName is the file name a Content-Disposition header gives.
func attDispositionName(t testing.TB, cd string) string {
	t.Helper()
	_, params, err := mime.ParseMediaType(cd)
	if err != nil {
		t.Errorf("Content-Disposition %q: %v", cd, err)
	}
	return params["filename"]
}

// attCommonHeaders checks what every delivery carries.
func attCommonHeaders(t testing.TB, what string, r *response, cache string) {
	t.Helper()
	if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q, want nosniff", what, got)
	}
	if got := r.Header.Get("Content-Security-Policy"); !strings.Contains(got, "sandbox") {
		t.Errorf("%s: Content-Security-Policy %q, want one with sandbox", what, got)
	}
	if got := r.Header.Get("Cache-Control"); got != cache {
		t.Errorf("%s: Cache-Control %q, want %q", what, got, cache)
	}
}

func TestAttachmentFileDelivery(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		other := attSetup(e, "Globex")
		webp, err := os.ReadFile("testdata/attachments/tiny.webp")
		is.NoErr(err)
		const private, public = "private, max-age=60", "public, max-age=86400"

		// Images are inline with their type; everything else downloads as
		// application/octet-stream.
		for _, c := range []struct {
			name, mime string
			data       []byte
			inline     bool
		}{
			{"p.png", "image/png", attPNG(t, 30, 20), true},
			{"j.jpg", "image/jpeg", attJPEG(t, 30, 20), true},
			{"g.gif", "image/gif", attGIF(t, 30, 20), true},
			{"w.webp", "image/webp", webp, true},
			{"t.txt", "", []byte("plain text"), false},
			{"d.pdf", "", []byte("%PDF-1.4\n%%EOF\n"), false},
			{"png-named.txt", "image/png", attPNG(t, 4, 4), true},
			{"text-named.png", "", []byte("text in disguise"), false},
			{"z.zip", "", []byte("PK\x03\x04 not much of a zip"), false},
			{"Ärger résumé.txt", "", []byte("non-ASCII name"), false},
			{`quote "me".png`, "image/png", attPNG(t, 3, 3), true},
		} {
			item := f.upload("r", c.name, c.data)
			url := item["url"].(string)
			r := e.attGet(url, f.key).expect(200)
			attCommonHeaders(t, c.name, r, private)
			if !bytes.Equal(r.Body, c.data) {
				t.Errorf("%s: the body differs from the upload", c.name)
			}
			ct, cd := r.Header.Get("Content-Type"), r.Header.Get("Content-Disposition")
			if c.inline {
				is.Equal(ct, c.mime)
				is.Equal(item["mimeType"], c.mime)
				if !strings.HasPrefix(cd, "inline") || attDispositionName(t, cd) != c.name {
					t.Errorf("%s: Content-Disposition %q, want inline naming the file", c.name, cd)
				}
				// download=1 forces a download.
				d := e.attGet(url+"?download=1", f.key).expect(200)
				is.Equal(d.Header.Get("Content-Type"), "application/octet-stream")
				is.True(strings.HasPrefix(d.Header.Get("Content-Disposition"), "attachment"))
			} else {
				if ct != "application/octet-stream" {
					t.Errorf("%s: Content-Type %q, want application/octet-stream", c.name, ct)
				}
				if !strings.HasPrefix(cd, "attachment") || attDispositionName(t, cd) != c.name {
					t.Errorf("%s: Content-Disposition %q, want attachment naming the file", c.name, cd)
				}
			}
		}

		// ETag and If-None-Match; ranges.
		data := []byte("0123456789abcdefghij")
		id := f.upload("r", "range.txt", data)["id"].(string)
		path := attBase + "/file/" + id
		r := e.attGet(path, f.key).expect(200)
		etag := r.Header.Get("ETag")
		is.True(etag != "")
		nm := e.attGet(path, f.key, "If-None-Match", etag)
		is.Equal(nm.Status, 304)
		is.Equal(len(nm.Body), 0)
		e.attGet(path, f.key, "If-None-Match", `"other"`).expect(200)
		rg := e.attGet(path, f.key, "Range", "bytes=0-9").expect(206)
		is.Equal(rg.Body, data[:10])
		is.Equal(rg.Header.Get("Content-Range"), "bytes 0-9/20")
		attCommonHeaders(t, "range", rg, private)
		is.Equal(e.attGet(path, f.key, "Range", "bytes=15-").expect(206).Body, data[15:])
		is.Equal(e.attGet(path, f.key, "Range", "bytes=50-60").Status, 416)

		// Who may fetch a private file.
		unknown := attBase + "/file/" + store.NewID()
		e.attGet(path, "").expect(401)
		e.attGet(unknown, "").expect(401)               // the same answer: no hint which ids exist
		e.attGet(attBase+"/file/nope", "").expect(401)  // likewise
		e.attGet(path, "tk_"+randomHex(24)).expect(401) // a bad credential
		attNotFound(t, "another tenant's key", e.attGet(path, other.key))
		attNotFound(t, "unknown with a key", e.attGet(unknown, f.key))
		e.attGet(path, e.superKey).expect(200)
		attNotFound(t, "unknown for the super admin", e.attGet(unknown, e.superKey))
		expectForbidden(t, e.attGet(path, e.newKey(f.tf, attachmentsapi.FeatureAttachmentsManage)), attachmentsapi.FeatureAttachmentsView)

		// A public file: anyone, and cached publicly.
		pub := f.upload("r", "pub.png", attPNG(t, 10, 10), "partitionCode", "productsMedia")
		pubPath := pub["url"].(string)
		r = e.attGet(pubPath, "").expect(200)
		attCommonHeaders(t, "public", r, public)
		is.Equal(r.Header.Get("Content-Type"), "image/png")
		attCommonHeaders(t, "public with a key", e.attGet(pubPath, f.key).expect(200), public)
		e.attGet(pubPath, e.superKey).expect(200)
		// A partition made public later serves its files publicly.
		p := e.do("POST", attBase+"/partitions", f.key, map[string]any{"code": "later", "title": "Later"}).expect(201).JSON()["item"].(map[string]any)
		later := f.upload("r", "later.txt", []byte("later"), "partitionCode", "later")["url"].(string)
		e.attGet(later, "").expect(401)
		e.do("PUT", attBase+"/partitions", f.key, map[string]any{"id": p["id"], "code": "later", "title": "Later", "isPublic": true}).expect(200)
		r = e.attGet(later, "").expect(200)
		attCommonHeaders(t, "made public", r, public)
		is.Equal(r.Header.Get("Content-Type"), "application/octet-stream")

		// After a delete: 404 with a key, 401 without.
		e.do("DELETE", attBase+"?id="+id, f.key, nil).expect(200)
		attNotFound(t, "deleted", e.attGet(path, f.key))
		e.attGet(path, "").expect(401)
		attNotFound(t, "deleted, super admin", e.attGet(path, e.superKey))
		e.do("DELETE", attBase+"?id="+pub["id"].(string), f.key, nil).expect(200)
		e.attGet(pubPath, "").expect(401)
	})
}

func TestAttachmentImages(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		other := attSetup(e, "Globex")
		pngData := attPNG(t, 200, 100)
		item := f.upload("r", "My File.PNG", pngData)
		id := item["id"].(string)
		img := attBase + "/image/" + id

		// The upload's thumbnail URL works: 320×320, cover.
		r := e.attGet(item["thumbnailUrl"].(string), f.key).expect(200)
		format, w, h := attDecodeSize(t, r.Body)
		is.Equal([]any{format, w, h}, []any{"png", 320, 320})
		is.Equal(r.Header.Get("Content-Type"), "image/png")
		attCommonHeaders(t, "thumbnail", r, "private, max-age=60")
		is.True(strings.HasPrefix(r.Header.Get("Content-Disposition"), "inline"))

		// Cover and contain give exactly the box; the slug is optional.
		for _, c := range []struct {
			query string
			w, h  int
		}{
			{"width=50&height=50", 50, 50},
			{"width=50&height=50&cropType=cover", 50, 50},
			{"width=80&height=20&cropType=cover", 80, 20},
			{"width=50&height=50&cropType=contain", 50, 50},
			{"width=30&height=90&cropType=contain", 30, 90},
			{"width=400&height=300&cropType=contain", 400, 300},
			{"width=1&height=4000", 1, 4000},
		} {
			for _, path := range []string{img + "?" + c.query, img + "/my-file.png?" + c.query, img + "/anything?" + c.query} {
				r := e.attGet(path, f.key).expect(200)
				_, w, h := attDecodeSize(t, r.Body)
				if w != c.w || h != c.h {
					t.Errorf("%s: %d×%d, want %d×%d", path, w, h, c.w, c.h)
				}
			}
		}
		// The same request twice: the same bytes.
		first := e.attGet(img+"?width=64&height=48&cropType=contain", f.key).expect(200)
		second := e.attGet(img+"/x.png?width=64&height=48&cropType=contain", f.key).expect(200)
		is.Equal(first.Body, second.Body)
		is.True(!bytes.Equal(first.Body, e.attGet(img+"?width=64&height=48", f.key).expect(200).Body)) // cover differs
		// ETag per size: 304 for the same, 200 for another.
		etag := first.Header.Get("ETag")
		is.True(etag != "")
		is.Equal(e.attGet(img+"?width=64&height=48&cropType=contain", f.key, "If-None-Match", etag).Status, 304)
		e.attGet(img+"?width=64&height=49&cropType=contain", f.key, "If-None-Match", etag).expect(200)

		// A JPEG stays a JPEG.
		jpg := f.upload("r", "photo.jpg", attJPEG(t, 120, 80))["id"].(string)
		r = e.attGet(attBase+"/image/"+jpg+"/photo.jpg?width=60&height=60", f.key).expect(200)
		format, w, h = attDecodeSize(t, r.Body)
		is.Equal([]any{format, w, h}, []any{"jpeg", 60, 60})
		is.Equal(r.Header.Get("Content-Type"), "image/jpeg")

		// Without sizes: the bytes as uploaded.
		for _, path := range []string{img, img + "/my-file.png", img + "?cropType=contain"} {
			r := e.attGet(path, f.key).expect(200)
			is.Equal(r.Body, pngData)
			is.Equal(r.Header.Get("Content-Type"), "image/png")
		}

		// Bad sizes and fits: 400, before anything is looked up.
		for _, q := range []string{"width=0", "height=0", "width=-1", "width=5000", "height=4001", "width=abc", "height=1.5",
			"width=10&height=abc", "width=10&cropType=stretch", "cropType=fill", "width=99999999999999999999"} {
			for _, path := range []string{img + "?" + q, attBase + "/image/" + store.NewID() + "/x.png?" + q} {
				if r := e.attGet(path, f.key); r.Status != 400 {
					t.Errorf("%s: status %d, want 400; body %s", path, r.Status, r.Body)
				}
			}
		}

		// Not an image: 400 with or without sizes (the file route serves
		// it).
		txt := f.upload("r", "notes.txt", []byte("not an image"))["id"].(string)
		for _, path := range []string{attBase + "/image/" + txt, attBase + "/image/" + txt + "/notes.txt", attBase + "/image/" + txt + "?width=10&height=10"} {
			attError(t, e.attGet(path, f.key), 400, "Unsupported media type")
		}
		e.attGet(attBase+"/file/"+txt, f.key).expect(200)

		// WebP and GIF sources give PNGs.
		webp, err := os.ReadFile("testdata/attachments/tiny.webp")
		is.NoErr(err)
		for _, src := range []struct {
			name string
			data []byte
		}{{"w.webp", webp}, {"g.gif", attGIF(t, 30, 30)}} {
			id := f.upload("r", src.name, src.data)["id"].(string)
			r := e.attGet(attBase+"/image/"+id+"?width=16&height=9&cropType=contain", f.key).expect(200)
			format, w, h := attDecodeSize(t, r.Body)
			is.Equal([]any{src.name, format, w, h}, []any{src.name, "png", 16, 9})
			is.Equal(r.Header.Get("Content-Type"), "image/png")
		}

		// A pixel bomb: its header declares 10000×10000; resizing is refused
		// before decoding.
		bomb := f.upload("r", "bomb.png", attPNGHeader(10000, 10000))
		is.Equal(bomb["mimeType"], "image/png")
		bombPath := attBase + "/image/" + bomb["id"].(string) + "/bomb.png"
		for _, q := range []string{"?width=10&height=10", "?width=100&height=100&cropType=contain"} {
			if r := e.attGet(bombPath+q, f.key); r.Status != 400 {
				t.Errorf("bomb %s: status %d, want 400; body %s", q, r.Status, r.Body)
			}
		}
		// A PNG whose pixel data is missing cannot be resized either.
		broken := f.upload("r", "broken.png", attPNGHeader(20, 20))["id"].(string)
		if r := e.attGet(attBase+"/image/"+broken+"?width=10&height=10", f.key); r.Status != 400 {
			t.Errorf("broken PNG: status %d, want 400; body %s", r.Status, r.Body)
		}

		// Who may fetch: like files.
		e.attGet(img+"?width=10&height=10", "").expect(401)
		e.attGet(img, "").expect(401)
		attNotFound(t, "another tenant's key", e.attGet(img+"?width=10&height=10", other.key))
		attNotFound(t, "unknown id", e.attGet(attBase+"/image/"+store.NewID()+"?width=10&height=10", f.key))
		attNotFound(t, "bad id", e.attGet(attBase+"/image/nope/x.png", f.key))
		e.attGet(img+"?width=10&height=10", e.superKey).expect(200)
		e.attGet(img+"/my-file.png?width=12&height=12", e.superKey).expect(200)

		// Public images: anyone, cached an hour publicly.
		pub := f.upload("r", "pub.gif", attGIF(t, 40, 40), "partitionCode", "productsMedia")["id"].(string)
		pubImg := attBase + "/image/" + pub + "/pub.gif"
		r = e.attGet(pubImg+"?width=20&height=10", "").expect(200)
		attCommonHeaders(t, "public image", r, "public, max-age=3600")
		format, w, h = attDecodeSize(t, r.Body)
		is.Equal([]any{format, w, h}, []any{"png", 20, 10})
		attCommonHeaders(t, "public original", e.attGet(pubImg, "").expect(200), "public, max-age=3600")

		// Deleted: 404 (with a credential), its sizes too.
		e.do("DELETE", attBase+"/library/"+id, f.key, nil).expect(200)
		attNotFound(t, "deleted", e.attGet(img+"?width=50&height=50", f.key))
		attNotFound(t, "deleted original", e.attGet(img, f.key))
		e.attGet(img+"?width=50&height=50", "").expect(401)
		// Its resized images went with it.
		list, err := e.kit.Attachments.Blobs().List(t.Context(), f.tf.ID+"/"+id+"/")
		is.NoErr(err)
		is.Equal(len(list), 0)
	})
}

func TestAttachmentImagesConcurrent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := attNewEnv(t, db, attachments.Options{})
		f := attSetup(e, "Acme")
		id := f.upload("r", "big.png", attPNG(t, 600, 400))["id"].(string)
		path := attBase + "/image/" + id + "/big.png?width=123&height=77&cropType=contain"
		const n = 10
		bodies := make([][]byte, n)
		statuses := make([]int, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				r := e.attGet(path, f.key)
				statuses[i], bodies[i] = r.Status, r.Body
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			if statuses[i] != 200 {
				t.Fatalf("request %d: status %d; body %s", i, statuses[i], bodies[i])
			}
			if !bytes.Equal(bodies[i], bodies[0]) {
				t.Errorf("request %d got other bytes than request 0", i)
			}
		}
		_, w, h := attDecodeSize(t, bodies[0])
		if w != 123 || h != 77 {
			t.Errorf("%d×%d, want 123×77", w, h)
		}
		// One stored thumbnail for the size.
		list, err := e.kit.Attachments.Blobs().List(t.Context(), f.tf.ID+"/"+id+"/thumbs/")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 {
			t.Errorf("%d thumbnails stored, want 1", len(list))
		}
	})
}

// On disk (Config.FilesDir, as the standalone server stores files): the
// same answers, and deletes and refusals leave no file behind.
func TestAttachmentFilesOnDisk(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		dir := t.TempDir()
		e := attNewEnvConfig(t, db, full.Config{FilesDir: dir, Attachments: attachments.Options{MaxUploadBytes: 64 << 10}})
		f := attSetup(e, "Acme")
		files := func() []string {
			var out []string
			err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					out = append(out, path)
				}
				return err
			})
			is.NoErr(err)
			return out
		}
		pngData := attPNG(t, 90, 60)
		id := f.upload("r", "p.png", pngData)["id"].(string)
		txt := f.upload("r", "t.txt", []byte("0123456789abcdef"))["id"].(string)
		is.Equal(len(files()), 2)
		is.Equal(e.attGet(attBase+"/file/"+id, f.key).expect(200).Body, pngData)
		is.Equal(e.attGet(attBase+"/file/"+txt, f.key, "Range", "bytes=0-9").expect(206).Body, []byte("0123456789"))

		// Resizes are made once, concurrently, and kept.
		path := attBase + "/image/" + id + "/p.png?width=30&height=30&cropType=contain"
		bodies := make([][]byte, 8)
		var wg sync.WaitGroup
		for i := range bodies {
			wg.Go(func() { bodies[i] = e.attGet(path, f.key).Body })
		}
		wg.Wait()
		for i := range bodies {
			is.Equal(bodies[i], bodies[0])
		}
		_, w, h := attDecodeSize(t, bodies[0])
		is.Equal([]int{w, h}, []int{30, 30})
		is.Equal(len(files()), 3)
		is.Equal(e.attGet(path, f.key).Body, bodies[0])

		// Refusals store nothing.
		e.attUpload(f.key, f.fields("r"), "big.txt", attBytes(65<<10)).expect(413)
		e.attUpload(f.key, f.fields("r", "partitionCode", "nope"), "a.txt", []byte("x")).expect(400)
		e.attUpload(f.key, f.fields("r", "tenantId", store.NewID()), "a.txt", []byte("x")).expect(403)
		is.Equal(len(files()), 3)

		// A delete removes the file and its resized images.
		e.do("DELETE", attBase+"/library/"+id, f.key, nil).expect(200)
		e.do("DELETE", attBase+"?id="+txt, f.key, nil).expect(200)
		is.Equal(files(), []string(nil))
		attNotFound(t, "deleted", e.attGet(attBase+"/file/"+id, f.key))
	})
}
