package rules

import (
	"context"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// countingFolder is the package's store counting the folds asked of it,
// and keeping the last fold's bound.
type countingFolder struct {
	*SQLStore
	folds  map[string]int
	before time.Time
}

func (c *countingFolder) FoldLogCounts(ctx context.Context, q store.Querier, tenantID string, before time.Time) error {
	c.folds[tenantID]++
	c.before = before
	return c.SQLStore.FoldLogCounts(ctx, q, tenantID, before)
}

// The log writer folds a tenant once a minute, again in the next minute,
// each time every pending hour up to the execution's own; and keeps at
// most maxFoldedTenants tenants of earlier minutes in memory: a new
// minute forgets the older ones, whose next fold then runs again.
func TestLogWriterFoldsOncePerMinute(t *testing.T) {
	old := maxFoldedTenants
	maxFoldedTenants = 3
	t.Cleanup(func() { maxFoldedTenants = old })
	db := storetest.SQLite(t, Migrations)
	ctx := t.Context()
	st := &countingFolder{SQLStore: NewSQLStore(), folds: map[string]int{}}
	g := newLogWriter(db, st)
	hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	minute := hour.Add(40 * time.Minute)
	tenants := []string{"t1", "t2", "t3", "t4", "t5"}
	for _, tenant := range tenants {
		g.fold(ctx, tenant, minute.Add(time.Second))
		g.fold(ctx, tenant, minute.Add(59*time.Second)) // the same minute: no second fold
	}
	for _, tenant := range tenants {
		if st.folds[tenant] != 1 {
			t.Errorf("%s: %d folds in its first minute, want 1", tenant, st.folds[tenant])
		}
	}
	if !st.before.Equal(hour.Add(time.Hour)) {
		t.Errorf("folded the hours before %v, want before %v: up to the execution's hour, included", st.before, hour.Add(time.Hour))
	}
	if len(g.folded) != 5 {
		t.Fatalf("%d tenants kept, want 5 (all of the latest minute)", len(g.folded))
	}
	g.fold(ctx, "t1", minute.Add(time.Minute+time.Second)) // a new minute: the others, earlier, are forgotten
	if st.folds["t1"] != 2 || len(g.folded) != 1 {
		t.Errorf("after the next minute's first fold: t1 folded %d times, %d tenants kept; want 2 and 1", st.folds["t1"], len(g.folded))
	}
	g.fold(ctx, "t2", minute.Add(time.Second)) // forgotten: folds again (nothing to fold)
	if st.folds["t2"] != 2 {
		t.Errorf("a forgotten tenant's fold: %d folds, want 2", st.folds["t2"])
	}
}
