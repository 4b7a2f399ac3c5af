package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Concurrent writes through a Batcher all commit; one that fails fails
// alone, and nothing of it is written.
func TestBatcher(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		b := store.NewBatcher(db)
		bad := errors.New("refused")
		var wg sync.WaitGroup
		errs := make([]error, 60)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = b.Do(func(ctx context.Context, tx *store.Tx) error {
					if _, err := insertWidget(ctx, tx, sc, fmt.Sprint("w", i), nil); err != nil {
						return err
					}
					if i%10 == 0 {
						return bad // after its insert: the insert must not survive
					}
					return nil
				})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if want := i%10 == 0; (err != nil) != want || want && !errors.Is(err, bad) {
				t.Errorf("write %d: %v", i, err)
			}
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 54 {
			t.Errorf("%d widgets, want the 54 good writes", n)
		}
	}, widgets)
}

// A function that fails costs its batch one more transaction, not one per
// member: the batch commits again without it and it runs once more alone.
// Sixty-four writes queue behind a held transaction so that they form one
// batch; four of them fail.
func TestBatcherReRunsOnlyTheFailure(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		b := store.NewBatcher(db)
		bad := errors.New("refused")
		const writes, failing = 64, 4
		var mu sync.Mutex
		txs := map[*store.Tx]bool{}
		runs := make([]int, writes)
		release := make(chan struct{})
		held := make(chan struct{})
		go func() { // holds SQLite's one runner (one of PostgreSQL's eight)
			_ = b.Do(func(ctx context.Context, tx *store.Tx) error {
				close(held)
				<-release
				return nil
			})
		}()
		errs := queuedWrites(held, release, writes, func(i int) error {
			return b.Do(func(ctx context.Context, tx *store.Tx) error {
				mu.Lock()
				txs[tx] = true
				runs[i]++
				mu.Unlock()
				if _, err := insertWidget(ctx, tx, sc, fmt.Sprint("w", i), nil); err != nil {
					return err
				}
				if i%(writes/failing) == 0 {
					return bad
				}
				return nil
			})
		})
		for i := range writes {
			failed := i%(writes/failing) == 0
			if (errs[i] != nil) != failed || failed && !errors.Is(errs[i], bad) {
				t.Errorf("write %d: %v", i, errs[i])
			}
			if n := runs[i]; failed && n > 2 || !failed && n > 1+failing {
				t.Errorf("write %d ran %d times", i, n)
			}
		}
		// One runner: one batch of 64, committed in at most 1+4 shared
		// transactions, plus the 4 failures alone (each alone: 64).
		if db.Dialect().Name() == "sqlite" && len(txs) > 1+2*failing {
			t.Errorf("the writes ran in %d transactions, want at most %d", len(txs), 1+2*failing)
		}
		t.Logf("%d writes, %d failing: %d transactions", writes, failing, len(txs))
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != writes-failing {
			t.Errorf("%d widgets, want the %d good writes", n, writes-failing)
		}
	}, widgets)
}

// batcherCrashEnv carries the database URL to the child process of
// TestBatcherCrashLosesNothingAcknowledged.
const batcherCrashEnv = "TENANTKIT_BATCHER_CRASH_URL"

// A process killed (SIGKILL) while concurrent writers group-commit loses
// no write it acknowledged: the child prints each write's name once Do
// returned nil, the parent kills it mid-stream and finds every printed
// name in the database.
func TestBatcherCrashLosesNothingAcknowledged(t *testing.T) {
	if url := os.Getenv(batcherCrashEnv); url != "" {
		batcherCrashChild(t, url)
		return
	}
	storetest.EachURL(t, func(t *testing.T, url string) {
		db, err := store.Open(t.Context(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Migrate(t.Context(), widgets); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBatcherCrashLosesNothingAcknowledged$", "-test.count=1")
		cmd.Env = append(os.Environ(), batcherCrashEnv+"="+url)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var acked []string
		lines := bufio.NewScanner(out)
		for lines.Scan() && len(acked) < 2000 {
			if name, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
				acked = append(acked, name)
			}
		}
		_ = cmd.Process.Kill() // SIGKILL: no deferred code, no clean close
		_ = cmd.Wait()
		if len(acked) < 2000 {
			t.Fatalf("the child acknowledged %d writes before it ended, want 2000", len(acked))
		}
		for lines.Scan() { // what it printed before the kill landed counts too
			if name, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
				acked = append(acked, name)
			}
		}
		stored := map[string]bool{}
		rows, err := db.Query(t.Context(), `SELECT name FROM widgets WHERE tenant_id = $1`, batcherCrashTenant)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			stored[name] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		lost := 0
		for _, name := range acked {
			if !stored[name] {
				lost++
			}
		}
		t.Logf("%d writes acknowledged before the kill, %d stored, %d acknowledged and lost", len(acked), len(stored), lost)
		if lost > 0 {
			t.Errorf("%d acknowledged writes lost", lost)
		}
	})
}

const batcherCrashTenant = "crash-tenant"

// batcherCrashChild writes with 16 concurrent writers through one
// Batcher until it is killed, printing each acknowledged write.
func batcherCrashChild(t *testing.T, url string) {
	db, err := store.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := store.NewBatcher(db)
	sc := store.Scope{TenantID: batcherCrashTenant}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				err := b.Do(func(ctx context.Context, tx *store.Tx) error {
					_, err := insertWidget(ctx, tx, sc, name, nil)
					return err
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return
				}
				mu.Lock()
				fmt.Println("acked " + name)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	os.Exit(1) // only a failed write ends a writer; the parent reports the shortfall
}

// A Group writes what queued up in one call; a batch whose write fails is
// written again item by item, and only the bad item fails.
func TestGroup(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		bad := errors.New("refused")
		var mu sync.Mutex
		var calls []int // the size of each write's batch
		release, held := make(chan struct{}), make(chan struct{})
		g := store.NewGroup(db, func(ctx context.Context, tx *store.Tx, names []string) error {
			if names[0] == "hold" {
				close(held)
				<-release
				return nil
			}
			mu.Lock()
			calls = append(calls, len(names))
			mu.Unlock()
			for _, name := range names {
				if _, err := insertWidget(ctx, tx, sc, name, nil); err != nil {
					return err
				}
				if name == "w13" || name == "w31" {
					return bad // after its insert: the insert must not survive
				}
			}
			return nil
		})
		go func() { _ = g.Do("hold") }()
		const writes = 48
		errs := queuedWrites(held, release, writes, func(i int) error { return g.Do(fmt.Sprint("w", i)) })
		for i, err := range errs {
			if want := i == 13 || i == 31; (err != nil) != want || want && !errors.Is(err, bad) {
				t.Errorf("write %d: %v", i, err)
			}
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != writes-2 {
			t.Errorf("%d widgets, want the %d good writes", n, writes-2)
		}
		t.Logf("batch sizes: %v", calls)
		if db.Dialect().Name() == "sqlite" && (len(calls) == 0 || calls[0] != writes) {
			t.Errorf("batch sizes %v: the first write should hold all %d queued items", calls, writes)
		}
	}, widgets)
}

// A Group with SetSingleStatement writes the batches single accepts
// through its function, on the DB outside a transaction, and the others
// through write in a transaction; a single-statement batch that fails is
// written again item by item, and only the bad item fails.
func TestGroupSingleStatement(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		var mu sync.Mutex
		var inTx, alone int // items written by write, by single
		release, held := make(chan struct{}), make(chan struct{})
		g := store.NewGroup(db, func(ctx context.Context, tx *store.Tx, names []string) error {
			if names[0] == "hold" {
				close(held)
				<-release
				return nil
			}
			mu.Lock()
			inTx += len(names)
			mu.Unlock()
			for _, name := range names {
				if _, err := insertWidget(ctx, tx, sc, name, nil); err != nil {
					return err
				}
			}
			return nil
		})
		g.SetSingleStatement(func(names []string) func(ctx context.Context, q store.Querier) error {
			for _, name := range names {
				if name == "hold" || strings.HasPrefix(name, "tx") {
					return nil
				}
			}
			return func(ctx context.Context, q store.Querier) error {
				if _, ok := q.(*store.Tx); ok {
					t.Error("a single-statement batch ran in a transaction")
				}
				var sql strings.Builder
				sql.WriteString(`INSERT INTO widgets (tenant_id, id, name, enabled, data, created_at) VALUES `)
				args := []any{}
				for i, name := range names {
					if i > 0 {
						sql.WriteString(", ")
					}
					n := len(args)
					fmt.Fprintf(&sql, "($%d, $%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5, n+6)
					var value any = name
					if name == "w13" {
						value = nil // name is NOT NULL: the whole statement fails
					}
					args = append(args, sc.TenantID, store.NewID(), value, true, `{}`, q.Now())
				}
				if _, err := q.Exec(ctx, sql.String(), args...); err != nil {
					return err
				}
				mu.Lock()
				alone += len(names)
				mu.Unlock()
				return nil
			}
		})
		go func() { _ = g.Do("hold") }()
		const writes = 40
		errs := queuedWrites(held, release, writes, func(i int) error { return g.Do(fmt.Sprint("w", i)) })
		errs = append(errs, g.Do("tx-alone")) // a batch single refuses
		for i, err := range errs {
			if want := i == 13; (err != nil) != want {
				t.Errorf("write %d: %v", i, err)
			}
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != writes {
			t.Errorf("%d widgets, want the %d good writes", n, writes)
		}
		if alone != writes-1 || inTx != 1 {
			t.Errorf("%d items written by single, %d by write in a transaction; want %d and 1", alone, inTx, writes-1)
		}
	}, widgets)
}

// queuedWrites waits until a write holds the runner (held), starts n
// writes, do(0) to do(n-1), lets them queue behind it for 200 ms, releases
// the holder and returns the writes' errors once all have returned.
func queuedWrites(held <-chan struct{}, release chan<- struct{}, n int, do func(i int) error) []error {
	<-held
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = do(i)
		}()
	}
	time.Sleep(200 * time.Millisecond) // the writes queue up
	close(release)
	wg.Wait()
	return errs
}

// A Group with SetRunners(1) writes one batch at a time on every engine:
// while a batch is being written, what queues up waits for it, and then
// goes in one batch.
func TestGroupRunners(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var mu sync.Mutex
		var calls []int // the size of each batch written while "hold" was held, then after
		holding := false
		release, held := make(chan struct{}), make(chan struct{})
		g := store.NewGroup(db, func(ctx context.Context, tx *store.Tx, names []string) error {
			if names[0] == "hold" {
				mu.Lock()
				holding = true
				mu.Unlock()
				close(held)
				<-release
				mu.Lock()
				holding = false
				mu.Unlock()
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if holding {
				t.Errorf("a batch of %d written while another was being written", len(names))
			}
			calls = append(calls, len(names))
			return nil
		})
		g.SetRunners(1)
		done := make(chan error, 1)
		go func() { done <- g.Do("hold") }()
		<-held
		const writes = 16
		var wg sync.WaitGroup
		for i := range writes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := g.Do(fmt.Sprint("w", i)); err != nil {
					t.Error(err)
				}
			}()
		}
		time.Sleep(100 * time.Millisecond) // time for a second runner, were there one, to take the queue
		close(release)
		wg.Wait()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		t.Logf("batch sizes: %v", calls)
	}, widgets)
}

// A Group with SetYieldBeforeBatch lets a goroutine that became ready
// while a batch was written queue its item before the runner takes the
// next batch, so that the item joins it rather than making one of its
// own. On one P the order is the scheduler's, not the machine's: without
// the yield the runner takes the next batch ("x" alone) before the ready
// goroutine ("w") runs. The scheduler takes a yielded goroutine back
// first one time in 61 (its fairness check), so the test asks for most
// rounds, not all. The batches are single statements that run none, so
// the queue, not an engine, is under test: one engine serves.
func TestGroupYieldBeforeBatch(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	db := storetest.SQLite(t, widgets)
	const rounds = 20
	joined := 0
	for range rounds {
		var mu sync.Mutex
		var batches [][]string
		release, held, wake := make(chan struct{}), make(chan struct{}), make(chan struct{})
		g := store.NewGroup(db, func(ctx context.Context, tx *store.Tx, names []string) error {
			return errors.New("not written in a transaction")
		})
		g.SetSingleStatement(func(names []string) func(ctx context.Context, q store.Querier) error {
			return func(ctx context.Context, q store.Querier) error {
				mu.Lock()
				batches = append(batches, slices.Clone(names))
				mu.Unlock()
				if names[0] == "hold" {
					close(held)
					<-release
					close(wake) // "w" is ready to run, not running: this goroutine goes on
				}
				return nil
			}
		})
		g.SetRunners(1)
		g.SetYieldBeforeBatch()
		do := func(name string) {
			if err := g.Do(name); err != nil {
				t.Error(err)
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() { do("hold") })
		<-held
		wg.Go(func() { do("x") })
		wg.Go(func() { <-wake; do("w") })
		time.Sleep(20 * time.Millisecond) // "x" queues, "w" waits
		close(release)
		wg.Wait()
		if len(batches) == 2 && slices.Equal(batches[1], []string{"x", "w"}) {
			joined++
		} else {
			t.Logf("batches: %v", batches)
		}
	}
	if joined < rounds*3/4 {
		t.Errorf("the ready write joined the next batch in %d of %d rounds, want at least %d", joined, rounds, rounds*3/4)
	}
}
