package store_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Two transactions lock the same two rows in opposite orders. PostgreSQL
// aborts one with a deadlock (40P01); Tx must classify it as transient and
// run that transaction again, so both succeed. Its retry warning names
// the relation the two met on (and which process waited for which), so
// that a deadlock in service says which tables to look at.
func TestTxRetriesPostgresDeadlock(t *testing.T) {
	t.Parallel()
	var logs logbuf.Buffer
	db, err := store.Open(t.Context(), storetest.IsolatedPostgresURL(t), &store.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(t.Context(), widgets); err != nil {
		t.Fatal(err)
	}
	ctx, sc := storetest.NewScope(t)
	a, err := insertWidget(ctx, db, sc, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := insertWidget(ctx, db, sc, "b", nil)
	if err != nil {
		t.Fatal(err)
	}

	var firstLocked sync.WaitGroup
	firstLocked.Add(2)
	lockBoth := func(first, second string) error {
		once := sync.Once{}
		return db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE widgets SET note = 'x' WHERE tenant_id = $1 AND id = $2`, sc.TenantID, first); err != nil {
				return err
			}
			once.Do(func() {
				firstLocked.Done()
				firstLocked.Wait() // both hold their first row before taking the second
			})
			time.Sleep(10 * time.Millisecond)
			_, err := tx.Exec(ctx, `UPDATE widgets SET note = 'y' WHERE tenant_id = $1 AND id = $2`, sc.TenantID, second)
			return err
		})
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = lockBoth(a, b) })
	wg.Go(func() { errs[1] = lockBoth(b, a) })
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("transaction %d: %v", i, err)
		}
	}
	out := logs.String()
	if !strings.Contains(out, "store: transaction conflict, retrying") || !strings.Contains(out, "SQLSTATE 40P01") {
		t.Fatalf("no retry warning for the deadlock in the log:\n%s", out)
	}
	for _, want := range []string{`in relation \"widgets\"`, "blocked by process"} {
		if !strings.Contains(out, want) {
			t.Errorf("the retry warning does not say %q:\n%s", want, out)
		}
	}
}
