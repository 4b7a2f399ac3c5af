package entities_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Concurrent creates of two tenants share transactions (group commit)
// without giving up what a caller sees: every create that returned nil
// has its record, its count (the unfiltered and the filtered totals are
// exact) and its event; the one create that reuses a record id fails
// alone with a conflict, and nothing of it is written.
func TestConcurrentCreatesCommitAlone(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		ctxA, scA := storetest.NewScope(t)
		ctxB, scB := storetest.NewScope(t)
		for _, ctx := range []context.Context{ctxA, ctxB} {
			defineBenchEntity(t, svc, ctx)
		}
		taken := store.NewID()
		if _, err := svc.CreateRecord(ctxA, entities.RecordInput{EntityID: "bench.items", RecordID: taken, Values: map[string]any{"category": "cat-01"}}); err != nil {
			t.Fatal(err)
		}
		const creates = 96
		errs := make([]error, creates)
		var wg sync.WaitGroup
		for i := range creates {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, in := ctxA, entities.RecordInput{EntityID: "bench.items", Values: map[string]any{"category": fmt.Sprintf("cat-%02d", i%3), "title": fmt.Sprint("item ", i)}}
				if i%2 == 1 {
					ctx = ctxB
				}
				if i == 40 { // tenant A's id again: a conflict in A, whatever batch it lands in
					in.RecordID = taken
				}
				_, errs[i] = svc.CreateRecord(ctx, in)
			}()
		}
		wg.Wait()
		created := map[string]int{}
		for i, err := range errs {
			tenant := map[bool]string{true: scA.TenantID, false: scB.TenantID}[i%2 == 0]
			switch {
			case i == 40:
				if !errors.Is(err, store.ErrConflict) {
					t.Errorf("create %d with a taken id: %v, want a conflict", i, err)
				}
			case err != nil:
				t.Errorf("create %d: %v", i, err)
			default:
				created[tenant]++
			}
		}
		for _, c := range []struct {
			ctx    context.Context
			tenant string
			before int
		}{{ctxA, scA.TenantID, 1}, {ctxB, scB.TenantID, 0}} {
			want := created[c.tenant] + c.before
			_, total, err := svc.ListRecords(c.ctx, entities.RecordQuery{EntityID: "bench.items"})
			if err != nil || total != want {
				t.Errorf("tenant total %d (%v), want %d", total, err, want)
			}
			items, _, err := svc.ListRecords(c.ctx, entities.RecordQuery{EntityID: "bench.items", All: true})
			if err != nil || len(items) != want {
				t.Errorf("tenant lists %d records (%v), want %d", len(items), err, want)
			}
			_, filtered, err := svc.ListRecords(c.ctx, entities.RecordQuery{EntityID: "bench.items", Filters: []entities.Filter{{Key: "category", Op: entities.OpEq, Values: []string{"cat-01"}}}})
			n := 0
			for _, r := range items {
				if r.Values["category"] == "cat-01" {
					n++
				}
			}
			if err != nil || filtered != n {
				t.Errorf("category total %d (%v), want %d", filtered, err, n)
			}
			events, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: c.tenant, Type: entities.EventRecordCreated, Limit: 1000})
			if err != nil || len(events) != want {
				t.Errorf("%d record.created events (%v), want %d", len(events), err, want)
			}
		}
	}, entities.Migrations)
}
