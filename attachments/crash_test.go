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

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/extract"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// crashEnv marks the child process of TestExtractionSurvivesSIGKILL and
// names its working directory; crashTenantEnv names the tenant.
const (
	crashEnv       = "ATTACHMENTS_TEST_CRASH_DIR"
	crashTenantEnv = "ATTACHMENTS_TEST_CRASH_TENANT"
)

// crashJobs are both processes' job limits: short, so that a job the
// killed process held is taken for stuck within seconds. The extraction
// job has a time limit of its own, though (Options.ExtractLimits.Timeout
// plus 30 s), and River rescues no job before its limit has passed:
// crashExtract makes that 31 s.
var (
	crashJobs    = jobs.Config{RescueStuckAfter: 3 * time.Second, JobTimeout: 2 * time.Second}
	crashExtract = extract.Limits{Timeout: time.Second}
)

// crashJobLimit is the extraction job's time limit in these processes.
const crashJobLimit = 31 * time.Second

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

func crashKit(ctx context.Context, dir string, ocr attachments.OCR) (*tenantkit.Kit, error) {
	return tenantkit.Open(ctx, tenantkit.Config{
		DatabaseURL: "sqlite:" + filepath.Join(dir, "kit.db"),
		FilesDir:    filepath.Join(dir, "files"),
		Jobs:        crashJobs,
		Attachments: attachments.Options{OCR: ocr, ExtractLimits: crashExtract},
		Logger:      quiet(),
	})
}

// The extraction job survives a crash: a process uploads a PNG (read by
// OCR), starts extracting it and is killed with SIGKILL in the middle; a
// new process on the same database and files rescues the job and fills
// the content.
func TestExtractionSurvivesSIGKILL(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(t, dir, os.Getenv(crashTenantEnv))
		return
	}
	if storetest.Broken() != "" {
		t.Skip("in a broken store's child process")
	}
	if testing.Short() {
		t.Skip("kills a child process and waits for the rescue")
	}
	t.Parallel()
	dir := t.TempDir()
	tenantID := store.NewID()
	marker := filepath.Join(dir, "marker")

	cmd := exec.Command(os.Args[0], "-test.run=^TestExtractionSurvivesSIGKILL$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir, crashTenantEnv+"="+tenantID)
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
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := <-exited; !errors.As(err, &exit) || exit.Success() {
		t.Fatalf("the child was not killed: %v\n%s", err, out.String())
	}
	id, err := os.ReadFile(filepath.Join(dir, "id"))
	if err != nil {
		t.Fatalf("the child left no attachment id: %v\n%s", err, out.String())
	}
	st, err := os.Stat(marker)
	if err != nil {
		t.Fatal(err)
	}
	attempted := st.ModTime() // the killed attempt began just before

	// A new process: the same database and files, an OCR that answers.
	ctx := store.WithScope(t.Context(), store.Scope{TenantID: tenantID})
	kit, err := crashKit(t.Context(), dir, answeringOCR{"recovered text"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = kit.Close(stop)
	})
	a, _, err := kit.Attachments.Get(ctx, string(id))
	if err != nil {
		t.Fatal(err)
	}
	if a.Content != nil {
		t.Fatalf("content before the rescue: %q", *a.Content)
	}
	// The new process starts once the killed attempt has outlived the
	// job's time limit, the soonest River rescues it (and by then the dead
	// process's leadership, 15 s, has lapsed): its rescuer runs at once.
	// Started earlier, it would rescue the job at its rescuer's next round,
	// 30 s later.
	time.Sleep(time.Until(attempted.Add(crashJobLimit + time.Second)))
	if err := kit.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for limit := start.Add(45 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		a, _, err := kit.Attachments.Get(ctx, string(id))
		if err != nil {
			t.Fatal(err)
		}
		if a.Content != nil {
			if *a.Content != "recovered text" {
				t.Fatalf("content %q, want the new process's OCR text", *a.Content)
			}
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("the extraction was not rescued within %s", time.Since(start).Round(time.Second))
		}
	}
	t.Logf("rescued after %s", time.Since(start).Round(100*time.Millisecond))
}

// crashChild is the process to kill: it uploads a PNG, starts the Kit and
// waits while its OCR blocks.
func crashChild(t *testing.T, dir, tenantID string) {
	ctx := store.WithScope(context.Background(), store.Scope{TenantID: tenantID, OrganizationID: store.NewID()})
	kit, err := crashKit(ctx, dir, blockingOCR{marker: filepath.Join(dir, "marker")})
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
