//go:build !tenantkit_nopostgres

package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/pgproxy"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestCommitOutcomeUnknown: when the server received a COMMIT but its
// answer never came back, Tx fails with ErrCommitUnknown (here the
// transaction did commit, as the server saw it), once, without running
// its function again. A commit the server refused, and one never sent
// because the context had ended, are failures of known outcome.
func TestCommitOutcomeUnknown(t *testing.T) {
	t.Parallel()
	direct, db, proxy := pgproxy.Databases(t, widgets)
	ctx, sc := storetest.NewScope(t)
	count := func(name string) int {
		t.Helper()
		var n int
		if err := direct.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1 AND name = $2`, sc.TenantID, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert := func(ctx context.Context, tx *store.Tx, name string) error {
		_, err := tx.Exec(ctx, `INSERT INTO widgets (tenant_id, id, name, created_at) VALUES ($1, $2, $3, $4)`,
			sc.TenantID, store.NewID(), name, tx.Now())
		return err
	}

	runs := 0
	err := db.Tx(ctx, func(tx *store.Tx) error {
		runs++
		proxy.LoseNextCommitAnswer()
		return insert(ctx, tx, "lost answer")
	})
	if !errors.Is(err, store.ErrCommitUnknown) {
		t.Errorf("COMMIT sent, its answer lost: %v, want ErrCommitUnknown", err)
	}
	if proxy.Armed() {
		t.Fatal("the proxy never saw the COMMIT")
	}
	if runs != 1 || count("lost answer") != 1 {
		t.Errorf("COMMIT sent, its answer lost: function ran %d times, %d rows committed; want 1 and 1", runs, count("lost answer"))
	}

	// The server refuses the COMMIT (a deferred unique constraint).
	err = db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE deferred (x int UNIQUE DEFERRABLE INITIALLY DEFERRED) ON COMMIT DROP`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO deferred VALUES (1), (1)`); err != nil {
			return err
		}
		return insert(ctx, tx, "refused")
	})
	if !errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrCommitUnknown) {
		t.Errorf("COMMIT refused by the server: %v, want ErrConflict, not ErrCommitUnknown", err)
	}
	if n := count("refused"); n != 0 {
		t.Errorf("COMMIT refused: %d rows committed", n)
	}

	// The context ends before the COMMIT is sent.
	cctx, cancel := context.WithCancel(ctx)
	err = db.Tx(cctx, func(tx *store.Tx) error {
		defer cancel()
		return insert(cctx, tx, "cancelled")
	})
	if err == nil || errors.Is(err, store.ErrCommitUnknown) {
		t.Errorf("context ended before COMMIT: %v, want a failure of known outcome", err)
	}
	if n := count("cancelled"); n != 0 {
		t.Errorf("context ended before COMMIT: %d rows committed", n)
	}
}

// TestGroupCommitUnknownWritesOnce: a group-committed batch whose COMMIT
// (or single statement, outside a transaction) was sent and never
// answered is not written again item by item, as a failed batch is: it
// may have committed (here it did), and each caller gets
// ErrCommitUnknown with its item written once.
func TestGroupCommitUnknownWritesOnce(t *testing.T) {
	t.Parallel()
	direct, db, proxy := pgproxy.Databases(t, widgets)
	ctx, sc := storetest.NewScope(t)
	insert := func(ctx context.Context, q store.Querier, names []string) error {
		for _, name := range names {
			if _, err := q.Exec(ctx, `INSERT INTO widgets (tenant_id, id, name, created_at) VALUES ($1, $2, $3, $4)`,
				sc.TenantID, store.NewID(), name, q.Now()); err != nil {
				return err
			}
		}
		return nil
	}
	for _, single := range []bool{false, true} {
		prefix := map[bool]string{false: "tx", true: "single"}[single]
		release, held := make(chan struct{}), make(chan struct{})
		g := store.NewGroup(db, func(ctx context.Context, tx *store.Tx, names []string) error {
			if names[0] == "hold" {
				close(held)
				<-release
				return nil
			}
			if len(names) > 1 {
				proxy.LoseNextCommitAnswer()
			}
			return insert(ctx, tx, names)
		})
		if single {
			g.SetSingleStatement(func(names []string) func(ctx context.Context, q store.Querier) error {
				if names[0] == "hold" {
					return nil
				}
				return func(ctx context.Context, q store.Querier) error {
					if len(names) > 1 {
						// The last INSERT's answer is lost; the ones before
						// it committed as they returned.
						proxy.LoseNextAnswer(names[len(names)-1])
					}
					return insert(ctx, q, names)
				}
			})
		}
		g.SetRunners(1)
		go func() { _ = g.Do("hold") }()
		const writes = 5
		errs := queuedWrites(held, release, writes, func(i int) error { return g.Do(fmt.Sprint(prefix, "-", i)) })
		if proxy.Armed() {
			t.Fatalf("%s: the writes did not form one batch (the proxy never saw the armed message)", prefix)
		}
		for i, err := range errs {
			if !errors.Is(err, store.ErrCommitUnknown) {
				t.Errorf("%s write %d: %v, want ErrCommitUnknown", prefix, i, err)
			}
		}
		var n, distinct int
		if err := direct.QueryRow(ctx, `SELECT count(*), count(DISTINCT name) FROM widgets WHERE tenant_id = $1 AND name LIKE $2`,
			sc.TenantID, prefix+"-%").Scan(&n, &distinct); err != nil {
			t.Fatal(err)
		}
		if n != writes || distinct != writes {
			t.Errorf("%s: %d widgets (%d names) after a batch of %d whose answer was lost, want each once", prefix, n, distinct, writes)
		}
	}
}
