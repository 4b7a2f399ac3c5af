package progress_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/progress"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// clock is a clock the test moves by hand (store.Options.Clock): every
// transaction's time, and so every stamp and the staleness cut-off.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// env is a Service over a database of its own whose clock the test moves.
type env struct {
	t   *testing.T
	db  *store.DB
	svc *progress.Service
	clk *clock
}

// each runs fn on both engines, with a clock of its own: on a fresh
// SQLite file, and on PostgreSQL in the package's shared schema (opened
// again with the clock; tests stay apart by their random tenants).
func each(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Helper()
	run := func(t *testing.T, dbURL string) {
		clk := &clock{now: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
		db, err := store.Open(t.Context(), dbURL, &store.Options{Clock: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(t.Context(), progress.Migrations); err != nil {
			t.Fatal(err)
		}
		fn(t, &env{t: t, db: db, svc: mustService(progress.New(db, progress.Options{})), clk: clk})
	}
	t.Run("sqlite", func(t *testing.T) { run(t, storetest.SQLiteURL(t)) })
	t.Run("postgres", func(t *testing.T) {
		shared := storetest.Postgres(t, progress.Migrations) // skips without PostgreSQL
		u, err := url.Parse(os.Getenv(storetest.PostgresEnv))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", shared.Schema())
		u.RawQuery = q.Encode()
		run(t, u.String())
	})
}

func ptr[T any](v T) *T { return &v }

func (e *env) create(ctx context.Context, in progress.CreateInput) *progress.Job {
	e.t.Helper()
	if in.JobType == "" {
		in.JobType = "test.job"
	}
	if in.Name == "" {
		in.Name = "Test job"
	}
	j, err := e.svc.Create(ctx, in)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// must fails the test when the call it wraps fails: must(t)(svc.Begin(…)).
func must(t *testing.T) func(*progress.Job, error) *progress.Job {
	return func(j *progress.Job, err error) *progress.Job {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
}

func (e *env) events(tenantID string) []store.Event {
	e.t.Helper()
	evs, err := store.ListEvents(e.t.Context(), e.db, store.EventFilter{TenantID: tenantID})
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

func eventTypes(evs []store.Event) string {
	var out []string
	for _, ev := range evs {
		out = append(out, strings.TrimPrefix(ev.Type, "progress.job."))
	}
	return strings.Join(out, ",")
}

func num(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ctx, sc := storetest.NewScope(t)
		j := e.create(ctx, progress.CreateInput{JobType: "entities.export", Name: "Export", Description: "orders",
			Meta: json.RawMessage(` {"entityId": "x"} `)})
		if j.Status != progress.StatusPending || j.OrganizationID != sc.OrganizationID || j.TenantID != sc.TenantID ||
			j.TotalCount != nil || j.StartedAt != nil || string(j.Meta) != `{"entityId": "x"}` {
			t.Fatalf("created %+v", j)
		}
		if _, err := e.svc.Report(ctx, j.ID, 1, nil); !errors.Is(err, progress.ErrNotRunning) {
			t.Fatalf("Report of a pending job: %v, want ErrNotRunning", err)
		}
		if _, err := e.svc.Heartbeat(ctx, j.ID); !errors.Is(err, progress.ErrNotRunning) {
			t.Fatalf("Heartbeat of a pending job: %v, want ErrNotRunning", err)
		}

		e.clk.advance(time.Second)
		begun := must(t)(e.svc.Begin(ctx, j.ID))
		if begun.Status != progress.StatusRunning || begun.StartedAt == nil || !begun.StartedAt.Equal(e.clk.Now()) {
			t.Fatalf("begun %+v", begun)
		}
		startedAt := *begun.StartedAt
		e.clk.advance(10 * time.Second)
		r := must(t)(e.svc.Report(ctx, strings.ToUpper(j.ID), 25, ptr(int64(100))))
		if r.ProcessedCount != 25 || num(r.TotalCount) != int64(100) || r.ProgressPercent != 25 || num(r.ETASeconds) != int64(30) {
			t.Fatalf("after 25 of 100 in 10 s: processed %d total %v percent %d eta %v; want 25, 100, 25, 30",
				r.ProcessedCount, num(r.TotalCount), r.ProgressPercent, num(r.ETASeconds))
		}
		// Beginning again (a retried worker) keeps StartedAt and emits nothing.
		again := must(t)(e.svc.Begin(ctx, j.ID))
		if !again.StartedAt.Equal(startedAt) || again.ProcessedCount != 25 {
			t.Fatalf("Begin of a running job changed it: %+v", again)
		}
		e.clk.advance(20 * time.Second)
		r = must(t)(e.svc.Report(ctx, j.ID, 60, nil)) // the total is kept
		if r.ProgressPercent != 60 || num(r.TotalCount) != int64(100) || num(r.ETASeconds) != int64(20) {
			t.Fatalf("after 60 of 100 in 30 s: percent %d total %v eta %v; want 60, 100, 20", r.ProgressPercent, num(r.TotalCount), num(r.ETASeconds))
		}
		r = must(t)(e.svc.Report(ctx, j.ID, 2, ptr(int64(3))))
		if r.ProgressPercent != 66 {
			t.Fatalf("2 of 3 is %d%%, want 66 (rounded down)", r.ProgressPercent)
		}
		r = must(t)(e.svc.Report(ctx, j.ID, 150, nil))
		if r.ProgressPercent != 100 || num(r.ETASeconds) != int64(0) {
			t.Fatalf("150 of 3: percent %d eta %v, want 100 and 0", r.ProgressPercent, num(r.ETASeconds))
		}
		if _, err := e.svc.Report(ctx, j.ID, -1, nil); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("a negative count: %v, want ErrInvalid", err)
		}
		e.clk.advance(time.Second)
		hb := must(t)(e.svc.Heartbeat(ctx, j.ID))
		if !hb.HeartbeatAt.Equal(e.clk.Now()) {
			t.Fatalf("heartbeat at %v, want %v", hb.HeartbeatAt, e.clk.Now())
		}

		e.clk.advance(time.Second)
		done := must(t)(e.svc.Finish(ctx, j.ID, progress.StatusCompleted, "ignored"))
		if done.Status != progress.StatusCompleted || done.ProgressPercent != 100 || done.ETASeconds != nil ||
			done.FinishedAt == nil || !done.FinishedAt.Equal(e.clk.Now()) || done.ErrorMessage != "" {
			t.Fatalf("completed %+v", done)
		}
		// Finishing again with the same status changes nothing; another
		// status is refused, and so is every other change.
		e.clk.advance(time.Second)
		same := must(t)(e.svc.Finish(ctx, j.ID, progress.StatusCompleted, ""))
		if !same.FinishedAt.Equal(*done.FinishedAt) || !same.UpdatedAt.Equal(done.UpdatedAt) {
			t.Fatalf("a second Finish changed the job: %+v", same)
		}
		if _, err := e.svc.Finish(ctx, j.ID, progress.StatusFailed, "x"); !errors.Is(err, progress.ErrFinished) || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("Finish failed after completed: %v, want ErrFinished", err)
		}
		for name, call := range map[string]func() error{
			"Begin":     func() error { _, err := e.svc.Begin(ctx, j.ID); return err },
			"Report":    func() error { _, err := e.svc.Report(ctx, j.ID, 1, nil); return err },
			"Heartbeat": func() error { _, err := e.svc.Heartbeat(ctx, j.ID); return err },
		} {
			if err := call(); !errors.Is(err, progress.ErrFinished) {
				t.Errorf("%s of a finished job: %v, want ErrFinished", name, err)
			}
		}
		if _, err := e.svc.Finish(ctx, j.ID, progress.StatusRunning, ""); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("Finish as running: %v, want ErrInvalid", err)
		}
		if _, err := e.svc.Get(ctx, store.NewID()); !errors.Is(err, progress.ErrJobNotFound) || !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get of an unknown id: %v", err)
		}

		// One event per status change, none per report, in the job's scope.
		evs := e.events(sc.TenantID)
		if got := eventTypes(evs); got != "created,started,completed" {
			t.Fatalf("events %s, want created,started,completed", got)
		}
		var data map[string]any
		if err := json.Unmarshal(evs[2].Data, &data); err != nil {
			t.Fatal(err)
		}
		if data["id"] != j.ID || data["status"] != "completed" || data["jobType"] != "entities.export" || data["processedCount"] != 150.0 ||
			data["totalCount"] != 3.0 || evs[2].OrganizationID != sc.OrganizationID {
			t.Fatalf("completed event %s (org %q)", evs[2].Data, evs[2].OrganizationID)
		}
	})
}

func TestValidation(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, progress.Migrations)
	svc := mustService(progress.New(db, progress.Options{}))
	ctx, _ := storetest.NewScope(t)
	for _, c := range []struct {
		in    progress.CreateInput
		field string
	}{
		{progress.CreateInput{Name: "n"}, "jobType"},
		{progress.CreateInput{JobType: "Export", Name: "n"}, "jobType"},
		{progress.CreateInput{JobType: strings.Repeat("a", 101), Name: "n"}, "jobType"},
		{progress.CreateInput{JobType: "a", Name: " "}, "name"},
		{progress.CreateInput{JobType: "a", Name: strings.Repeat("é", 201)}, "name"},
		{progress.CreateInput{JobType: "a", Name: "a\x00b"}, "name"},
		{progress.CreateInput{JobType: "a", Name: "n", Description: strings.Repeat("d", 2001)}, "description"},
		{progress.CreateInput{JobType: "a", Name: "n", Total: ptr(int64(-1))}, "total"},
		{progress.CreateInput{JobType: "a", Name: "n", Meta: json.RawMessage(`[1]`)}, "meta"},
		{progress.CreateInput{JobType: "a", Name: "n", Meta: json.RawMessage(`{"a":`)}, "meta"},
	} {
		_, err := svc.Create(ctx, c.in)
		var v *store.ValidationError
		if !errors.As(err, &v) || len(v.Fields) != 1 || v.Fields[c.field] == "" {
			t.Errorf("Create(%+v): %v, want a validation error on %s", c.in, err, c.field)
		}
	}
	if _, err := svc.Create(t.Context(), progress.CreateInput{JobType: "a", Name: "n"}); !errors.Is(err, store.ErrNoScope) {
		t.Fatalf("Create without a scope: %v", err)
	}
	j, err := svc.Create(ctx, progress.CreateInput{JobType: "a.b_c-1", Name: strings.Repeat("é", 200), Total: ptr(int64(0))})
	if err != nil || string(j.Meta) != "{}" || num(j.TotalCount) != int64(0) {
		t.Fatalf("Create at the limits: %+v, %v", j, err)
	}
	msg := strings.Repeat("x", 3000) + "\x00\xff"
	must(t)(svc.Begin(ctx, j.ID))
	failed := must(t)(svc.Finish(ctx, j.ID, progress.StatusFailed, msg))
	if len([]rune(failed.ErrorMessage)) != progress.MaxErrorMessageLength {
		t.Fatalf("a long error message kept %d characters", len([]rune(failed.ErrorMessage)))
	}
}

// A running job without a heartbeat for StaleAfter reads failed; nothing
// is written, and a late report makes it running again.
func TestStale(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ctx, sc := storetest.NewScope(t)
		j := e.create(ctx, progress.CreateInput{Total: ptr(int64(10))})
		must(t)(e.svc.Begin(ctx, j.ID))
		e.clk.advance(5 * time.Second)
		beat := must(t)(e.svc.Report(ctx, j.ID, 5, nil)).HeartbeatAt
		pending := e.create(ctx, progress.CreateInput{Name: "queued"})

		e.clk.advance(59*time.Second + 999*time.Millisecond)
		if got := must(t)(e.svc.Get(ctx, j.ID)); got.Status != progress.StatusRunning || got.Stale {
			t.Fatalf("59.999 s after its heartbeat the job reads %s", got.Status)
		}
		e.clk.advance(time.Millisecond)
		got := must(t)(e.svc.Get(ctx, j.ID))
		if got.Status != progress.StatusFailed || !got.Stale || got.ErrorMessage != "No heartbeat for 60 s" ||
			got.FinishedAt == nil || !got.FinishedAt.Equal(beat.Add(60*time.Second)) || got.ETASeconds != nil || got.ProcessedCount != 5 {
			t.Fatalf("60 s after its heartbeat the job reads %+v", got)
		}
		a, err := e.svc.Active(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Active) != 1 || a.Active[0].ID != pending.ID {
			t.Fatalf("active %v, want only the pending job (pending jobs do not go stale)", a.Active)
		}
		if len(a.RecentlyCompleted) != 1 || a.RecentlyCompleted[0].ID != j.ID || a.RecentlyCompleted[0].Status != progress.StatusFailed {
			t.Fatalf("recently completed %v, want the stale job, failed", a.RecentlyCompleted)
		}
		// Nothing was written: no event, and the worker's next report
		// brings the job back.
		if got := eventTypes(e.events(sc.TenantID)); got != "created,started,created" {
			t.Fatalf("events %s", got)
		}
		back := must(t)(e.svc.Report(ctx, j.ID, 6, nil))
		if back.Status != progress.StatusRunning || back.Stale || back.ErrorMessage != "" || back.FinishedAt != nil {
			t.Fatalf("a report after going stale: %+v", back)
		}
		// A stale job can be finished.
		e.clk.advance(2 * time.Minute)
		done := must(t)(e.svc.Finish(ctx, j.ID, progress.StatusCompleted, ""))
		if done.Status != progress.StatusCompleted || done.Stale {
			t.Fatalf("finishing a stale job: %+v", done)
		}
	})
}

func TestStaleAfterOption(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	db, err := store.Open(t.Context(), storetest.SQLiteURL(t), &store.Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(t.Context(), progress.Migrations); err != nil {
		t.Fatal(err)
	}
	svc := mustService(progress.New(db, progress.Options{StaleAfter: 1500 * time.Millisecond}))
	ctx, _ := storetest.NewScope(t)
	j := must(t)(svc.Create(ctx, progress.CreateInput{JobType: "a", Name: "n"}))
	must(t)(svc.Begin(ctx, j.ID))
	clk.advance(1500 * time.Millisecond)
	if got := must(t)(svc.Get(ctx, j.ID)); got.Status != progress.StatusFailed || got.ErrorMessage != "No heartbeat for 1.5 s" {
		t.Fatalf("with StaleAfter 1.5 s: %s %q", got.Status, got.ErrorMessage)
	}
}

// Active: the active jobs newest first (at most 50), the ones finished in
// the last 10 minutes latest first (at most 20), stale ones among them at
// their heartbeat plus 60 s.
func TestActive(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ctx, _ := storetest.NewScope(t)
		finish := func(status progress.Status) *progress.Job {
			j := e.create(ctx, progress.CreateInput{})
			must(t)(e.svc.Begin(ctx, j.ID))
			return must(t)(e.svc.Finish(ctx, j.ID, status, "why"))
		}
		old := finish(progress.StatusCompleted) // finished at T
		e.clk.advance(time.Minute)
		failed := finish(progress.StatusFailed) // T+1m
		staleJob := e.create(ctx, progress.CreateInput{})
		must(t)(e.svc.Begin(ctx, staleJob.ID)) // beats at T+1m: stale from T+2m, shown finished then
		e.clk.advance(90 * time.Second)
		cancelled := finish(progress.StatusCancelled) // T+2m30s
		e.clk.advance(time.Second)
		running := e.create(ctx, progress.CreateInput{})
		must(t)(e.svc.Begin(ctx, running.ID))
		e.clk.advance(time.Second)
		pending := e.create(ctx, progress.CreateInput{})

		ids := func(jobs []*progress.Job) string {
			var out []string
			for _, j := range jobs {
				out = append(out, j.ID)
			}
			return strings.Join(out, ",")
		}
		join := func(jobs ...*progress.Job) string { return ids(jobs) }
		a, err := e.svc.Active(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(a.Active), join(pending, running); got != want {
			t.Fatalf("active %s, want %s", got, want)
		}
		if got, want := ids(a.RecentlyCompleted), join(cancelled, staleJob, failed, old); got != want {
			t.Fatalf("recently completed %s, want %s (cancelled, stale, failed, completed)", got, want)
		}
		// Ten minutes after T, old (finished at T) is still in the
		// window; a microsecond later it is not.
		e.clk.advance(10*time.Minute - 2*time.Minute - 32*time.Second)
		must(t)(e.svc.Heartbeat(ctx, running.ID))
		a, _ = e.svc.Active(ctx)
		if got, want := ids(a.RecentlyCompleted), join(cancelled, staleJob, failed, old); got != want {
			t.Fatalf("at T+10m: recently completed %s, want %s", got, want)
		}
		e.clk.advance(time.Microsecond)
		a, _ = e.svc.Active(ctx)
		if got, want := ids(a.RecentlyCompleted), join(cancelled, staleJob, failed); got != want {
			t.Fatalf("after T+10m: recently completed %s, want %s", got, want)
		}
		// At T+11m the running job (last beat at T+10m) is stale, shown
		// finished at T+11m; failed (T+1m) has left the window, and the
		// stale job (shown finished at T+2m) leaves it after T+12m.
		e.clk.advance(time.Minute)
		a, _ = e.svc.Active(ctx)
		if got, want := ids(a.RecentlyCompleted), join(running, cancelled, staleJob); got != want {
			t.Fatalf("at T+11m: recently completed %s, want %s", got, want)
		}
		if got, want := ids(a.Active), join(pending); got != want {
			t.Fatalf("at T+11m: active %s, want %s (the running job is stale)", got, want)
		}
		e.clk.advance(time.Minute)
		a, _ = e.svc.Active(ctx)
		if got, want := ids(a.RecentlyCompleted), join(running, cancelled); got != want {
			t.Fatalf("at T+12m: recently completed %s, want %s", got, want)
		}
	})
}

func TestActiveLimits(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, progress.Migrations)
	svc := mustService(progress.New(db, progress.Options{}))
	ctx, _ := storetest.NewScope(t)
	var first, last *progress.Job
	err := db.Tx(ctx, func(tx *store.Tx) error {
		for i := range progress.ActiveLimit + 2 {
			j, err := svc.CreateTx(ctx, tx, progress.CreateInput{JobType: "a", Name: "n"})
			if err != nil {
				return err
			}
			if i < progress.RecentLimit+2 {
				if _, err := svc.FinishTx(ctx, tx, j.ID, progress.StatusCancelled, ""); err != nil {
					return err
				}
			}
			if i == 0 {
				first = j
			}
			last = j
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := svc.Active(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Active) != 30 || a.Active[0].ID != last.ID || len(a.RecentlyCompleted) != progress.RecentLimit {
		t.Fatalf("%d active (first %s), %d recent; want 30 (first %s), %d", len(a.Active), a.Active[0].ID, len(a.RecentlyCompleted), last.ID, progress.RecentLimit)
	}
	for _, j := range a.RecentlyCompleted {
		if j.ID == first.ID {
			t.Fatal("the recent list, cut at 20, kept the oldest of 22 finished at the same time")
		}
	}
	err = db.Tx(ctx, func(tx *store.Tx) error {
		for range progress.ActiveLimit {
			if _, err := svc.CreateTx(ctx, tx, progress.CreateInput{JobType: "a", Name: "n"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if a, _ = svc.Active(ctx); len(a.Active) != progress.ActiveLimit {
		t.Fatalf("%d active, want at most %d", len(a.Active), progress.ActiveLimit)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ctx, _ := storetest.NewScope(t)
		fixed := e.create(ctx, progress.CreateInput{})
		if _, err := e.svc.RequestCancel(ctx, fixed.ID); !errors.Is(err, progress.ErrNotCancellable) {
			t.Fatalf("cancelling a job that is not cancellable: %v", err)
		}
		j := e.create(ctx, progress.CreateInput{Cancellable: true})
		must(t)(e.svc.Begin(ctx, j.ID))
		if req, err := e.svc.CancelRequested(ctx, j.ID); req || err != nil {
			t.Fatalf("CancelRequested before a request: %v, %v", req, err)
		}
		got := must(t)(e.svc.RequestCancel(ctx, j.ID))
		if !got.CancelRequested || got.Status != progress.StatusRunning {
			t.Fatalf("after RequestCancel: %+v", got)
		}
		must(t)(e.svc.RequestCancel(ctx, j.ID)) // again: no-op
		if req, err := e.svc.CancelRequested(ctx, j.ID); !req || err != nil {
			t.Fatalf("CancelRequested after a request: %v, %v", req, err)
		}
		if r := must(t)(e.svc.Report(ctx, j.ID, 1, nil)); !r.CancelRequested {
			t.Fatal("Report does not tell the worker about the request")
		}
		done := must(t)(e.svc.Finish(ctx, j.ID, progress.StatusCancelled, "Stopped by a user"))
		if done.Status != progress.StatusCancelled || done.ErrorMessage != "Stopped by a user" {
			t.Fatalf("cancelled: %+v", done)
		}
		if _, err := e.svc.RequestCancel(ctx, j.ID); !errors.Is(err, progress.ErrFinished) {
			t.Fatalf("cancelling a finished job: %v", err)
		}
	})
}

// The Tx variants run in the caller's transaction: rolled back, they
// leave nothing, events included.
func TestCallerTransaction(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ctx, sc := storetest.NewScope(t)
		rollback := errors.New("roll back")
		var id string
		err := e.db.Tx(ctx, func(tx *store.Tx) error {
			j, err := e.svc.CreateTx(ctx, tx, progress.CreateInput{JobType: "sync.run", Name: "Sync"})
			if err != nil {
				return err
			}
			id = j.ID
			if _, err := e.svc.BeginTx(ctx, tx, id); err != nil {
				return err
			}
			if got, err := e.svc.GetTx(ctx, tx, id); err != nil || got.Status != progress.StatusRunning {
				t.Errorf("GetTx in the transaction: %v, %v", got, err)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if _, err := e.svc.Get(ctx, id); !errors.Is(err, progress.ErrJobNotFound) {
			t.Fatalf("a rolled-back job exists: %v", err)
		}
		if evs := e.events(sc.TenantID); len(evs) != 0 {
			t.Fatalf("a rolled-back job left events: %s", eventTypes(evs))
		}

		j := e.create(ctx, progress.CreateInput{Total: ptr(int64(4))})
		must(t)(e.svc.Begin(ctx, j.ID))
		must(t)(e.svc.Report(ctx, j.ID, 1, nil))
		// A batch whose transaction fails does not show its progress.
		err = e.db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := e.svc.ReportTx(ctx, tx, j.ID, 3, nil); err != nil {
				return err
			}
			if _, err := e.svc.FinishTx(ctx, tx, j.ID, progress.StatusCompleted, ""); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if got := must(t)(e.svc.Get(ctx, j.ID)); got.ProcessedCount != 1 || got.Status != progress.StatusRunning {
			t.Fatalf("after a rolled-back batch: %d processed, %s", got.ProcessedCount, got.Status)
		}
	})
}

// Jobs belong to their tenant and organization: other tenants, and
// scopes that may not read the organization, do not see them.
func TestScopes(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ctx, sc := storetest.NewScope(t)
		j := e.create(ctx, progress.CreateInput{Cancellable: true})
		otherTenant, _ := storetest.NewScope(t)
		otherOrg := store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID, OrganizationID: "o2", OrganizationIDs: []string{"o2"}})
		allOrgs := store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID, OrganizationID: "o2"})
		for name, c := range map[string]context.Context{"another tenant": otherTenant, "another organization": otherOrg} {
			if _, err := e.svc.Get(c, j.ID); !errors.Is(err, progress.ErrJobNotFound) {
				t.Errorf("%s: Get %v", name, err)
			}
			for op, call := range map[string]func() error{
				"Begin":         func() error { _, err := e.svc.Begin(c, j.ID); return err },
				"RequestCancel": func() error { _, err := e.svc.RequestCancel(c, j.ID); return err },
				"Finish":        func() error { _, err := e.svc.Finish(c, j.ID, progress.StatusFailed, ""); return err },
			} {
				if err := call(); !errors.Is(err, progress.ErrJobNotFound) {
					t.Errorf("%s: %s %v", name, op, err)
				}
			}
			if a, err := e.svc.Active(c); err != nil || len(a.Active)+len(a.RecentlyCompleted) != 0 {
				t.Errorf("%s: Active %+v, %v", name, a, err)
			}
		}
		if got := must(t)(e.svc.Get(ctx, j.ID)); got.Status != progress.StatusPending || got.CancelRequested {
			t.Fatalf("the job after the others' attempts: %+v", got)
		}
		if _, err := e.svc.Get(allOrgs, j.ID); err != nil {
			t.Fatalf("a scope reading every organization: %v", err)
		}
		// A job created without an active organization is the tenant's,
		// visible to every organization.
		tenantWide := e.create(store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID}), progress.CreateInput{})
		if _, err := e.svc.Get(otherOrg, tenantWide.ID); err != nil {
			t.Fatalf("a job of no organization: %v", err)
		}
	})
}

func TestRun(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, e *env) {
		ctx, sc := storetest.NewScope(t)
		var seen *progress.Job
		j, err := e.svc.Run(ctx, progress.CreateInput{JobType: "attachments.extract", Name: "Extract"}, func(ctx context.Context, r *progress.Reporter) error {
			if err := r.Report(ctx, 1, ptr(int64(10))); err != nil { // the first report is written
				return err
			}
			seen = must(t)(e.svc.Get(ctx, r.ID()))
			for i := range int64(9) {
				if err := r.Report(ctx, i+2, nil); err != nil { // within the second: kept for the finish
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if seen.Status != progress.StatusRunning || seen.ProcessedCount != 1 || num(seen.TotalCount) != int64(10) {
			t.Fatalf("while running: %+v", seen)
		}
		if j.Status != progress.StatusCompleted || j.ProcessedCount != 10 || j.ProgressPercent != 100 {
			t.Fatalf("after Run: %s, %d processed, %d%%", j.Status, j.ProcessedCount, j.ProgressPercent)
		}

		boom := errors.New("driver said: password=secret")
		j, err = e.svc.Run(ctx, progress.CreateInput{JobType: "a", Name: "n"}, func(context.Context, *progress.Reporter) error { return boom })
		if !errors.Is(err, boom) || j.Status != progress.StatusFailed || j.ErrorMessage != "The job failed" {
			t.Fatalf("a failing Run: %+v, %v (internal error text must not be shown)", j, err)
		}
		public := store.Errorf(store.ErrInvalid, "Row 3 has no name")
		j, _ = e.svc.Run(ctx, progress.CreateInput{JobType: "a", Name: "n"}, func(context.Context, *progress.Reporter) error { return public })
		if j.Status != progress.StatusFailed || j.ErrorMessage != "Row 3 has no name" {
			t.Fatalf("a Run failing with a public message: %+v", j)
		}

		j, err = e.svc.Run(ctx, progress.CreateInput{JobType: "a", Name: "n", Cancellable: true}, func(ctx context.Context, r *progress.Reporter) error {
			must(t)(e.svc.RequestCancel(ctx, r.ID())) // as a user would
			for i := range int64(100) {
				if err := r.Report(ctx, i, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if !errors.Is(err, progress.ErrCancelRequested) || j.Status != progress.StatusCancelled {
			t.Fatalf("a cancelled Run: %+v, %v", j, err)
		}
		if _, err := e.svc.Run(ctx, progress.CreateInput{}, func(context.Context, *progress.Reporter) error {
			t.Fatal("fn called for invalid input")
			return nil
		}); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("Run with invalid input: %v", err)
		}
		if got := eventTypes(e.events(sc.TenantID)); got != "created,started,completed,created,started,failed,created,started,failed,created,started,cancelled" {
			t.Fatalf("events %s", got)
		}
	})
}

// Run's heartbeats keep a long step from going stale.
func TestRunHeartbeats(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, progress.Migrations)
	svc := mustService(progress.New(db, progress.Options{StaleAfter: time.Second}))
	ctx, _ := storetest.NewScope(t)
	j, err := svc.Run(ctx, progress.CreateInput{JobType: "a", Name: "n"}, func(ctx context.Context, r *progress.Reporter) error {
		deadline := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(deadline) {
			if got, err := svc.Get(ctx, r.ID()); err != nil || got.Status != progress.StatusRunning {
				return errors.Join(err, errors.New("the job went stale during a step without reports"))
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	})
	if err != nil || j.Status != progress.StatusCompleted {
		t.Fatalf("%+v, %v", j, err)
	}
}
