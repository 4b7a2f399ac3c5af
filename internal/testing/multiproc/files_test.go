package multiproc_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/s3blobs"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/internal/s3test"
	"github.com/tenantkit/tenantkit/internal/testing/multiproc"
)

// TestFilesAcrossServers runs three servers, each with a files directory
// of its own (separate machines), over one shared file store: the
// database (FilesInDatabase) and an S3 bucket (a real S3 server,
// versitygw; skipped, saying so, without it). A file uploaded through
// any server is delivered by every other (the file, a ranged read, a
// conditional 304, a thumbnail, the public URL without a key), its text
// extraction completes whichever server runs the job, and its delete
// through another server removes its bytes from the shared store.
func TestFilesAcrossServers(t *testing.T) {
	t.Run("database", func(t *testing.T) {
		c := multiproc.Start(t, multiproc.Options{Servers: 3, Start: true, Config: full.Config{FilesInDatabase: true}})
		filesAcross(t, c)
	})
	t.Run("s3", func(t *testing.T) {
		s3 := s3test.Start(t)
		bucket := s3.NewBucket(t)
		c := multiproc.Start(t, multiproc.Options{Servers: 3, Start: true,
			Blobs: func(t testing.TB, _ int) attachments.Blobs {
				b, err := s3blobs.New(t.Context(), s3blobs.Config{Bucket: bucket, Prefix: "files", Endpoint: s3.Endpoint,
					Insecure: true, Region: s3.Region, PathStyle: true, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}})
		filesAcross(t, c)
	})
}

var attachmentFeaturesAll = []string{"attachments.*", "entities.*"}

func filesAcross(t *testing.T, c *multiproc.Cluster) {
	tn := c.NewTenant(t, "Files "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn, attachmentFeaturesAll...)
	s0 := c.Servers[0]
	s0.Do(t, "POST", "/api/attachments/partitions", key, map[string]any{"code": "mp_files", "title": "Shared", "isPublic": true}).Expect(t, 201)
	text := bytes.Repeat([]byte("shared words across servers\n"), 200)
	pic := testPNG(t, 64, 48)

	for i, up := range c.Servers {
		txt := upload(t, up, key, fmt.Sprintf("note-%d.txt", i), text)
		img := upload(t, up, key, fmt.Sprintf("pic-%d.png", i), pic)
		for _, other := range c.Servers {
			if other == up {
				continue
			}
			who := fmt.Sprintf("uploaded through %s, read through %s", up.Name, other.Name)
			// The file, whole, with a key and without (public partition).
			for _, k := range []string{key, ""} {
				r := other.Do(t, "GET", "/api/attachments/file/"+txt, k, nil)
				if r.Status != 200 || !bytes.Equal(r.Body, text) {
					t.Errorf("%s: file (key %v): %d, %d bytes", who, k != "", r.Status, len(r.Body))
				}
			}
			// A range, and a conditional request.
			r := other.DoWith(t, "GET", "/api/attachments/file/"+txt, key, nil, http.Header{"Range": {"bytes=7-11"}})
			if r.Status != 206 || string(r.Body) != string(text[7:12]) {
				t.Errorf("%s: range: %d %q", who, r.Status, r.Body)
			}
			full := other.Do(t, "GET", "/api/attachments/file/"+img, key, nil)
			if full.Status != 200 || !bytes.Equal(full.Body, pic) {
				t.Errorf("%s: image file: %d", who, full.Status)
			}
			if etag := full.Header.Get("ETag"); etag != "" {
				if r := other.DoWith(t, "GET", "/api/attachments/file/"+img, key, nil, http.Header{"If-None-Match": {etag}}); r.Status != 304 {
					t.Errorf("%s: If-None-Match: %d, want 304", who, r.Status)
				}
			} else if lm := full.Header.Get("Last-Modified"); lm != "" {
				if r := other.DoWith(t, "GET", "/api/attachments/file/"+img, key, nil, http.Header{"If-Modified-Since": {lm}}); r.Status != 304 {
					t.Errorf("%s: If-Modified-Since: %d, want 304", who, r.Status)
				}
			} else {
				t.Errorf("%s: the file has neither ETag nor Last-Modified", who)
			}
			// A thumbnail, made by whichever server is asked, public.
			th := other.Do(t, "GET", "/api/attachments/image/"+img+"?width=32&height=32", "", nil)
			if th.Status != 200 || th.Header.Get("Content-Type") == "" {
				t.Errorf("%s: thumbnail: %d %s", who, th.Status, th.Header.Get("Content-Type"))
			} else if cfg, _, err := image.DecodeConfig(bytes.NewReader(th.Body)); err != nil || cfg.Width != 32 || cfg.Height != 32 {
				t.Errorf("%s: thumbnail is %v (%v), want 32×32", who, cfg, err)
			}
		}
		// Extraction completes, whichever server ran its job.
		deadline := time.Now().Add(20 * time.Second)
		for {
			item := c.Servers[(i+1)%len(c.Servers)].Do(t, "GET", "/api/attachments/library/"+txt, key, nil).Expect(t, 200).JSON(t)
			if content, _ := item["item"].(map[string]any)["content"].(string); content != "" {
				if !bytes.Contains([]byte(content), []byte("shared words")) {
					t.Errorf("upload through %s: extracted %q", up.Name, content[:min(len(content), 80)])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("upload through %s: no extracted content within 20 s: %v", up.Name, item)
			}
			time.Sleep(25 * time.Millisecond)
		}
		// Deleted through the next server: gone from every server, and its
		// bytes from the shared store.
		del := c.Servers[(i+1)%len(c.Servers)]
		for _, id := range []string{txt, img} {
			del.Do(t, "DELETE", "/api/attachments/library/"+id, key, nil).Expect(t, 200)
			for _, s := range c.Servers {
				if r := s.Do(t, "GET", "/api/attachments/file/"+id, key, nil); r.Status != 404 {
					t.Errorf("deleted through %s, the file through %s: %d, want 404", del.Name, s.Name, r.Status)
				}
			}
		}
		for _, id := range []string{txt, img} {
			if keys := storedKeys(t, c.Servers[i], tn.ID, id); len(keys) != 0 {
				t.Errorf("upload through %s deleted through %s: the shared store still holds %v", up.Name, del.Name, keys)
			}
		}
	}
}

// storedKeys lists the keys of the shared store that belong to the
// attachment (its file and its stored sizes).
func storedKeys(t *testing.T, s *multiproc.Server, tenantID, id string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	infos, err := s.Kit.Attachments.Blobs().List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, info := range infos {
		if strings.Contains(info.Key, id) {
			keys = append(keys, info.Key)
		}
	}
	return keys
}

func upload(t *testing.T, s *multiproc.Server, key, name string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range map[string]string{"entityId": "mp.files", "recordId": "r-" + multiproc.RandomHex(3), "partitionCode": "mp_files"} {
		_ = w.WriteField(k, v)
	}
	fw, _ := w.CreateFormFile("file", name)
	_, _ = fw.Write(data)
	_ = w.Close()
	return s.DoWith(t, "POST", "/api/attachments", key, body.Bytes(), http.Header{"Content-Type": {w.FormDataContentType()}}).
		Expect(t, 200).JSON(t)["item"].(map[string]any)["id"].(string)
}

func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{uint8(x * 4), uint8(y * 5), 90, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
