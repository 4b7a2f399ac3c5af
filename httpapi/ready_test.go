package httpapi

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestReady: GET /api/ready is 503 with its reason while a migration is
// pending (another process has not finished, or an older one ran) and
// while the job engine does not run, 200 once both hold, 503 again after
// Close; /api/health stays 200 throughout.
func TestReady(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		e := newTestEnv(t, db)
		ready := func(want int, reason string) {
			t.Helper()
			body := e.do("GET", "/api/ready", "", nil).expect(want).JSON()
			if want == 200 {
				is.Equal(body["status"], "ready")
				return
			}
			is.Equal(body["status"], "unavailable")
			is.Equal(body["reason"], reason)
		}

		// One of the Kit's migrations is not applied.
		var name, checksum string
		var version int
		is.NoErr(db.QueryRow(ctx, `SELECT version, name, checksum FROM store_migrations WHERE line = 'payments'
			ORDER BY version DESC LIMIT 1`).Scan(&version, &name, &checksum))
		_, err := db.Exec(ctx, `DELETE FROM store_migrations WHERE line = 'payments' AND version = $1`, version)
		is.NoErr(err)
		ready(503, "migrations")
		e.do("GET", "/api/health", "", nil).expect(200)
		_, err = db.Exec(ctx, `INSERT INTO store_migrations (line, version, name, checksum, applied_at)
			VALUES ('payments', $1, $2, $3, $4)`, version, name, checksum, db.Now())
		is.NoErr(err)

		ready(503, "jobs") // opened, not started
		is.NoErr(e.kit.Start(ctx))
		ready(200, "")
		is.NoErr(e.kit.Close(context.Background()))
		ready(503, "jobs")
	})

	t.Run("database down", func(t *testing.T) {
		t.Parallel()
		is := is.New(t)
		db, err := store.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "down.db"), nil)
		is.NoErr(err)
		kit, err := full.OpenPlain(t.Context(), full.Config{DB: db})
		is.NoErr(err)
		is.NoErr(kit.Start(t.Context()))
		h := mustNew(kit, Options{})
		e := &testEnv{t: t, kit: kit, handler: h}
		is.Equal(e.do("GET", "/api/ready", "", nil).expect(200).JSON()["status"], "ready")
		is.NoErr(kit.Close(context.Background()))
		is.NoErr(db.Close())
		body := e.do("GET", "/api/ready", "", nil).expect(503).JSON()
		is.Equal(body["reason"], "database")
	})
}
