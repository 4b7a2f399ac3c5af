package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/s3test"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// A FILES_URL (or -copy-files-to) the server cannot use fails the start
// with a usage error naming it.
func TestFilesURLErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		args    []string
		env     map[string]string
		wantErr string
	}{
		"unknown scheme":     {nil, map[string]string{"FILES_URL": "ftp://host/files"}, "FILES_URL"},
		"empty file://":      {nil, map[string]string{"FILES_URL": "file://"}, "FILES_URL"},
		"postgres on SQLite": {nil, map[string]string{"FILES_URL": "postgres"}, "FILES_URL=postgres"},
		"no bucket":          {nil, map[string]string{"FILES_URL": "s3://"}, "FILES_URL"},
		"bad endpoint":       {nil, map[string]string{"FILES_URL": "s3://b/p?endpoint=ftp://host"}, "FILES_URL"},
		"unknown parameter":  {nil, map[string]string{"FILES_URL": "s3://b/p?bucketStyle=x"}, "FILES_URL"},
		"bad pathStyle":      {nil, map[string]string{"FILES_URL": "s3://b/p?pathStyle=maybe"}, "FILES_URL"},
		"secrets in the URL": {nil, map[string]string{"FILES_URL": "s3://key:secret@b/p"}, "FILES_URL"},
		"half credentials":   {nil, map[string]string{"FILES_URL": "s3://b/p", "AWS_ACCESS_KEY_ID": "AKIA"}, "AWS_SECRET_ACCESS_KEY"},
		"bad copy target":    {[]string{"server", "-copy-files-to", "postgres"}, map[string]string{}, "-copy-files-to=postgres"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.env["DATA_DIR"] = t.TempDir()
			tc.env["ADDR"] = "127.0.0.1:0"
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := run(ctx, tc.args, getenv(tc.env), &bytes.Buffer{}, &bytes.Buffer{})
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("run returned %v, want a usage error mentioning %s", err, tc.wantErr)
			}
		})
	}
}

// uploadFile uploads data as fileName to a record of the default tenant
// and returns the attachment's id.
func (s *server) uploadFile(t *testing.T, fileName string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("entityId", "files.doc")
	_ = w.WriteField("recordId", "r1")
	fw, err := w.CreateFormFile("file", fileName)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = w.Close()
	req, err := http.NewRequest("POST", s.base+"/api/attachments", &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-Api-Key", bootstrapKey)
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Item struct {
			ID string `json:"id"`
		} `json:"item"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil || out.Item.ID == "" {
		t.Fatalf("upload %s: %d %s", fileName, resp.StatusCode, raw)
	}
	return out.Item.ID
}

// download returns the file's bytes (200 expected).
func (s *server) download(t *testing.T, id string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", s.base+"/api/attachments/file/"+id, nil)
	req.Header.Set("X-Api-Key", bootstrapKey)
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET file %s: %d, %v", id, resp.StatusCode, err)
	}
	return data
}

func testData(seed string, n int) []byte {
	out := make([]byte, 0, n+32)
	for sum := sha256.Sum256([]byte(seed)); len(out) < n; sum = sha256.Sum256(sum[:]) {
		out = append(out, sum[:]...)
	}
	return out[:n]
}

// runCopy runs the server with -copy-files-to to and returns its stdout.
func runCopy(t *testing.T, env map[string]string, to string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"server", "-copy-files-to", to}, getenv(env), &stdout, &stderr); err != nil {
		t.Fatalf("-copy-files-to %s: %v\n%s", to, err, stderr.String())
	}
	return stdout.String()
}

// Files uploaded to a server with DATA_DIR's files (warned about on
// PostgreSQL) are copied by -copy-files-to into PostgreSQL and into S3
// (a second run copies nothing), and a server with FILES_URL=postgres or
// s3://… then serves them, keeping nothing in DATA_DIR/files.
func TestCopyFilesTo(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	env := map[string]string{"DATA_DIR": dataDir, "DATABASE_URL": storetest.IsolatedPostgresURL(t), "BOOTSTRAP_API_KEY": bootstrapKey}
	s := start(t, env)
	if !strings.Contains(s.stderr.String(), "need FILES_URL=postgres or FILES_URL=s3://") {
		t.Errorf("no warning that files on this machine do not serve several processes:\n%s", s.stderr)
	}
	small, large := testData("small", 1000), testData("large", 3<<20+7) // several chunks
	ids := []string{s.uploadFile(t, "small.bin", small), s.uploadFile(t, "large.bin", large)}
	s.stop(t)

	out := runCopy(t, env, "postgres")
	if !strings.Contains(out, "copied 2 files (3146735 bytes)") {
		t.Fatalf("-copy-files-to postgres printed %q, want 2 files copied", out)
	}
	if out := runCopy(t, env, "postgres"); !strings.Contains(out, "copied 0 files (0 bytes)") || !strings.Contains(out, "2 already there") {
		t.Fatalf("a second -copy-files-to postgres printed %q, want nothing copied", out)
	}

	srv := s3test.Start(t)
	s3URL := srv.URL(srv.NewBucket(t), "files")
	env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = srv.AccessKey, srv.SecretKey
	if out := runCopy(t, env, s3URL); !strings.Contains(out, "copied 2 files (3146735 bytes)") {
		t.Fatalf("-copy-files-to s3 printed %q, want 2 files copied", out)
	}

	// Without the directory's files, each store serves them.
	if err := os.RemoveAll(filepath.Join(dataDir, "files")); err != nil {
		t.Fatal(err)
	}
	for _, files := range []string{"postgres", s3URL} {
		env["FILES_URL"] = files
		s := start(t, env)
		if strings.Contains(s.stderr.String(), "need FILES_URL=postgres") {
			t.Errorf("FILES_URL=%s: warned about files on this machine", files)
		}
		if !bytes.Equal(s.download(t, ids[0]), small) || !bytes.Equal(s.download(t, ids[1]), large) {
			t.Fatalf("FILES_URL=%s: the copied files differ", files)
		}
		newID := s.uploadFile(t, "new.txt", []byte("kept in "+files))
		if string(s.download(t, newID)) != "kept in "+files {
			t.Fatalf("FILES_URL=%s: a new upload reads back differently", files)
		}
		s.stop(t)
		if entries, _ := os.ReadDir(filepath.Join(dataDir, "files")); len(entries) != 0 {
			t.Fatalf("FILES_URL=%s: DATA_DIR/files holds %d entries", files, len(entries))
		}
	}

	// The files are rows of the database.
	db, err := store.Open(t.Context(), env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM attachment_blobs`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("attachment_blobs rows: %d, %v; want 3 (two copied, one uploaded)", n, err)
	}
}

// Several servers on one PostgreSQL database agree on where files are: a
// second server whose files would be elsewhere than a running one's fails
// its start naming FILES_URL (another machine's directory, or a shared
// store beside a directory); processes sharing one directory of one
// machine, or one shared store, start side by side.
func TestFilesClaimAcrossServers(t *testing.T) {
	t.Parallel()
	dbURL := storetest.IsolatedPostgresURL(t)
	env := func(dataDir, files string) map[string]string {
		return map[string]string{"DATA_DIR": dataDir, "DATABASE_URL": dbURL, "BOOTSTRAP_API_KEY": bootstrapKey, "FILES_URL": files,
			"ADDR": "127.0.0.1:0"}
	}
	const want = "FILES_URL: another server runs on this database with its files elsewhere than this one's"
	refused := func(dataDir, files string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var stdout, stderr bytes.Buffer
		err := run(ctx, []string{"server"}, getenv(env(dataDir, files)), &stdout, &stderr)
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), want) {
			t.Errorf("DATA_DIR %s, FILES_URL=%q beside a server with its files elsewhere: %v, want a refused setting saying %q", dataDir, files, err, want)
		}
	}
	dir := t.TempDir()
	onDisk := start(t, env(dir, ""))
	refused(t.TempDir(), "")         // another directory: another machine's, in effect
	refused(t.TempDir(), "postgres") // a shared store beside a directory
	again := start(t, env(dir, ""))  // the same directory: a restart's new process beside the old
	id := onDisk.uploadFile(t, "same-dir.txt", []byte("one directory"))
	if got := string(again.download(t, id)); got != "one directory" {
		t.Errorf("a file uploaded through one process reads %q through the other on the same directory", got)
	}
	again.stop(t)
	onDisk.stop(t)

	first := start(t, env(t.TempDir(), "postgres"))
	second := start(t, env(t.TempDir(), "postgres"))
	id = first.uploadFile(t, "shared.txt", []byte("one store"))
	if got := string(second.download(t, id)); got != "one store" {
		t.Errorf("a file uploaded through the first server reads %q through the second", got)
	}
	refused(t.TempDir(), "")
	second.stop(t)
	first.stop(t)
}
