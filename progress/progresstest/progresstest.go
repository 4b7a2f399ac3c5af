// Package progresstest is the conformance suite for progress.Store
// implementations: Run checks every behaviour the progress Service relies
// on from its Store, as documented on progress.Store. The SQL store runs
// it on SQLite and PostgreSQL (progress/store_test.go); a host that plugs
// in its own Store runs it against that:
//
//	func TestMyStore(t *testing.T) {
//		progresstest.Run(t, func(t *testing.T) (*store.DB, progress.Store) {
//			return openMigratedDatabase(t), mystore.New()
//		})
//	}
//
// Every subtest works in tenants of its own (random ids), so one database
// may serve them all.
package progresstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Run runs the suite. newStore is called once per subtest and returns a
// migrated database and the Store to test on it. Writes get a transaction
// on that database (*store.Tx), as the Service passes them.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, progress.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *env)
	}{
		{"RoundTrip", testRoundTrip},
		{"Update", testUpdate},
		{"Tenants", testTenants},
		{"Organizations", testOrganizations},
		{"ListActive", testListActive},
		{"ListFinished", testListFinished},
		{"ListStale", testListStale},
		{"LockSerializes", testLockSerializes},
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
	s   progress.Store
	ctx context.Context
}

// tx runs fn in a committed transaction, failing the test on error.
func (e *env) tx(fn func(tx *store.Tx) error) {
	e.t.Helper()
	if err := e.db.Tx(e.ctx, fn); err != nil {
		e.t.Fatal(err)
	}
}

func tenant() string { return "t-" + store.NewID() }

// at is the suite's base time, with microseconds (the precision both
// engines keep).
var at = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

func ptr[T any](v T) *T { return &v }

// job returns a pending job of the tenant created (and beating) at t.
func job(tenantID string, t time.Time) *progress.Job {
	return &progress.Job{ID: store.NewID(), TenantID: tenantID, JobType: "test.job", Name: "Job", Status: progress.StatusPending,
		Meta: json.RawMessage(`{}`), HeartbeatAt: t, CreatedAt: t, UpdatedAt: t}
}

// running returns a running job of the tenant whose heartbeat is hb.
func running(tenantID string, hb time.Time) *progress.Job {
	j := job(tenantID, hb.Add(-time.Hour))
	j.Status, j.StartedAt, j.HeartbeatAt = progress.StatusRunning, ptr(hb.Add(-time.Hour)), hb
	return j
}

// finished returns a job of the tenant finished with status at t.
func finished(tenantID string, status progress.Status, t time.Time) *progress.Job {
	j := running(tenantID, t)
	j.Status, j.FinishedAt = status, ptr(t)
	return j
}

func (e *env) insert(jobs ...*progress.Job) {
	e.t.Helper()
	e.tx(func(tx *store.Tx) error {
		for _, j := range jobs {
			if err := e.s.Insert(e.ctx, tx, j); err != nil {
				return err
			}
		}
		return nil
	})
}

func (e *env) get(sc store.Scope, id string) *progress.Job {
	e.t.Helper()
	j, err := e.s.Get(e.ctx, e.db, sc, id)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", id, err)
	}
	return j
}

func scope(tenantID string) store.Scope { return store.Scope{TenantID: tenantID} }

// same fails unless got holds want's stored fields.
func same(t *testing.T, what string, got, want *progress.Job) {
	t.Helper()
	g, w := describe(got), describe(want)
	if g != w {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func describe(j *progress.Job) string {
	tm := func(p *time.Time) string {
		if p == nil {
			return "nil"
		}
		return p.UTC().Format(time.RFC3339Nano)
	}
	num := func(p *int64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	var meta any
	if err := json.Unmarshal(j.Meta, &meta); err != nil {
		meta = "invalid JSON " + string(j.Meta)
	}
	m, _ := json.Marshal(meta)
	return fmt.Sprintf("{id %s tenant %s org %q type %q name %q desc %q status %s processed %d total %s percent %d eta %s "+
		"cancellable %v requested %v meta %s started %s finished %s heartbeat %s error %q created %s updated %s}",
		j.ID, j.TenantID, j.OrganizationID, j.JobType, j.Name, j.Description, j.Status, j.ProcessedCount, num(j.TotalCount),
		j.ProgressPercent, num(j.ETASeconds), j.Cancellable, j.CancelRequested, m, tm(j.StartedAt), tm(j.FinishedAt),
		tm(&j.HeartbeatAt), j.ErrorMessage, tm(&j.CreatedAt), tm(&j.UpdatedAt))
}

func ids(jobs []*progress.Job) []string {
	out := []string{}
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func sameIDs(t *testing.T, what string, got []*progress.Job, want ...*progress.Job) {
	t.Helper()
	if g, w := ids(got), ids(want); !slices.Equal(g, w) {
		t.Fatalf("%s:\n got %v\nwant %v", what, g, w)
	}
}

// testRoundTrip: every field reads back as stored, nulls as nulls.
func testRoundTrip(t *testing.T, e *env) {
	tn := tenant()
	full := &progress.Job{ID: store.NewID(), TenantID: tn, OrganizationID: "org-1", JobType: "entities.export",
		Name: "Export «orders»", Description: "All of them", Status: progress.StatusFailed, ProcessedCount: 1 << 40,
		TotalCount: ptr(int64(1 << 41)), ProgressPercent: 50, ETASeconds: ptr(int64(77)), Cancellable: true, CancelRequested: true,
		Meta: json.RawMessage(`{"a":[1,"b",{"c":null}],"n":1.5}`), StartedAt: ptr(at.Add(time.Second)),
		FinishedAt: ptr(at.Add(time.Minute)), HeartbeatAt: at.Add(2 * time.Second), ErrorMessage: "boom: it broke",
		CreatedAt: at, UpdatedAt: at.Add(3 * time.Second)}
	bare := job(tn, at)
	zeroTotal := job(tn, at)
	zeroTotal.TotalCount, zeroTotal.ETASeconds = ptr(int64(0)), ptr(int64(0))
	e.insert(full, bare, zeroTotal)
	same(t, "a job with every field set", e.get(scope(tn), full.ID), full)
	got := e.get(scope(tn), bare.ID)
	same(t, "a job with no optional field", got, bare)
	if got.TotalCount != nil || got.ETASeconds != nil || got.StartedAt != nil || got.FinishedAt != nil {
		t.Fatalf("unset fields read back set: %s", describe(got))
	}
	same(t, "a job with a total of 0 (known, not unknown)", e.get(scope(tn), zeroTotal.ID), zeroTotal)
	if _, err := e.s.Get(e.ctx, e.db, scope(tn), store.NewID()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of an unknown id: %v, want ErrNotFound", err)
	}
	if err := e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.s.Insert(e.ctx, tx, bare) }); err == nil {
		t.Fatal("a second Insert of the same id succeeded")
	}
}

// testUpdate: Update writes the mutable fields (nulls included) and keeps
// the others; an unknown job is ErrNotFound.
func testUpdate(t *testing.T, e *env) {
	tn := tenant()
	j := running(tn, at)
	j.TotalCount, j.ETASeconds, j.ErrorMessage, j.Cancellable = ptr(int64(10)), ptr(int64(5)), "old", true
	e.insert(j)
	next := *j
	next.Status, next.ProcessedCount, next.TotalCount, next.ProgressPercent, next.ETASeconds = progress.StatusCompleted, 7, nil, 100, nil
	next.CancelRequested, next.FinishedAt, next.HeartbeatAt, next.ErrorMessage, next.UpdatedAt = true, ptr(at.Add(time.Hour)), at.Add(time.Hour), "", at.Add(time.Hour)
	next.StartedAt = ptr(at.Add(time.Minute))
	// Fields Update does not write: changing them here must not stick.
	changed := next
	changed.Name, changed.Description, changed.JobType, changed.Cancellable, changed.Meta = "renamed", "x", "other", false, json.RawMessage(`{"x":1}`)
	changed.CreatedAt, changed.OrganizationID = at.Add(time.Hour), "elsewhere"
	e.tx(func(tx *store.Tx) error { return e.s.Update(e.ctx, tx, &changed) })
	same(t, "after Update", e.get(scope(tn), j.ID), &next)

	missing := job(tn, at)
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.s.Update(e.ctx, tx, missing) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Update of an unknown job: %v, want ErrNotFound", err)
	}
	if _, err := e.s.Get(e.ctx, e.db, scope(tn), missing.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Update of an unknown job created it: %v", err)
	}
}

// testTenants: another tenant's job is not found by Get, Lock or Update,
// and no list shows it.
func testTenants(t *testing.T, e *env) {
	t1, t2 := tenant(), tenant()
	pending, fresh, stale, done := job(t1, at), running(t1, at), running(t1, at.Add(-time.Hour)), finished(t1, progress.StatusCompleted, at)
	e.insert(pending, fresh, stale, done)
	for _, j := range []*progress.Job{pending, fresh, stale, done} {
		if _, err := e.s.Get(e.ctx, e.db, scope(t2), j.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("tenant 2 reads tenant 1's job: %v", err)
		}
		err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
			_, err := e.s.Lock(e.ctx, tx, scope(t2), j.ID)
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("tenant 2 locks tenant 1's job: %v", err)
		}
		other := *j
		other.TenantID, other.ProcessedCount, other.Status = t2, 99, progress.StatusCancelled
		err = e.db.Tx(e.ctx, func(tx *store.Tx) error { return e.s.Update(e.ctx, tx, &other) })
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Update naming tenant 2 with tenant 1's job id: %v, want ErrNotFound", err)
		}
		same(t, "tenant 1's job after tenant 2's update", e.get(scope(t1), j.ID), j)
	}
	lists := func(sc store.Scope) []*progress.Job {
		a, err1 := e.s.ListActive(e.ctx, e.db, sc, at.Add(-time.Minute), 100)
		f, err2 := e.s.ListFinished(e.ctx, e.db, sc, at.Add(-time.Minute), 100)
		s, err3 := e.s.ListStale(e.ctx, e.db, sc, at.Add(-time.Minute), at.Add(-24*time.Hour), 100)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		return slices.Concat(a, f, s)
	}
	if got := lists(scope(t2)); len(got) != 0 {
		t.Fatalf("tenant 2's lists show %v", ids(got))
	}
	if got := lists(scope(t1)); len(got) != 4 {
		t.Fatalf("tenant 1's lists show %d of its 4 jobs", len(got))
	}
}

// testOrganizations: a job of organization o1 is read only by scopes
// that allow o1 (storetest.OrgScopes); a job of no organization by every
// scope of the tenant.
func testOrganizations(t *testing.T, e *env) {
	tn := tenant()
	o1, o2 := "o1-"+store.NewID(), "o2-"+store.NewID()
	pending, fresh, stale, done := job(tn, at), running(tn, at), running(tn, at.Add(-time.Hour)), finished(tn, progress.StatusFailed, at)
	for _, j := range []*progress.Job{pending, fresh, stale, done} {
		j.OrganizationID = o1
	}
	shared := job(tn, at)
	e.insert(pending, fresh, stale, done, shared)
	of := []*progress.Job{pending, fresh, stale, done}
	check := func(t *testing.T, ctx context.Context, seeing bool) {
		sc, _ := store.ScopeFrom(ctx)
		for _, j := range of {
			_, err := e.s.Get(ctx, e.db, sc, j.ID)
			lockErr := e.db.Tx(ctx, func(tx *store.Tx) error {
				_, err := e.s.Lock(ctx, tx, sc, j.ID)
				return err
			})
			if seeing && (err != nil || lockErr != nil) {
				t.Fatalf("scope %+v cannot read o1's job: Get %v, Lock %v", sc, err, lockErr)
			}
			if !seeing && (!errors.Is(err, store.ErrNotFound) || !errors.Is(lockErr, store.ErrNotFound)) {
				t.Fatalf("scope %+v reads o1's job: Get %v, Lock %v; want ErrNotFound", sc, err, lockErr)
			}
		}
		if _, err := e.s.Get(ctx, e.db, sc, shared.ID); err != nil {
			t.Fatalf("scope %+v cannot read the job of no organization: %v", sc, err)
		}
		active, err1 := e.s.ListActive(ctx, e.db, sc, at.Add(-time.Minute), 100)
		fin, err2 := e.s.ListFinished(ctx, e.db, sc, at.Add(-time.Minute), 100)
		st, err3 := e.s.ListStale(ctx, e.db, sc, at.Add(-time.Minute), at.Add(-24*time.Hour), 100)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		got := ids(slices.Concat(active, fin, st))
		if !slices.Contains(got, shared.ID) {
			t.Fatalf("scope %+v: the lists leave out the job of no organization", sc)
		}
		n := 0
		for _, j := range of {
			if slices.Contains(got, j.ID) {
				n++
			}
		}
		if want := map[bool]int{true: 4, false: 0}[seeing]; n != want {
			t.Fatalf("scope %+v: the lists show %d of o1's 4 jobs, want %d", sc, n, want)
		}
	}
	grid := storetest.NewOrgScopes(tn, o1, o2)
	grid.RunBlind(t, func(t *testing.T, ctx context.Context) { check(t, ctx, false) })
	grid.RunSeeing(t, func(t *testing.T, ctx context.Context) { check(t, ctx, true) })
}

// testListActive: pending jobs (however old) and running jobs with a
// heartbeat after the bound, newest created first, limited.
func testListActive(t *testing.T, e *env) {
	tn := tenant()
	bound := at
	oldPending := job(tn, at.Add(-48*time.Hour))
	fresh := running(tn, bound.Add(time.Microsecond))
	fresh.CreatedAt = at.Add(-30 * time.Minute)
	atBound := running(tn, bound) // not after the bound: stale
	stale := running(tn, bound.Add(-time.Hour))
	newPending := job(tn, at.Add(-time.Minute))
	sameTime1, sameTime2 := job(tn, at.Add(-2*time.Minute)), job(tn, at.Add(-2*time.Minute))
	done := finished(tn, progress.StatusCompleted, at.Add(time.Minute))
	cancelled := finished(tn, progress.StatusCancelled, at.Add(time.Minute))
	e.insert(oldPending, fresh, atBound, stale, newPending, sameTime1, sameTime2, done, cancelled)
	// sameTime1 and sameTime2 tie on CreatedAt: the later id first.
	tieFirst, tieSecond := sameTime2, sameTime1
	if sameTime1.ID > sameTime2.ID {
		tieFirst, tieSecond = sameTime1, sameTime2
	}
	got, err := e.s.ListActive(e.ctx, e.db, scope(tn), bound, 100)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "ListActive", got, newPending, tieFirst, tieSecond, fresh, oldPending)
	got, err = e.s.ListActive(e.ctx, e.db, scope(tn), bound, 2)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "ListActive limited to 2", got, newPending, tieFirst)
}

// testListFinished: terminal jobs finished at or after since, latest
// first, limited.
func testListFinished(t *testing.T, e *env) {
	tn := tenant()
	since := at
	atSince := finished(tn, progress.StatusCompleted, since)
	before := finished(tn, progress.StatusFailed, since.Add(-time.Microsecond))
	late := finished(tn, progress.StatusCancelled, since.Add(time.Hour))
	mid := finished(tn, progress.StatusFailed, since.Add(time.Minute))
	stillRunning := running(tn, since.Add(time.Minute))
	pending := job(tn, since.Add(time.Minute))
	e.insert(atSince, before, late, mid, stillRunning, pending)
	got, err := e.s.ListFinished(e.ctx, e.db, scope(tn), since, 100)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "ListFinished", got, late, mid, atSince)
	got, err = e.s.ListFinished(e.ctx, e.db, scope(tn), since, 1)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "ListFinished limited to 1", got, late)
}

// testListStale: running jobs whose heartbeat is within [since, staleAt],
// latest heartbeat first, limited.
func testListStale(t *testing.T, e *env) {
	tn := tenant()
	staleAt, since := at, at.Add(-time.Hour)
	atStale := running(tn, staleAt)
	fresh := running(tn, staleAt.Add(time.Microsecond))
	atSince := running(tn, since)
	tooOld := running(tn, since.Add(-time.Microsecond))
	mid := running(tn, staleAt.Add(-time.Minute))
	oldPending := job(tn, staleAt.Add(-time.Minute))
	oldDone := finished(tn, progress.StatusCompleted, staleAt.Add(-time.Minute))
	e.insert(atStale, fresh, atSince, tooOld, mid, oldPending, oldDone)
	got, err := e.s.ListStale(e.ctx, e.db, scope(tn), staleAt, since, 100)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "ListStale", got, atStale, mid, atSince)
	got, err = e.s.ListStale(e.ctx, e.db, scope(tn), staleAt, since, 2)
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "ListStale limited to 2", got, atStale, mid)
}

// testLockSerializes: concurrent read-modify-writes through Lock lose no
// update, and a transaction's Lock sees its own writes.
func testLockSerializes(t *testing.T, e *env) {
	tn := tenant()
	j := running(tn, at)
	e.insert(j)
	const writers, rounds = 3, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for range rounds {
				err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
					got, err := e.s.Lock(e.ctx, tx, scope(tn), j.ID)
					if err != nil {
						return err
					}
					got.ProcessedCount++
					if err := e.s.Update(e.ctx, tx, got); err != nil {
						return err
					}
					again, err := e.s.Lock(e.ctx, tx, scope(tn), j.ID)
					if err == nil && again.ProcessedCount != got.ProcessedCount {
						err = fmt.Errorf("Lock in the writing transaction reads %d, it wrote %d", again.ProcessedCount, got.ProcessedCount)
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := e.get(scope(tn), j.ID).ProcessedCount; got != writers*rounds {
		t.Fatalf("after %d locked increments the count is %d", writers*rounds, got)
	}
}

// testUsesTheTransaction: writes run on the Querier given, so a rolled
// back transaction leaves nothing.
func testUsesTheTransaction(t *testing.T, e *env) {
	tn := tenant()
	kept := job(tn, at)
	e.insert(kept)
	fresh := job(tn, at)
	rollback := errors.New("roll back")
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
		if err := e.s.Insert(e.ctx, tx, fresh); err != nil {
			return err
		}
		if _, err := e.s.Get(e.ctx, tx, scope(tn), fresh.ID); err != nil {
			return fmt.Errorf("the transaction does not see its own job: %w", err)
		}
		changed := *kept
		changed.Status, changed.ProcessedCount = progress.StatusRunning, 5
		if err := e.s.Update(e.ctx, tx, &changed); err != nil {
			return err
		}
		if got, err := e.s.Lock(e.ctx, tx, scope(tn), kept.ID); err != nil || got.ProcessedCount != 5 {
			return fmt.Errorf("the transaction does not see its own update: %v, %v", got, err)
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if _, err := e.s.Get(e.ctx, e.db, scope(tn), fresh.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a rolled-back job persists: %v", err)
	}
	same(t, "a job after a rolled-back update", e.get(scope(tn), kept.ID), kept)
}
