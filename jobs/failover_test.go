package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// failoverChildEnv carries "<directory> <database URL>" to the child
// process of TestFailoverKill.
const failoverChildEnv = "TENANTKIT_JOBS_FAILOVER_CHILD"

// failoverQueues are the queue classes whose jobs TestFailoverKill kills:
// the default queue (rules' CALL_WEBHOOK actions, password-reset mails,
// retention and other periodic clean-ups, inbound webhooks), the events
// queue (domain event deliveries), and a Background queue (polled less
// often on SQLite: data sync runs, text extraction, payment provider
// webhooks).
var failoverQueues = []struct{ name string }{{jobs.DefaultQueue}, {"events"}, {"failover_bg"}}

// failoverArgs is the payload of the test's jobs: Queue names the queue.
type failoverArgs struct {
	Queue string `json:"queue"`
}

// A kind has one queue, so the test has one kind per queue.
type failoverArgsDefault struct{ failoverArgs }
type failoverArgsEvents struct{ failoverArgs }
type failoverArgsBackground struct{ failoverArgs }

func (failoverArgsDefault) Kind() string    { return "test.failover.default" }
func (failoverArgsEvents) Kind() string     { return "test.failover.events" }
func (failoverArgsBackground) Kind() string { return "test.failover.background" }

// registerFailover registers the three kinds with work on e.
func registerFailover(t testing.TB, e *jobs.Engine, work func(queue string)) {
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(jobs.Register(e, jobs.WorkFunc[failoverArgsDefault](func(ctx context.Context, j *jobs.Job[failoverArgsDefault]) error {
		work(j.Args.Queue)
		return nil
	}), nil))
	must(jobs.Register(e, jobs.WorkFunc[failoverArgsEvents](func(ctx context.Context, j *jobs.Job[failoverArgsEvents]) error {
		work(j.Args.Queue)
		return nil
	}), &jobs.RegisterOpts{Queue: "events"}))
	must(jobs.Register(e, jobs.WorkFunc[failoverArgsBackground](func(ctx context.Context, j *jobs.Job[failoverArgsBackground]) error {
		work(j.Args.Queue)
		return nil
	}), &jobs.RegisterOpts{Queue: "failover_bg", Background: true}))
}

// A process runs one job of each queue class, each blocking, and is
// killed (SIGKILL) while it runs them. Another process runs each job
// again within 10 s of the kill, with the engine's defaults: on SQLite a
// restart right after the kill, on PostgreSQL a second process running
// all along. It logs the time from the kill to each job's new run.
func TestFailoverKill(t *testing.T) {
	if spec := os.Getenv(failoverChildEnv); spec != "" {
		dir, url, _ := strings.Cut(spec, " ")
		failoverChild(t, dir, url)
		return
	}
	if testing.Short() {
		t.Skip("kills a child process")
	}
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		failoverKill(t, storetest.SQLiteURL(t), false)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		failoverKill(t, storetest.IsolatedPostgresURL(t), true)
	})
}

func failoverKill(t *testing.T, url string, running bool) {
	ctx := t.Context()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailoverKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), failoverChildEnv+"="+dir+" "+url)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var mu sync.Mutex
	resumed := map[string]time.Time{}
	open := func() {
		db, err := store.Open(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		e, err := jobs.New(ctx, db, jobs.Config{})
		if err != nil {
			t.Fatal(err)
		}
		registerFailover(t, e, func(queue string) {
			mu.Lock()
			if _, ok := resumed[queue]; !ok {
				resumed[queue] = time.Now()
			}
			mu.Unlock()
		})
		start(t, e)
	}

	// Wait for the child to run all three jobs.
	deadline := time.Now().Add(60 * time.Second)
	for {
		n := 0
		for _, q := range failoverQueues {
			if _, err := os.Stat(filepath.Join(dir, q.name)); err == nil {
				n++
			}
		}
		if n == len(failoverQueues) {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the child ended (%v):\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child did not run the jobs within 60 s:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if running {
		open()
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-exited
	if !running {
		open()
	}
	for {
		mu.Lock()
		n := len(resumed)
		mu.Unlock()
		if n == len(failoverQueues) {
			break
		}
		// The bound is the failover the engine promises, not a measurement.
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("after 10 s only %v of the killed process's jobs ran again", resumed)
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	var times []string
	for _, q := range failoverQueues {
		times = append(times, fmt.Sprintf("%s %s", q.name, resumed[q.name].Sub(killed).Round(10*time.Millisecond)))
	}
	t.Logf("%s: kill to the job's new run: %s", t.Name(), strings.Join(times, ", "))
}

// failoverChild enqueues one job per queue class and works them, each
// writing its marker file and then blocking until the process is killed.
func failoverChild(t *testing.T, dir, url string) {
	ctx := context.Background()
	db, err := store.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := jobs.New(ctx, db, jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	registerFailover(t, e, func(queue string) {
		if err := os.WriteFile(filepath.Join(dir, queue), nil, 0o600); err != nil {
			panic(err)
		}
		select {}
	})
	for _, a := range []jobs.Args{failoverArgsDefault{failoverArgs{jobs.DefaultQueue}}, failoverArgsEvents{failoverArgs{"events"}},
		failoverArgsBackground{failoverArgs{"failover_bg"}}} {
		if _, err := e.Enqueue(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Minute)
	t.Fatal("not killed")
}
