//go:build !tenantkit_nopostgres

package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// flatRowsSlack is the growth in rows read FlatLists allows a case on
// PostgreSQL beside 1.5×: a handful of rows more (a kept count's rows, a
// page's lookups) is not a list reading its table.
const flatRowsSlack = 300

// largeTablePlans are the planner settings under which FlatLists
// explains a statement: what a table of millions of rows gets for a page
// (walking an index in the page's order, looking up each row's matches)
// rather than what a table of thousands gets (reading it whole, joining
// by hash and sorting, cheaper there). Penalized, not forbidden: a
// statement with no other way still reads its table, and fails.
var largeTablePlans = []string{"enable_seqscan = off", "enable_hashjoin = off", "enable_mergejoin = off"}

func init() {
	flatEngines = append(flatEngines, flatEngine{name: "postgres", label: "PostgreSQL", sizes: FlatSizes, open: openFlatPostgres})
}

// openFlatPostgres opens FlatLists' PostgreSQL database (skipping
// without TENANTKIT_TEST_POSTGRES_URL), its statements recorded.
func openFlatPostgres(t *testing.T, lines []store.Migrations) (*store.DB, *flatCounter) {
	t.Helper()
	trips := &RoundTrips{}
	db := PostgresTraced(t, IsolatedPostgresURL(t), trips, lines...)
	return db, &flatCounter{unit: "rows", slack: flatRowsSlack,
		read: func(t *testing.T, fn func() error, settings ...string) (int, error) {
			return rowsRead(t, db, trips, fn, settings...)
		}}
}

// rowsRead calls fn and returns the rows its reads read, each explained
// as the server runs it under largeTablePlans and settings.
func rowsRead(t *testing.T, db *store.DB, trips *RoundTrips, fn func() error, settings ...string) (int, error) {
	t.Helper()
	trips.takeStatements()
	trips.all.Store(true)
	err := fn()
	trips.all.Store(false)
	statements := trips.takeStatements()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, st := range statements {
		if isRead(st.SQL) {
			n += ExplainRows(t, db, st, "", append(slices.Clip(largeTablePlans), settings...)...).Read
		}
	}
	return n, nil
}

// isRead says whether sql is a statement ExplainRows can explain: a
// query, not a transaction's BEGIN or COMMIT.
func isRead(sql string) bool {
	head := strings.ToUpper(strings.TrimSpace(sql))
	return strings.HasPrefix(head, "SELECT") || strings.HasPrefix(head, "WITH") || strings.HasPrefix(head, "(")
}
