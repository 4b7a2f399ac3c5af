package httpapi

import (
	"bytes"
	"crypto/sha256"
	"strconv"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/s3blobs"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/internal/s3test"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Files kept in S3 (a local versitygw, through a proxy counting what it
// sends): uploads, downloads and deletes work as on disk, and a Range
// request reads about the range from the store, not the whole object.
func TestAttachmentFilesInS3(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	proxy := srv.Proxy(t)
	via := srv.Via(proxy)
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		cfg, err := s3blobs.ParseURL(via.URL(via.NewBucket(t), "files"))
		is.NoErr(err)
		cfg.AccessKey, cfg.SecretKey = srv.AccessKey, srv.SecretKey
		blobs, err := s3blobs.New(t.Context(), cfg)
		is.NoErr(err)
		e := attNewEnvConfig(t, db, full.Config{Attachments: attachments.Options{Blobs: blobs, MaxUploadBytes: 32 << 20}})
		f := attSetup(e, "Acme")

		const size = 24 << 20
		data := make([]byte, 0, size)
		for sum := sha256.Sum256([]byte("s3")); len(data) < size; sum = sha256.Sum256(sum[:]) {
			data = append(data, sum[:]...)
		}
		data = data[:size]
		id := f.upload("r", "big.bin", data)["id"].(string)
		path := attBase + "/file/" + id

		// 1 MiB from the middle: at most 2 MiB leave the store.
		const from, n = 10<<20 + 12345, 1 << 20
		proxy.Reset()
		rg := e.attGet(path, f.key, "Range", "bytes="+strconv.Itoa(from)+"-"+strconv.Itoa(from+n-1)).expect(206)
		is.True(bytes.Equal(rg.Body, data[from:from+n]))
		read := proxy.Read()
		t.Logf("a 1 MiB range of a %d MiB file read %d bytes from S3", size>>20, read)
		if read > 2<<20 {
			t.Fatalf("a 1 MiB range read %d bytes from the store, want at most 2 MiB", read)
		}

		// The whole file, and a delete that removes the object.
		is.True(bytes.Equal(e.attGet(path, f.key).expect(200).Body, data))
		e.do("DELETE", attBase+"?id="+id, f.key, nil).expect(200)
		list, err := blobs.List(t.Context(), "")
		is.NoErr(err)
		is.Equal(len(list), 0)
		e.attGet(path, f.key).expect(404)
	})
}
