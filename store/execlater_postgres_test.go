//go:build !tenantkit_nopostgres

package store_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestExecLaterOneRoundTrip: on PostgreSQL, statements queued with
// ExecLater go to the server with the next statement, in one round trip:
// a transaction of two queued INSERTs and a read costs BEGIN, one batch
// and COMMIT. So do an emit of several events (queued) and the read
// after it.
func TestExecLaterOneRoundTrip(t *testing.T) {
	t.Parallel()
	trips := &storetest.RoundTrips{}
	url := storetest.IsolatedPostgresURL(t)
	db := storetest.PostgresTraced(t, url, trips, widgets)
	ctx, sc := storetest.NewScope(t)
	insert := `INSERT INTO widgets (tenant_id, id, name, created_at) VALUES ($1, $2, $3, $4)`
	var n int
	run := func(fn func(tx *store.Tx) error) int64 {
		t.Helper()
		before := trips.Trips.Load()
		if err := db.Tx(ctx, fn); err != nil {
			t.Fatal(err)
		}
		return trips.Trips.Load() - before
	}
	got := run(func(tx *store.Tx) error {
		if err := tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "a", tx.Now()); err != nil {
			return err
		}
		if err := tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "b", tx.Now()); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n)
	})
	if n != 2 || got != 3 {
		t.Errorf("queued INSERTs and a read: %d rows read in %d round trips, want 2 in 3 (BEGIN, one batch, COMMIT)", n, got)
	}
	got = run(func(tx *store.Tx) error {
		if _, err := tx.EmitMany(ctx, []store.Event{{Type: "test.widget.made", TenantID: sc.TenantID},
			{Type: "test.widget.made", TenantID: sc.TenantID}}); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM store_events WHERE tenant_id = $1`, sc.TenantID).Scan(&n)
	})
	if n != 2 || got != 3 {
		t.Errorf("an emit of two events and a read: %d events read in %d round trips, want 2 in 3", n, got)
	}
}
