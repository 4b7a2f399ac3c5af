package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The attachment benchmarks run over real HTTP (httptest.NewServer, so
// the multipart body crosses a socket) on SQLite with files on disk,
// each beside a bare net/http handler doing the same byte work in the
// same run:
//
//   - upload: a 1 MB multipart upload, against a handler that streams the
//     file part to a new file on disk (fsync'd, as FSBlobs does);
//   - warm thumbnail: a cached 320×320 image, against http.ServeFile of
//     the same bytes.

// benchFilesKit is a Kit storing files in dir, with the built-in identity
// and a super-admin key, served over a loopback HTTP server.
func benchFilesKit(b *testing.B, dir string) (srv *httptest.Server, key string) {
	b.Helper()
	ctx := b.Context()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	kit, err := full.Open(ctx, full.Config{DB: storetest.SQLite(b), SecretKey: secret, FilesDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = kit.Close(context.Background()) })
	auth := kit.Identity
	key = "tk_" + randomHex(24)
	if _, err := auth.Bootstrap(ctx, identity.BootstrapInput{APIKey: key}); err != nil {
		b.Fatal(err)
	}
	srv = httptest.NewServer(mustNew(kit, Options{}))
	b.Cleanup(srv.Close)
	return srv, key
}

// benchMultipart is a multipart upload body of a file of size random
// bytes, with the form fields an upload needs.
func benchMultipart(b *testing.B, size int) (body []byte, contentType string) {
	b.Helper()
	data := make([]byte, size)
	_, _ = rand.Read(data)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("entityId", "bench:entity")
	_ = mw.WriteField("recordId", "r-1")
	fw, err := mw.CreateFormFile("file", "payload.bin")
	if err != nil {
		b.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// benchUpload posts body to url b.N times, one request at a time, and
// fails on any other status than 200.
func benchUpload(b *testing.B, url, key string, body []byte, contentType string) {
	b.Helper()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func BenchmarkUpload1MB(b *testing.B) {
	body, contentType := benchMultipart(b, 1<<20)
	b.Run("bare-net-http-stream-to-disk", func(b *testing.B) {
		dir := b.TempDir()
		n := 0
		bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mr, err := r.MultipartReader()
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			for {
				part, err := mr.NextPart()
				if err == io.EOF {
					break
				}
				if err != nil {
					http.Error(w, err.Error(), 400)
					return
				}
				if part.FileName() == "" {
					_, _ = io.Copy(io.Discard, part)
					continue
				}
				n++
				f, err := os.Create(filepath.Join(dir, "f"+randomHex(8)))
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				_, err = io.Copy(f, part)
				if err == nil {
					err = f.Sync()
				}
				f.Close()
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true}`))
		}))
		defer bare.Close()
		benchUpload(b, bare.URL, "", body, contentType)
	})
	b.Run("httpapi-upload", func(b *testing.B) {
		srv, key := benchFilesKit(b, b.TempDir())
		benchUpload(b, srv.URL+"/api/attachments", key, body, contentType)
	})
}

// benchJPEG is a 2000×1333 JPEG (quality 90) of gradients.
func benchJPEG(b *testing.B) []byte {
	b.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2000, 1333))
	for y := range 1333 {
		for x := range 2000 {
			img.Set(x, y, color.RGBA{uint8(x / 8), uint8(y / 6), uint8((x + y) / 13), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// benchGet gets url b.N times, one request at a time, and returns the
// last body.
func benchGet(b *testing.B, url, key string) []byte {
	b.Helper()
	b.ReportAllocs()
	var body []byte
	for b.Loop() {
		req, _ := http.NewRequest("GET", url, nil)
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	return body
}

func BenchmarkThumbnail(b *testing.B) {
	photo := benchJPEG(b)
	dir := b.TempDir()
	srv, key := benchFilesKit(b, dir)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("entityId", "bench:entity")
	_ = mw.WriteField("recordId", "r-1")
	fw, _ := mw.CreateFormFile("file", "photo.jpg")
	_, _ = fw.Write(photo)
	_ = mw.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/api/attachments", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var up struct {
		Item struct{ ThumbnailURL string } `json:"item"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&up); err != nil || resp.StatusCode != 200 {
		b.Fatalf("upload: status %d, %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	thumbURL := srv.URL + up.Item.ThumbnailURL

	var thumb []byte
	b.Run("httpapi-warm-320x320", func(b *testing.B) { thumb = benchGet(b, thumbURL, key) })
	b.Run("bare-net-http-servefile", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "thumb.jpg")
		if err := os.WriteFile(path, thumb, 0o600); err != nil {
			b.Fatal(err)
		}
		bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, path) }))
		defer bare.Close()
		benchGet(b, bare.URL, "")
	})
}
