// Package datasynctest is the conformance suite for datasync.Store
// implementations: Run checks every behaviour the data sync Service
// relies on from its Store, as documented on datasync.Store. The SQL
// store runs it on SQLite and PostgreSQL (datasync/store_test.go); a host
// that plugs in its own Store runs it against that:
//
//	func TestMyStore(t *testing.T) {
//		datasynctest.Run(t, func(t *testing.T) (*store.DB, datasync.Store) {
//			return openMigratedDatabase(t), mystore.New()
//		})
//	}
//
// Every subtest works in tenants of its own (random ids), so one database
// may serve them all.
package datasynctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/store"
)

// Run runs the suite. newStore is called once per subtest and returns a
// migrated database and the Store to test on it. Writes get a transaction
// on that database (*store.Tx), as the Service passes them.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, datasync.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *env)
	}{
		{"InsertGet", testInsertGet},
		{"ActiveRunUnique", testActiveRunUnique},
		{"UpdateRun", testUpdateRun},
		{"LastCursor", testLastCursor},
		{"ListRuns", testListRuns},
		{"Tenants", testTenants},
		{"LockRun", testLockRun},
		{"RunSummary", testRunSummary},
		{"UsesTheTransaction", testUsesTheTransaction},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, s := newStore(t)
			c.test(t, &env{t: t, db: db, s: s, ctx: t.Context()})
		})
	}
}

type env struct {
	t   *testing.T
	db  *store.DB
	s   datasync.Store
	ctx context.Context
}

func tenant() string { return "t-" + store.NewID() }

var at = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

func ptr[T any](v T) *T { return &v }

// run returns a pending import run of tenantID with every field set,
// created at at+minutes.
func run(tenantID, integrationID, entityType string, d datasync.Direction, minutes int) *datasync.Run {
	when := at.Add(time.Duration(minutes) * time.Minute)
	return &datasync.Run{ID: store.NewID(), TenantID: tenantID, OrganizationID: "org-" + tenantID,
		OrganizationIDs: []string{"org-" + tenantID, "org-b"}, ProgressJobID: ptr("pj-" + store.NewID()),
		IntegrationID: integrationID, EntityType: entityType, Direction: d, Status: datasync.StatusPending, Cursor: "",
		FullSync: true, BatchSize: 250, TriggeredBy: ptr("user:u1"), StartedBy: "api_key:k-" + tenantID, CreatedAt: when, UpdatedAt: when}
}

// insert stores r in a committed transaction, failing the test on error.
func (e *env) insert(r *datasync.Run) {
	e.t.Helper()
	if err := e.insertErr(r); err != nil {
		e.t.Fatalf("InsertRun(%s %s %s %s): %v", r.IntegrationID, r.EntityType, r.Direction, r.Status, err)
	}
}

func (e *env) insertErr(r *datasync.Run) error {
	return e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.s.InsertRun(e.ctx, tx, r) })
}

func (e *env) update(r *datasync.Run) {
	e.t.Helper()
	if err := e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.s.UpdateRun(e.ctx, tx, r) }); err != nil {
		e.t.Fatalf("UpdateRun(%s): %v", r.ID, err)
	}
}

func (e *env) get(tenantID, id string) *datasync.Run {
	e.t.Helper()
	r, err := e.s.GetRun(e.ctx, e.db, tenantID, id)
	if err != nil {
		e.t.Fatalf("GetRun(%s, %s): %v", tenantID, id, err)
	}
	return r
}

// sameRun compares every field, the JSON-hidden ones included.
func sameRun(t *testing.T, what string, got, want *datasync.Run) {
	t.Helper()
	type full struct {
		datasync.Run
		TenantID, OrganizationID, Cursor string
		// OrganizationIDs: null (every organization) and [] (none) differ.
		OrganizationIDs           []string
		FullSync, CancelRequested bool
		BatchSize, PageAttempts   int
		Cursors                   datasync.CursorHistory
		TriggeredBy, RetryOf      *string
		StartedBy                 string
		CreatedAt, UpdatedAt      string
	}
	flat := func(r *datasync.Run) string {
		b, _ := json.Marshal(full{Run: *r, TenantID: r.TenantID, OrganizationID: r.OrganizationID, Cursor: r.Cursor,
			OrganizationIDs: r.OrganizationIDs, FullSync: r.FullSync, CancelRequested: r.CancelRequested, BatchSize: r.BatchSize,
			PageAttempts: r.PageAttempts, Cursors: r.Cursors, TriggeredBy: r.TriggeredBy, RetryOf: r.RetryOf, StartedBy: r.StartedBy,
			CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339Nano), UpdatedAt: r.UpdatedAt.UTC().Format(time.RFC3339Nano)})
		return string(b)
	}
	if g, w := flat(got), flat(want); g != w {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func testInsertGet(t *testing.T, e *env) {
	tn := tenant()
	if _, err := e.s.GetRun(e.ctx, e.db, tn, store.NewID()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetRun of no run: %v, want ErrNotFound", err)
	}
	r := run(tn, "sync_http_json", "rec.products", datasync.Import, 0)
	r.Cursor, r.RetryOf, r.LastError = "c-42", ptr(store.NewID()), ptr("an earlier error")
	r.CreatedCount, r.UpdatedCount, r.SkippedCount, r.FailedCount, r.BatchesCompleted = 1, 2, 3, 4, 5
	r.UpdatedAt = r.CreatedAt.Add(time.Second)
	e.insert(r)
	sameRun(t, "a run read back", e.get(tn, r.ID), r)

	// Nil pointers, an empty organization and no organization list (every
	// organization) read back as they were.
	bare := &datasync.Run{ID: store.NewID(), TenantID: tn, IntegrationID: "i", EntityType: "rec.x", Direction: datasync.Export,
		Status: datasync.StatusCompleted, BatchSize: 1, CreatedAt: at, UpdatedAt: at}
	e.insert(bare)
	sameRun(t, "a run without optional fields read back", e.get(tn, bare.ID), bare)
	if got := e.get(tn, bare.ID); got.OrganizationIDs != nil {
		t.Fatalf("no organization list read back as %#v, want nil (every organization)", got.OrganizationIDs)
	}

	// An empty organization list (no organization) is not nil (every
	// organization).
	none := run(tn, "i", "rec.y", datasync.Export, 0)
	none.OrganizationIDs = []string{}
	e.insert(none)
	if got := e.get(tn, none.ID); got.OrganizationIDs == nil || len(got.OrganizationIDs) != 0 {
		t.Fatalf("an empty organization list read back as %#v, want []", got.OrganizationIDs)
	}

	// A page attempt count and a cursor history are stored as given.
	counted := run(tn, "i", "rec.z", datasync.Import, 0)
	counted.PageAttempts = 2
	counted.Cursors = datasync.CursorHistory{Recent: []string{"00ff00ff00ff00ff", "0123456789abcdef"}, Marks: []string{"00ff00ff00ff00ff"}}
	e.insert(counted)
	sameRun(t, "a run with attempts and cursors read back", e.get(tn, counted.ID), counted)
}

// testActiveRunUnique: at most one pending or running run per tenant,
// integration, entity type and direction.
func testActiveRunUnique(t *testing.T, e *env) {
	tn := tenant()
	first := run(tn, "i1", "rec.a", datasync.Import, 0)
	e.insert(first)
	for _, st := range []datasync.Status{datasync.StatusPending, datasync.StatusRunning} {
		dup := run(tn, "i1", "rec.a", datasync.Import, 1)
		dup.Status = st
		if err := e.insertErr(dup); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a second %s run of the same target: %v, want ErrConflict", st, err)
		}
		if _, err := e.s.GetRun(e.ctx, e.db, tn, dup.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the refused %s run was stored: %v", st, err)
		}
	}
	if got := e.get(tn, first.ID); got.Status != datasync.StatusPending {
		t.Fatalf("the first run after the refused inserts: %s, want pending (left alone)", got.Status)
	}
	// Another direction, entity type, integration or tenant is another target.
	for _, other := range []*datasync.Run{run(tn, "i1", "rec.a", datasync.Export, 1), run(tn, "i1", "rec.b", datasync.Import, 1),
		run(tn, "i2", "rec.a", datasync.Import, 1), run(tenant(), "i1", "rec.a", datasync.Import, 1)} {
		e.insert(other)
	}
	// Final runs do not count: any number of them, and a new active run
	// once the first ended.
	for _, st := range []datasync.Status{datasync.StatusCompleted, datasync.StatusFailed, datasync.StatusCancelled, datasync.StatusCompleted} {
		done := run(tn, "i1", "rec.a", datasync.Import, 2)
		done.Status = st
		e.insert(done)
	}
	running := run(tn, "i1", "rec.a", datasync.Import, 3)
	running.Status = datasync.StatusRunning
	if err := e.insertErr(running); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a running run next to a pending one: %v, want ErrConflict", err)
	}
	first.Status, first.UpdatedAt = datasync.StatusCancelled, at.Add(time.Hour)
	e.update(first)
	e.insert(running)
}

func testUpdateRun(t *testing.T, e *env) {
	tn := tenant()
	r := run(tn, "i", "rec.a", datasync.Import, 0)
	e.insert(r)
	want := *r
	want.Status, want.Cursor = datasync.StatusRunning, "next-page"
	want.CreatedCount, want.UpdatedCount, want.SkippedCount, want.FailedCount, want.BatchesCompleted = 10, 20, 30, 40, 7
	want.LastError, want.CancelRequested, want.ProgressJobID = ptr("boom"), true, ptr("pj-other")
	want.PageAttempts = 3
	want.Cursors = datasync.CursorHistory{Recent: []string{"0123456789abcdef"}, Marks: []string{"0123456789abcdef"}}
	want.UpdatedAt = at.Add(90 * time.Second)
	// The organizations a run may read are fixed when it is inserted.
	changed := want
	changed.OrganizationIDs = nil
	e.update(&changed)
	sameRun(t, "after UpdateRun", e.get(tn, r.ID), &want)

	// Back again: a nil lastError and progress job, false flags, no
	// attempts, no cursor history.
	again := want
	again.LastError, again.ProgressJobID, again.CancelRequested = nil, nil, false
	again.PageAttempts, again.Cursors = 0, datasync.CursorHistory{}
	again.Status, again.Cursor, again.UpdatedAt = datasync.StatusFailed, "", at.Add(time.Hour)
	e.update(&again)
	sameRun(t, "after a second UpdateRun", e.get(tn, r.ID), &again)

	// Another run is left alone.
	other := run(tn, "i", "rec.b", datasync.Import, 0)
	e.insert(other)
	sameRun(t, "the other run", e.get(tn, other.ID), other)

	missing := run(tn, "i", "rec.a", datasync.Import, 0)
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.s.UpdateRun(e.ctx, tx, missing) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateRun of no run: %v, want ErrNotFound", err)
	}
	if _, err := e.s.GetRun(e.ctx, e.db, tn, missing.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateRun of no run created it: %v", err)
	}
}

// finished inserts a run of the target in status st, created at minute
// m and updated a minute later, with cursor c.
func (e *env) finished(tn, integ, entity string, d datasync.Direction, st datasync.Status, m int, c string) *datasync.Run {
	e.t.Helper()
	r := run(tn, integ, entity, d, m)
	r.Status, r.Cursor, r.UpdatedAt = st, c, r.CreatedAt.Add(time.Minute)
	e.insert(r)
	return r
}

func (e *env) lastCursor(tn, integ, entity string, d datasync.Direction) string {
	e.t.Helper()
	c, err := e.s.LastCursor(e.ctx, e.db, tn, integ, entity, d)
	if err != nil {
		e.t.Fatalf("LastCursor(%s %s %s): %v", integ, entity, d, err)
	}
	return c
}

func testLastCursor(t *testing.T, e *env) {
	tn := tenant()
	if c := e.lastCursor(tn, "i", "rec.a", datasync.Import); c != "" {
		t.Fatalf("LastCursor with no run: %q, want \"\"", c)
	}
	e.finished(tn, "i", "rec.a", datasync.Import, datasync.StatusCompleted, 0, "c-first")
	e.finished(tn, "i", "rec.a", datasync.Import, datasync.StatusCompleted, 10, "c-latest")
	e.finished(tn, "i", "rec.a", datasync.Import, datasync.StatusCompleted, 5, "c-middle")
	// Newer runs that did not complete do not count.
	e.finished(tn, "i", "rec.a", datasync.Import, datasync.StatusFailed, 20, "c-failed")
	e.finished(tn, "i", "rec.a", datasync.Import, datasync.StatusCancelled, 21, "c-cancelled")
	running := run(tn, "i", "rec.a", datasync.Import, 22)
	running.Status, running.Cursor = datasync.StatusRunning, "c-running"
	e.insert(running)
	// Nor do completed runs of another target or tenant, however new.
	e.finished(tn, "i", "rec.a", datasync.Export, datasync.StatusCompleted, 30, "c-export")
	e.finished(tn, "i", "rec.b", datasync.Import, datasync.StatusCompleted, 30, "c-entity")
	e.finished(tn, "j", "rec.a", datasync.Import, datasync.StatusCompleted, 30, "c-integration")
	e.finished(tenant(), "i", "rec.a", datasync.Import, datasync.StatusCompleted, 30, "c-tenant")
	if c := e.lastCursor(tn, "i", "rec.a", datasync.Import); c != "c-latest" {
		t.Fatalf("LastCursor = %q, want c-latest (the latest completed run of the target)", c)
	}
	if c := e.lastCursor(tn, "i", "rec.a", datasync.Export); c != "c-export" {
		t.Fatalf("LastCursor of the export = %q, want c-export", c)
	}
	// A completed run with an empty cursor (one page) is the latest too.
	e.finished(tn, "i", "rec.a", datasync.Import, datasync.StatusCompleted, 11, "")
	if c := e.lastCursor(tn, "i", "rec.a", datasync.Import); c != "" {
		t.Fatalf("LastCursor = %q, want \"\" (the latest completed run read one page)", c)
	}
	// The running run completing makes it the latest.
	running.Status, running.UpdatedAt = datasync.StatusCompleted, running.CreatedAt.Add(time.Minute)
	e.update(running)
	if c := e.lastCursor(tn, "i", "rec.a", datasync.Import); c != "c-running" {
		t.Fatalf("LastCursor after the newest run completed = %q, want c-running", c)
	}
	if c := e.lastCursor(tn, "i", "rec.none", datasync.Import); c != "" {
		t.Fatalf("LastCursor of a target without runs = %q", c)
	}
}

func (e *env) list(tn string, f datasync.RunFilter) ([]string, int) {
	e.t.Helper()
	runs, total, err := e.s.ListRuns(e.ctx, e.db, tn, f)
	if err != nil {
		e.t.Fatalf("ListRuns(%+v): %v", f, err)
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		if r.TenantID != tn {
			e.t.Fatalf("ListRuns of %s returned a run of %s", tn, r.TenantID)
		}
		ids[i] = r.ID
	}
	return ids, total
}

func testListRuns(t *testing.T, e *env) {
	tn := tenant()
	if ids, total := e.list(tn, datasync.RunFilter{Limit: 10}); len(ids) != 0 || total != 0 {
		t.Fatalf("ListRuns of a tenant without runs: %v, %d", ids, total)
	}
	// Eight runs, created a minute apart, in a shuffled insert order.
	type spec struct {
		integ, entity string
		d             datasync.Direction
		st            datasync.Status
		m             int
	}
	specs := []spec{
		{"i1", "rec.a", datasync.Import, datasync.StatusCompleted, 3},
		{"i1", "rec.a", datasync.Import, datasync.StatusFailed, 0},
		{"i1", "rec.b", datasync.Import, datasync.StatusPending, 5},
		{"i2", "rec.a", datasync.Export, datasync.StatusCompleted, 1},
		{"i1", "rec.a", datasync.Export, datasync.StatusRunning, 7},
		{"i2", "rec.b", datasync.Import, datasync.StatusCancelled, 2},
		{"i1", "rec.a", datasync.Import, datasync.StatusCompleted, 6},
		{"i2", "rec.a", datasync.Import, datasync.StatusCompleted, 4},
	}
	byMinute := make([]*datasync.Run, len(specs))
	for _, s := range specs {
		r := run(tn, s.integ, s.entity, s.d, s.m)
		r.Status = s.st
		e.insert(r)
		byMinute[s.m] = r
	}
	newest := func(keep func(r *datasync.Run) bool) []string {
		var out []string
		for i := len(byMinute) - 1; i >= 0; i-- {
			if keep(byMinute[i]) {
				out = append(out, byMinute[i].ID)
			}
		}
		return out
	}
	check := func(what string, f datasync.RunFilter, keep func(r *datasync.Run) bool) {
		t.Helper()
		f.Limit = 100
		want := newest(keep)
		ids, total := e.list(tn, f)
		if !slices.Equal(ids, want) || total != len(want) {
			t.Fatalf("%s: %v (total %d), want %v (total %d), newest first", what, ids, total, want, len(want))
		}
	}
	all := func(*datasync.Run) bool { return true }
	check("all", datasync.RunFilter{}, all)
	check("integrationId", datasync.RunFilter{IntegrationID: "i2"}, func(r *datasync.Run) bool { return r.IntegrationID == "i2" })
	check("entityType", datasync.RunFilter{EntityType: "rec.b"}, func(r *datasync.Run) bool { return r.EntityType == "rec.b" })
	check("direction", datasync.RunFilter{Direction: datasync.Export}, func(r *datasync.Run) bool { return r.Direction == datasync.Export })
	check("status", datasync.RunFilter{Status: datasync.StatusCompleted}, func(r *datasync.Run) bool { return r.Status == datasync.StatusCompleted })
	check("all four", datasync.RunFilter{IntegrationID: "i1", EntityType: "rec.a", Direction: datasync.Import, Status: datasync.StatusCompleted},
		func(r *datasync.Run) bool {
			return r.IntegrationID == "i1" && r.EntityType == "rec.a" && r.Direction == datasync.Import && r.Status == datasync.StatusCompleted
		})
	check("no match", datasync.RunFilter{IntegrationID: "i3"}, func(*datasync.Run) bool { return false })

	// Paging: limit and offset over the newest-first order, the total
	// counting every match.
	want := newest(all)
	var paged []string
	for off := 0; off < len(want)+3; off += 3 {
		ids, total := e.list(tn, datasync.RunFilter{Limit: 3, Offset: off})
		if total != len(want) {
			t.Fatalf("page at offset %d: total %d, want %d", off, total, len(want))
		}
		if wantLen := max(0, min(3, len(want)-off)); len(ids) != wantLen {
			t.Fatalf("page at offset %d: %d runs, want %d", off, len(ids), wantLen)
		}
		paged = append(paged, ids...)
	}
	if !slices.Equal(paged, want) {
		t.Fatalf("pages of 3: %v, want %v", paged, want)
	}
	ids, total := e.list(tn, datasync.RunFilter{Status: datasync.StatusCompleted, Limit: 2, Offset: 1})
	if wantC := newest(func(r *datasync.Run) bool { return r.Status == datasync.StatusCompleted }); !slices.Equal(ids, wantC[1:3]) || total != len(wantC) {
		t.Fatalf("completed, limit 2 offset 1: %v (total %d), want %v (total %d)", ids, total, wantC[1:3], len(wantC))
	}

	// Runs created at the same instant page without gaps or repeats.
	tie := tenant()
	var tied []string
	for range 5 {
		r := run(tie, "i", "rec.a", datasync.Import, 0)
		r.Status = datasync.StatusCompleted
		e.insert(r)
		tied = append(tied, r.ID)
	}
	var seen []string
	for off := 0; off < 5; off += 2 {
		ids, _ := e.list(tie, datasync.RunFilter{Limit: 2, Offset: off})
		seen = append(seen, ids...)
	}
	slices.Sort(seen)
	slices.Sort(tied)
	if !slices.Equal(seen, tied) {
		t.Fatalf("pages of runs created at the same instant: %v, want each of %v once", seen, tied)
	}
}

// testTenants: a tenant never reads, changes or counts another's runs.
func testTenants(t *testing.T, e *env) {
	t1, t2 := tenant(), tenant()
	r1 := run(t1, "i", "rec.a", datasync.Import, 0)
	e.insert(r1)
	// The same target in another tenant is another active run.
	r2 := run(t2, "i", "rec.a", datasync.Import, 1)
	e.insert(r2)
	if _, err := e.s.GetRun(e.ctx, e.db, t2, r1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant 2 reads tenant 1's run: %v, want ErrNotFound", err)
	}
	// An update naming another tenant changes nothing.
	stolen := *r1
	stolen.TenantID, stolen.Status, stolen.Cursor, stolen.CancelRequested = t2, datasync.StatusCompleted, "stolen", true
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.s.UpdateRun(e.ctx, tx, &stolen) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateRun of tenant 1's run as tenant 2: %v, want ErrNotFound", err)
	}
	sameRun(t, "tenant 1's run after tenant 2's update", e.get(t1, r1.ID), r1)
	if ids, total := e.list(t2, datasync.RunFilter{Limit: 10}); !slices.Equal(ids, []string{r2.ID}) || total != 1 {
		t.Fatalf("tenant 2's list: %v (total %d), want only its run", ids, total)
	}
	if ids, total := e.list(t1, datasync.RunFilter{Limit: 10, IntegrationID: "i"}); !slices.Equal(ids, []string{r1.ID}) || total != 1 {
		t.Fatalf("tenant 1's list: %v (total %d), want only its run", ids, total)
	}
	r1.Status, r1.Cursor, r1.UpdatedAt = datasync.StatusCompleted, "t1-cursor", at.Add(time.Hour)
	e.update(r1)
	if c := e.lastCursor(t2, "i", "rec.a", datasync.Import); c != "" {
		t.Fatalf("tenant 2's LastCursor = %q, want \"\" (only tenant 1 completed a run)", c)
	}
	if c := e.lastCursor(t1, "i", "rec.a", datasync.Import); c != "t1-cursor" {
		t.Fatalf("tenant 1's LastCursor = %q, want t1-cursor", c)
	}
	if got := e.get(t2, r2.ID); got.Status != datasync.StatusPending || got.Cursor != "" {
		t.Fatalf("tenant 2's run after tenant 1's update: %+v", got)
	}
}

// testUsesTheTransaction: every method runs on the Querier given, so a
// transaction sees its own writes and a rolled-back one leaves nothing.
func testUsesTheTransaction(t *testing.T, e *env) {
	tn := tenant()
	kept := run(tn, "i", "rec.kept", datasync.Import, 0)
	e.insert(kept)
	rollback := errors.New("roll back")
	r := run(tn, "i", "rec.a", datasync.Import, 1)
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
		if err := e.s.InsertRun(e.ctx, tx, r); err != nil {
			return err
		}
		got, err := e.s.GetRun(e.ctx, tx, tn, r.ID)
		if err != nil {
			return fmt.Errorf("the transaction does not see its own run: %w", err)
		}
		if got.Status != datasync.StatusPending {
			return fmt.Errorf("the transaction reads its run as %s", got.Status)
		}
		if ids, _, err := e.s.ListRuns(e.ctx, tx, tn, datasync.RunFilter{Limit: 10}); err != nil || len(ids) != 2 {
			return fmt.Errorf("the transaction lists %d runs (%v), want 2", len(ids), err)
		}
		r.Status, r.Cursor, r.UpdatedAt = datasync.StatusCompleted, "in-tx", at.Add(time.Hour)
		if err := e.s.UpdateRun(e.ctx, tx, r); err != nil {
			return err
		}
		if c, err := e.s.LastCursor(e.ctx, tx, tn, "i", "rec.a", datasync.Import); err != nil || c != "in-tx" {
			return fmt.Errorf("the transaction's LastCursor = %q, %v; want in-tx", c, err)
		}
		changed := *kept
		changed.Status, changed.UpdatedAt = datasync.StatusFailed, at.Add(time.Hour)
		if err := e.s.UpdateRun(e.ctx, tx, &changed); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if _, err := e.s.GetRun(e.ctx, e.db, tn, r.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a rolled-back run persists: %v", err)
	}
	sameRun(t, "a run after a rolled-back update", e.get(tn, kept.ID), kept)
	if c := e.lastCursor(tn, "i", "rec.a", datasync.Import); c != "" {
		t.Fatalf("LastCursor after the rollback = %q", c)
	}
}

// testLockRun: LockRun reads the tenant's run in the transaction (and only
// the tenant's), as GetRun does.
func testLockRun(t *testing.T, e *env) {
	t1, t2 := tenant(), tenant()
	r := run(t1, "i", "rec.a", datasync.Import, 0)
	e.insert(r)
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
		got, err := e.s.LockRun(e.ctx, tx, t1, r.ID)
		if err != nil {
			return err
		}
		sameRun(t, "locked run", got, r)
		if _, err := e.s.LockRun(e.ctx, tx, t2, r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("tenant 2 locks tenant 1's run: %v, want ErrNotFound", err)
		}
		if _, err := e.s.LockRun(e.ctx, tx, t1, "no-such-run"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LockRun of no run: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// testRunSummary: the widget's counts and latest runs are what counting
// the window's runs gives, after inserts and status changes, for windows
// that start at an hour and inside one, and never another tenant's.
func testRunSummary(t *testing.T, e *env) {
	tn, other := tenant(), tenant()
	var runs []*datasync.Run
	for i, m := range []int{-130, -70, -5, 0, 10, 30, 54, 60, 61, 125} {
		integ := []string{"crm", "erp", "shop"}[i%3]
		r := run(tn, integ, fmt.Sprintf("rec.e%d", i), datasync.Import, m)
		e.insert(r)
		runs = append(runs, r)
		o := run(other, integ, "rec.products", datasync.Export, m)
		o.Status = datasync.StatusCompleted
		e.insert(o)
	}
	for i, st := range []datasync.Status{datasync.StatusRunning, datasync.StatusCompleted, datasync.StatusFailed,
		datasync.StatusRunning, datasync.StatusCancelled, datasync.StatusCompleted, datasync.StatusPaused} {
		r := runs[(i*3)%len(runs)]
		r.Status, r.UpdatedAt = st, r.UpdatedAt.Add(time.Second)
		e.update(r)
	}
	runs[4].CreatedCount++ // an update that keeps the status
	e.update(runs[4])
	all, _, err := e.s.ListRuns(e.ctx, e.db, tn, datasync.RunFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	hour := at.Truncate(time.Hour)
	for _, since := range []time.Time{hour.Add(-3 * time.Hour), hour.Add(-time.Hour), hour, at, at.Add(time.Minute),
		hour.Add(time.Hour), hour.Add(time.Hour + time.Minute), hour.Add(10 * time.Hour)} {
		want := map[string]string{}
		var order []string
		counts := map[string]map[datasync.Status]int{}
		for _, r := range all { // newest first
			if r.CreatedAt.Before(since) {
				continue
			}
			if counts[r.IntegrationID] == nil {
				counts[r.IntegrationID] = map[datasync.Status]int{}
				want[r.IntegrationID] = r.ID
				order = append(order, r.IntegrationID)
			}
			counts[r.IntegrationID][r.Status]++
		}
		slices.Sort(order)
		got, err := e.s.RunSummary(e.ctx, e.db, tn, since)
		if err != nil {
			t.Fatalf("RunSummary from %s: %v", since, err)
		}
		var gotOrder []string
		for _, ir := range got {
			gotOrder = append(gotOrder, ir.IntegrationID)
			if ir.Latest == nil || ir.Latest.ID != want[ir.IntegrationID] {
				t.Errorf("RunSummary from %s: %s's latest %v, want %s", since, ir.IntegrationID, ir.Latest, want[ir.IntegrationID])
			} else {
				sameRun(t, "latest", ir.Latest, e.get(tn, want[ir.IntegrationID]))
			}
			if fmt.Sprint(ir.ByStatus) != fmt.Sprint(counts[ir.IntegrationID]) {
				t.Errorf("RunSummary from %s: %s by status %v, want %v", since, ir.IntegrationID, ir.ByStatus, counts[ir.IntegrationID])
			}
		}
		if !slices.Equal(gotOrder, order) {
			t.Errorf("RunSummary from %s: integrations %v, want %v", since, gotOrder, order)
		}
	}
}
