package store_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// A time computed by an expression scans into NullTime on both engines
// (SQLite hands it over as text); NULL is not Valid.
func TestNullTime(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		tenant := store.NewID()
		t1 := db.Now().Add(-time.Hour)
		t2 := t1.Add(90 * time.Minute)
		for _, at := range []time.Time{t2, t1} {
			_, err := db.Exec(ctx, `INSERT INTO store_events (id, type, tenant_id, data, occurred_at) VALUES ($1, 'test', $2, '{}', $3)`,
				store.NewID(), tenant, at)
			is.NoErr(err)
		}
		var lo, hi, none store.NullTime
		is.NoErr(db.QueryRow(ctx, `SELECT MIN(occurred_at), MAX(occurred_at), MIN(CASE WHEN type = 'other' THEN occurred_at END)
			FROM store_events WHERE tenant_id = $1`, tenant).Scan(&lo, &hi, &none))
		is.True(lo.Valid && lo.Time.Equal(t1) && lo.Time.Location() == time.UTC)
		is.True(hi.Valid && hi.Time.Equal(t2))
		is.True(!none.Valid)
	})
}
