package webhooks_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// failoverChildEnv carries "<database URL> <secret key, hex>" to the child
// process of TestFailoverKill.
const failoverChildEnv = "TENANTKIT_WEBHOOKS_FAILOVER_CHILD"

// The failover test's shape: failoverHooks webhooks of one tenant, each
// subscribed to failoverEvents events, on a loopback receiver that holds
// every request failoverHold before it answers 200; the child is killed
// once failoverKillAt deliveries have arrived.
const (
	failoverHooks  = 3
	failoverEvents = 60
	failoverHold   = 20 * time.Millisecond
	failoverKillAt = 60
	// failoverBound is how long after the kill every delivery must have
	// arrived.
	failoverBound = 10 * time.Second
)

// failoverArrival is one request the failover receiver got.
type failoverArrival struct {
	hook, n        int
	msgID, idemKey string
	at             time.Time
}

// Two processes on one PostgreSQL schema; the one draining the webhooks'
// queues is killed (SIGKILL) mid-stream. The other takes the queues over
// and delivers every event within failoverBound of the kill: none lost,
// each webhook's in the order of its events, and any delivery sent twice
// with the same webhook-id and idempotencyKey (the event's id). It logs
// the failover time (kill to the other process's first delivery, per
// queue) and the duplicates. PostgreSQL only: SQLite is one process's.
//
// The child is this test binary run again (TENANTKIT_WEBHOOKS_FAILOVER_CHILD
// set): a webhooks service with a started job engine and Start (the
// queues' takeover), as in a Kit. The parent commits the events first,
// with its own engine stopped, so that the child's workers take every
// queue; it starts its engine and Start once deliveries flow, reads
// QueueOwners to see the child holding the queues, and kills the child
// after failoverKillAt deliveries.
func TestFailoverKill(t *testing.T) {
	if spec := os.Getenv(failoverChildEnv); spec != "" {
		failoverChild(spec)
		return
	}
	t.Parallel()
	url := storetest.IsolatedPostgresURL(t) // skips without PostgreSQL
	ctx := t.Context()
	var logs logbuf.Buffer
	db, err := store.Open(ctx, url, &store.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx, webhooks.Migrations); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	svc, err := webhooks.New(db, webhooks.Options{SecretKey: key, AllowPrivateURLs: true})
	if err != nil {
		t.Fatal(err)
	}
	engine, err := jobs.New(ctx, db, jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.RegisterJobs(engine); err != nil {
		t.Fatal(err)
	}

	// The receiver.
	var mu sync.Mutex
	var got []failoverArrival
	flowing, killNow := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Data struct {
				N int `json:"n"`
			} `json:"data"`
			IdempotencyKey string `json:"idempotencyKey"`
		}
		_ = json.Unmarshal(raw, &body)
		hook, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/h"))
		a := failoverArrival{hook: hook, n: body.Data.N, msgID: r.Header.Get("webhook-id"), idemKey: body.IdempotencyKey, at: time.Now()}
		mu.Lock()
		got = append(got, a)
		switch len(got) {
		case 1:
			close(flowing)
		case failoverKillAt:
			close(killNow)
		}
		mu.Unlock()
		time.Sleep(failoverHold)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	arrivals := func() []failoverArrival {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}

	// The webhooks and the events, committed before any drain runs.
	sc := store.Scope{TenantID: store.NewID()}
	sctx := store.WithScope(ctx, sc)
	hookIDs := make([]string, failoverHooks)
	for i := range hookIDs {
		w, _, err := svc.Create(sctx, webhooks.Input{Name: fmt.Sprintf("h%d", i), URL: fmt.Sprintf("%s/h%d", srv.URL, i),
			SubscribedEvents: []string{"orders.*"}})
		if err != nil {
			t.Fatal(err)
		}
		hookIDs[i] = w.ID
	}
	eventIDs := make([]string, failoverEvents)
	for n := range eventIDs {
		eventIDs[n] = emit(t, db, sc, "orders.order.created", map[string]any{"n": n}).ID
	}
	svc.Wait()

	// The child drains them.
	child := exec.Command(os.Args[0], "-test.run=^TestFailoverKill$", "-test.count=1")
	child.Env = append(os.Environ(), failoverChildEnv+"="+url+" "+hex.EncodeToString(key))
	var childOut logbuf.Buffer
	child.Stdout, child.Stderr = &childOut, &childOut
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = child.Process.Kill()
			_ = child.Wait()
		}
	})
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: not within 30 s (%d deliveries arrived); child's output:\n%s", what, len(arrivals()), childOut.String())
		}
	}
	wait(flowing, "the child's first delivery")

	// This process joins: its workers and its takeover run from now on.
	if err := engine.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = engine.Stop(stopCtx)
		_ = svc.Stop(stopCtx)
	})
	wait(killNow, fmt.Sprintf("%d deliveries", failoverKillAt))

	// Which process drains what, as an operator would read it.
	owners, err := svc.QueueOwners(ctx, sc.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	childHolder := ":" + strconv.Itoa(child.Process.Pid) + ":"
	childHeld := 0
	for _, o := range owners {
		if strings.Contains(o.Holder, childHolder) && o.Live {
			childHeld++
		}
	}
	if childHeld == 0 {
		t.Fatalf("the child (pid %d) holds none of the queues: %+v", child.Process.Pid, owners)
	}

	killAt := time.Now()
	_ = child.Process.Kill() // SIGKILL: no deferred code, no lease let go
	_ = child.Wait()
	killed = true
	before := len(arrivals())

	// Every event reaches every webhook within failoverBound of the kill.
	want := failoverHooks * failoverEvents
	firsts := func(as []failoverArrival) map[[2]int]bool {
		seen := map[[2]int]bool{}
		for _, a := range as {
			seen[[2]int{a.hook, a.n}] = true
		}
		return seen
	}
	for len(firsts(arrivals())) < want && time.Since(killAt) < failoverBound {
		time.Sleep(10 * time.Millisecond)
	}
	all := arrivals()
	if n := len(firsts(all)); n < want {
		t.Errorf("%d of %d deliveries arrived within %s of the kill", n, want, failoverBound)
	}

	// Failover: per queue, from the kill to the other process's first
	// delivery (any request arriving after the kill), and the gap in
	// deliveries it left.
	resumed := make([]time.Duration, failoverHooks)
	gap := make([]time.Duration, failoverHooks)
	for h := range failoverHooks {
		var last, next time.Time
		for _, a := range all {
			if a.hook != h {
				continue
			}
			if a.at.Before(killAt) {
				last = a.at
			} else if next.IsZero() {
				next = a.at
			}
		}
		if !next.IsZero() {
			resumed[h], gap[h] = next.Sub(killAt), next.Sub(last)
		}
	}

	// Duplicates: the same webhook-id twice. Each carries its event's
	// idempotencyKey, and a delivery (webhook, event) has one webhook-id.
	byMsg := map[string][]failoverArrival{}
	msgOf := map[[2]int]string{}
	order := make([][]int, failoverHooks) // each webhook's events in order of first arrival
	for _, a := range all {
		if a.idemKey != eventIDs[a.n] {
			t.Errorf("webhook h%d, event %d: idempotencyKey %q, want the event's id %s", a.hook, a.n, a.idemKey, eventIDs[a.n])
		}
		k := [2]int{a.hook, a.n}
		if m, ok := msgOf[k]; ok && m != a.msgID {
			t.Errorf("webhook h%d, event %d: sent as %s and as %s", a.hook, a.n, m, a.msgID)
		}
		if _, ok := msgOf[k]; !ok {
			order[a.hook] = append(order[a.hook], a.n)
		}
		msgOf[k] = a.msgID
		byMsg[a.msgID] = append(byMsg[a.msgID], a)
	}
	duplicates := 0
	var dupList []string
	for _, as := range byMsg {
		if len(as) > 1 {
			duplicates += len(as) - 1
			dupList = append(dupList, fmt.Sprintf("h%d/n=%d×%d", as[0].hook, as[0].n, len(as)))
		}
	}
	slices.Sort(dupList)
	for h, ns := range order {
		if !slices.IsSorted(ns) {
			t.Errorf("webhook h%d got its events out of order: %v", h, ns)
		}
	}
	// At most the send under way and the 8 outcomes a drain may have
	// waiting for their record (maxUnrecorded) per queue; with this
	// receiver's 20 ms per request, one or two.
	if duplicates > 9*failoverHooks {
		t.Errorf("%d deliveries sent twice (%v), want at most 9 per queue", duplicates, dupList)
	}

	// The other process recorded them all, and logged the takeovers with
	// the child's holder.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, delivered, err := svc.ListDeliveries(sctx, webhooks.DeliveryFilter{Status: webhooks.StatusDelivered, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if delivered == want {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d of %d deliveries recorded delivered", delivered, want)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	takeovers := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "took over a queue") && strings.Contains(line, "lapsed_holder=") && strings.Contains(line, childHolder) {
			takeovers++
		}
	}
	if takeovers == 0 {
		t.Errorf("no takeover logged naming the child's holder; log:\n%s", logs.String())
	}
	t.Logf("%d deliveries (%d webhooks × %d events, %v per request at the receiver); the child (pid %d) held %d of %d queues and was killed after %d arrivals; %d takeovers logged",
		want, failoverHooks, failoverEvents, failoverHold, child.Process.Pid, childHeld, len(owners), before, takeovers)
	t.Logf("failover: kill → the other process's first delivery per queue %v (max %v); gap in each queue's deliveries %v; all %d delivered %v after the kill",
		roundAll(resumed), slices.Max(resumed).Round(time.Millisecond), roundAll(gap), want, (all[len(all)-1].at.Sub(killAt)).Round(time.Millisecond))
	t.Logf("duplicates: %d (%v), each with its first send's webhook-id and idempotencyKey", duplicates, cmp.Or(strings.Join(dupList, " "), "none"))
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// failoverChild runs a webhooks service draining deliveries, as a Kit's
// process does, until it is killed (or a minute has passed).
func failoverChild(spec string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "failover child:", err)
		os.Exit(2)
	}
	url, keyHex, _ := strings.Cut(spec, " ")
	key, err := hex.DecodeString(keyHex)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, url, nil)
	if err != nil {
		fail(err)
	}
	svc, err := webhooks.New(db, webhooks.Options{SecretKey: key, AllowPrivateURLs: true})
	if err != nil {
		fail(err)
	}
	engine, err := jobs.New(ctx, db, jobs.Config{})
	if err != nil {
		fail(err)
	}
	if err := svc.RegisterJobs(engine); err != nil {
		fail(err)
	}
	if err := engine.Start(ctx); err != nil {
		fail(err)
	}
	if err := svc.Start(ctx); err != nil {
		fail(err)
	}
	time.Sleep(time.Minute) // the parent kills it long before
	fail(fmt.Errorf("not killed within a minute"))
}
