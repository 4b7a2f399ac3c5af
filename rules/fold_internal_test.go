package rules

import (
	"context"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// countingFolder is the package's store counting the folds asked of it.
type countingFolder struct {
	*SQLStore
	folds map[string]int
}

func (c *countingFolder) FoldLogCounts(ctx context.Context, q store.Querier, tenantID string, before time.Time) error {
	c.folds[tenantID]++
	return c.SQLStore.FoldLogCounts(ctx, q, tenantID, before)
}

// The log writer folds a tenant once an hour, again in the next hour, and
// keeps at most maxFoldedTenants tenants of earlier hours in memory: a
// new hour forgets the older ones, whose next fold then runs again.
func TestLogWriterFoldsOncePerHour(t *testing.T) {
	old := maxFoldedTenants
	maxFoldedTenants = 3
	t.Cleanup(func() { maxFoldedTenants = old })
	db := storetest.SQLite(t, Migrations)
	ctx := t.Context()
	st := &countingFolder{SQLStore: NewSQLStore(), folds: map[string]int{}}
	g := newLogWriter(db, st)
	hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	tenants := []string{"t1", "t2", "t3", "t4", "t5"}
	for _, tenant := range tenants {
		g.fold(ctx, tenant, hour.Add(time.Minute))
		g.fold(ctx, tenant, hour.Add(59*time.Minute)) // the same hour: no second fold
	}
	for _, tenant := range tenants {
		if st.folds[tenant] != 1 {
			t.Errorf("%s: %d folds in its first hour, want 1", tenant, st.folds[tenant])
		}
	}
	if len(g.folded) != 5 {
		t.Fatalf("%d tenants kept, want 5 (all of the latest hour)", len(g.folded))
	}
	g.fold(ctx, "t1", hour.Add(time.Hour+time.Minute)) // a new hour: the others, earlier, are forgotten
	if st.folds["t1"] != 2 || len(g.folded) != 1 {
		t.Errorf("after the next hour's first fold: t1 folded %d times, %d tenants kept; want 2 and 1", st.folds["t1"], len(g.folded))
	}
	g.fold(ctx, "t2", hour.Add(time.Minute)) // forgotten: folds again (nothing to fold)
	if st.folds["t2"] != 2 {
		t.Errorf("a forgotten tenant's fold: %d folds, want 2", st.folds["t2"])
	}
}
