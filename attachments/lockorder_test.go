package attachments_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// retryCounter is a slog handler counting the store's transaction
// retries whose error names a deadlock.
type retryCounter struct{ deadlocks atomic.Int64 }

func (*retryCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *retryCounter) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" && strings.Contains(a.Value.String(), "deadlock") {
			c.deadlocks.Add(1)
		}
		return true
	})
	return nil
}
func (c *retryCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *retryCounter) WithGroup(string) slog.Handler      { return c }

// Uploads and deletes of one tenant take the tenant's usage row and its
// count rows in the same order, so that on PostgreSQL, where they run at
// once, they never deadlock (the store would retry one, paying its whole
// transaction again). A delete took them the other way round until
// 2026-11-29: a 30-minute soak saw six deadlocks.
func TestUploadsAndDeletesTakeLocksInOneOrder(t *testing.T) {
	t.Parallel()
	retries := &retryCounter{}
	db, err := store.Open(t.Context(), storetest.IsolatedPostgresURL(t), &store.Options{Logger: slog.New(retries)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(t.Context(), attachments.Migrations); err != nil {
		t.Fatal(err)
	}
	svc := bareService(db, attachments.Options{Blobs: attachments.NewMemBlobs()})
	tn := newTenant(t)
	upload(t, svc, tn.ctx, "R0", "first.txt", []byte("first"), nil) // the usage and count rows exist

	const workers, rounds = 8, 15
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				a, err := svc.Upload(tn.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1",
					FileName: fmt.Sprintf("f%d-%d.txt", w, i), File: bytes.NewReader([]byte("some bytes"))})
				if err != nil {
					t.Errorf("Upload: %v", err)
					return
				}
				if err := svc.Delete(tn.ctx, a.ID); err != nil {
					t.Errorf("Delete: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := retries.deadlocks.Load(); n != 0 {
		t.Errorf("%d transactions were retried after a deadlock, want 0", n)
	}
}
