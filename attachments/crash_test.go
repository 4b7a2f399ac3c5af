package attachments_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/extract"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// crashEnv marks the child process of TestExtractionSurvivesSIGKILL and
// names its working directory; crashTenantEnv names the tenant and
// crashDBEnv the database (empty: SQLite in the directory).
const (
	crashEnv       = "ATTACHMENTS_TEST_CRASH_DIR"
	crashTenantEnv = "ATTACHMENTS_TEST_CRASH_TENANT"
	crashDBEnv     = "ATTACHMENTS_TEST_CRASH_DB"
)

// crashExtract gives the extraction a short limit of its own; the job
// engine runs with its defaults (leases of 5 s), as a server does.
var crashExtract = extract.Limits{Timeout: time.Second}

// blockingOCR writes its marker file, then never returns: the process is
// killed during the extraction.
type blockingOCR struct{ marker string }

func (o blockingOCR) Text(context.Context, io.Reader, string) (string, error) {
	if err := os.WriteFile(o.marker, []byte("extracting"), 0o600); err != nil {
		panic(err)
	}
	select {}
}

// answeringOCR answers text.
type answeringOCR struct{ text string }

func (o answeringOCR) Text(context.Context, io.Reader, string) (string, error) { return o.text, nil }

func crashKit(ctx context.Context, dir, dbURL string, ocr attachments.OCR) (*full.Kit, error) {
	if dbURL == "" {
		dbURL = "sqlite:" + filepath.Join(dir, "kit.db")
	}
	return full.OpenPlain(ctx, full.Config{
		DatabaseURL: dbURL,
		FilesDir:    filepath.Join(dir, "files"),
		Attachments: attachments.Options{OCR: ocr, Extractor: extract.Extractor{Limits: crashExtract},
			ExtractTimeout: crashExtract.Timeout + 30*time.Second},
		Logger: quiet(),
	})
}

// The extraction job survives a crash: a process uploads a PNG (read by
// OCR), starts extracting it and is killed with SIGKILL in the middle;
// another process on the same database and files runs the job again
// within seconds (its lease lapses, 5 s, and a sweep, every second, makes
// it available) and fills the content. On SQLite the other process is a
// restart after the kill; on PostgreSQL it is a second server, running
// before the kill (started once the first is extracting, so that the
// first takes the job).
func TestExtractionSurvivesSIGKILL(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(t, dir, os.Getenv(crashDBEnv), os.Getenv(crashTenantEnv))
		return
	}
	if storetest.Broken() != "" {
		t.Skip("in a broken store's child process")
	}
	if testing.Short() {
		t.Skip("kills a child process and waits for the failover")
	}
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		extractionFailover(t, "", false)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		extractionFailover(t, storetest.IsolatedPostgresURL(t), true)
	})
}

// extractionFailover runs the child, kills it while it extracts and has
// a Kit of this process (started before the kill when running) finish the
// job; it logs the time from the kill to the content.
func extractionFailover(t *testing.T, dbURL string, running bool) {
	dir := t.TempDir()
	tenantID := store.NewID()
	marker := filepath.Join(dir, "marker")

	cmd := exec.Command(os.Args[0], "-test.run=^TestExtractionSurvivesSIGKILL$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir, crashTenantEnv+"="+tenantID, crashDBEnv+"="+dbURL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
	})
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case err := <-exited:
			t.Fatalf("the child ended before extracting (%v):\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("the child never started extracting:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
			if _, err := os.Stat(marker); err == nil {
				break wait
			}
		}
	}
	ctx := store.WithScope(t.Context(), store.Scope{TenantID: tenantID})
	// The other process: the same database and files, an OCR that answers.
	open := func() *full.Kit {
		kit, err := crashKit(t.Context(), dir, dbURL, answeringOCR{"recovered text"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = kit.Close(stop)
		})
		if err := kit.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		return kit
	}
	var kit *full.Kit
	if running {
		kit = open()
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	killed := time.Now()
	var exit *exec.ExitError
	if err := <-exited; !errors.As(err, &exit) || exit.Success() {
		t.Fatalf("the child was not killed: %v\n%s", err, out.String())
	}
	if !running {
		kit = open()
	}
	id, err := os.ReadFile(filepath.Join(dir, "id"))
	if err != nil {
		t.Fatalf("the child left no attachment id: %v\n%s", err, out.String())
	}
	for limit := killed.Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		a, _, err := kit.Attachments.Get(ctx, string(id))
		if err != nil {
			t.Fatal(err)
		}
		if a.Content != nil {
			if *a.Content != "recovered text" || a.ExtractionStatus != attachments.ExtractionDone {
				t.Fatalf("content %q (%s), want the other process's OCR text, done", *a.Content, a.ExtractionStatus)
			}
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("the extraction was not run again within %s of the kill", time.Since(killed).Round(time.Second))
		}
	}
	t.Logf("the content was filled %s after the kill (%s)", time.Since(killed).Round(10*time.Millisecond), t.Name())
}

// crashChild is the process to kill: it uploads a PNG, starts the Kit and
// waits while its OCR blocks.
func crashChild(t *testing.T, dir, dbURL, tenantID string) {
	ctx := store.WithScope(context.Background(), store.Scope{TenantID: tenantID, OrganizationID: store.NewID()})
	kit, err := crashKit(ctx, dir, dbURL, blockingOCR{marker: filepath.Join(dir, "marker")})
	if err != nil {
		t.Fatal(err)
	}
	a, err := kit.Attachments.Upload(ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "scan.png",
		File: bytes.NewReader(pngImage(t, 16, 16))})
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "id.tmp")
	if err := os.WriteFile(tmp, []byte(a.ID), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "id")); err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Minute)
	t.Fatal("not killed")
}
