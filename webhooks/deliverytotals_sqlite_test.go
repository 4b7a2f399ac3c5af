//go:build !tenantkit_nosqlite

package webhooks_test

import (
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// On SQLite, a deliveries total not filtered by webhook reads the sums by
// organization and the deltas not yet folded through their keys (the
// scope's conditions pushed into both halves of migration 0011's view):
// no step of its plan scans a table.
func TestDeliveryTotalsPlanOnSQLite(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := storetest.SQLite(t, webhooks.Migrations)
	ctx := t.Context()
	st := webhooks.NewSQLStore()
	tenant := store.NewID()
	w := insertWebhookOf(t, db, tenant, "a.x", time.Now())
	insertPendingDelivery(t, db, w, "a.x", time.Now())

	rec := &storetest.Recorder{Querier: db}
	for _, sc := range []store.Scope{{TenantID: tenant}, {TenantID: tenant, OrganizationIDs: []string{"org-a"}}} {
		for _, f := range []webhooks.DeliveryFilter{{}, {EventType: "a.x"}, {Status: webhooks.StatusDelivered}} {
			f.Limit = 0 // the total alone
			_, _, err := st.ListDeliveries(ctx, rec, sc, f)
			is.NoErr(err)
		}
	}
	is.Equal(len(rec.Reads()), 6)
	for _, r := range rec.Reads() {
		plan := storetest.SQLitePlan(t, db, r.SQL, r.Args...)
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") && step != "SCAN t" { // t: the view's rows, as its halves give them
				t.Errorf("%q in the plan of\n%s\nplan:\n%s", step, r.SQL, strings.Join(plan, "\n"))
			}
		}
	}
}
