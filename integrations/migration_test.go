package integrations_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Migration 0004 counts the entries written before it by integration,
// level and entity type (entries of no entity under the empty type), so
// that every filtered total afterwards is the entries' number, and
// entries written after it add to the same counts.
func TestLogMigrationCountsEntityTypes(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		if err := db.Migrate(ctx, storetest.MigrationsBefore(t, integrations.Migrations, "0004")); err != nil {
			t.Fatal(err)
		}
		tenant := store.NewID()
		at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
		types := []any{"contact", "order", nil}
		levels := []string{integrations.LevelInfo, integrations.LevelWarn}
		for i := range 12 {
			var id any
			if types[i%3] != nil {
				id = fmt.Sprint("e-", i%2)
			}
			if _, err := db.Exec(ctx, `INSERT INTO integration_logs (id, tenant_id, integration_id, level, message, entity_type, entity_id, created_at)
				VALUES ($1, $2, $3, $4, 'm', $5, $6, $7)`, store.NewID(), tenant, fmt.Sprint("crm-", i%2), levels[i/6], types[i%3], id,
				at.Add(time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(ctx, `INSERT INTO integration_log_counts (tenant_id, integration_id, level, slot, n)
			SELECT tenant_id, integration_id, level, 0, count(*) FROM integration_logs GROUP BY tenant_id, integration_id, level`); err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(ctx, integrations.Migrations); err != nil {
			t.Fatal(err)
		}
		st := integrations.NewSQLStore()
		order, e9 := "order", "e-9"
		later := &integrations.LogEntry{ID: store.NewID(), TenantID: tenant, IntegrationID: "crm-0", Level: integrations.LevelWarn,
			Message: "m", EntityType: &order, EntityID: &e9, CreatedAt: at.Add(time.Minute)}
		if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertLog(ctx, tx, later) }); err != nil {
			t.Fatal(err)
		}
		for _, f := range []integrations.LogFilter{{}, {EntityType: "contact"}, {EntityType: "order"},
			{EntityType: "order", Level: integrations.LevelWarn}, {EntityType: "contact", IntegrationID: "crm-1"},
			{IntegrationID: "crm-0"}, {Level: integrations.LevelInfo}, {EntityID: "e-1"}, {EntityID: "e-9"}} {
			f.Limit = 100
			items, total, err := st.ListLogs(ctx, db, tenant, f)
			if err != nil {
				t.Fatal(err)
			}
			if total != len(items) || len(items) == 0 {
				t.Errorf("%+v: total %d, %d entries listed", f, total, len(items))
			}
		}
	})
}
