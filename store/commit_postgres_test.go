//go:build !tenantkit_nopostgres

package store_test

import (
	"context"
	"errors"
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
	url := storetest.IsolatedPostgresURL(t)
	direct, err := store.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if err := direct.Migrate(t.Context(), widgets); err != nil {
		t.Fatal(err)
	}
	proxy := pgproxy.New(t, url)
	db, err := store.Open(t.Context(), proxy.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
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
	err = db.Tx(ctx, func(tx *store.Tx) error {
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
