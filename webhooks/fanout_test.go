package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// TestFanOut measures delivery throughput and latency: N events (env
// TENANTKIT_FANOUT_EVENTS; the run is 10000) to 10 webhooks on a
// local receiver that answers 200 at once. It runs on demand only:
//
//	TENANTKIT_FANOUT_EVENTS=10000 TENANTKIT_FANOUT_WORKERS=30 go test ./webhooks -run TestFanOut -v -timeout 30m
//
// (with TENANTKIT_TEST_POSTGRES_URL set, on PostgreSQL too; events are
// committed 10 to a transaction unless TENANTKIT_FANOUT_PER_TX says
// otherwise; TENANTKIT_FANOUT_WORKERS sets the delivery workers, 10 by
// default here, 30 in a Kit). It reports
// deliveries per second from the first event's commit to the last
// delivery's arrival, the event-to-arrival latency p50/p99 (of a
// backlog: the events are committed faster than they can be sent), how
// many deliveries arrived before an earlier event's delivery to the same
// webhook, and then the latency p50/p99 of 200 events committed one at a
// time, 50 per second, once the backlog is gone.
func TestFanOut(t *testing.T) {
	events, _ := strconv.Atoi(os.Getenv("TENANTKIT_FANOUT_EVENTS"))
	if events <= 0 {
		t.Skip("set TENANTKIT_FANOUT_EVENTS to run the fan-out measurement")
	}
	const hooks = 10
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		want := events * hooks
		var mu sync.Mutex
		latencies := make([]time.Duration, 0, want)
		done := make(chan struct{})
		seen := map[string]bool{}
		last := map[string]int{} // webhook (path) → the highest event number it got
		outOfOrder := 0
		var paced []time.Duration // latencies of the paced phase
		// The receiver verifies every request with the Standard Webhooks
		// library: with the webhook's secret, and for the webhooks rotated
		// halfway through, with each of the two secrets a request is signed
		// with.
		secrets := map[string][]*standardwebhooks.Webhook{} // path → verifiers, current first
		unverified, verifiedTwice := 0, 0
		verify := func(path string, body []byte, h http.Header) {
			vs := secrets[path]
			if strings.Contains(h.Get("webhook-signature"), " ") { // both secrets during a rotation
				if len(vs) < 2 {
					unverified++
					return
				}
				for _, v := range vs {
					if v.Verify(body, h) != nil {
						unverified++
						return
					}
				}
				verifiedTwice++
				return
			}
			if vs[len(vs)-1].Verify(body, h) != nil { // signed before the rotation: the first secret
				unverified++
			}
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var p struct {
				Timestamp time.Time `json:"timestamp"`
				Data      struct {
					N int `json:"n"`
				} `json:"data"`
			}
			_ = json.Unmarshal(body, &p)
			mu.Lock()
			verify(r.URL.Path, body, r.Header)
			if id := r.Header.Get("webhook-id"); !seen[id] {
				seen[id] = true
				if p.Data.N < last[r.URL.Path] {
					outOfOrder++
				}
				last[r.URL.Path] = max(last[r.URL.Path], p.Data.N)
				if p.Data.N >= events {
					paced = append(paced, time.Since(p.Timestamp))
				} else if latencies = append(latencies, time.Since(p.Timestamp)); len(latencies) == want {
					close(done)
				}
			}
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		}))
		defer srv.Close()

		svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true})
		if err != nil {
			t.Fatal(err)
		}
		workers, _ := strconv.Atoi(os.Getenv("TENANTKIT_FANOUT_WORKERS"))
		e, err := jobs.New(t.Context(), db, jobs.Config{Queues: map[string]int{"webhooks": max(workers, 10)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.RegisterJobs(e); err != nil {
			t.Fatal(err)
		}
		ctx, sc := storetest.NewScope(t)
		ids := make([]string, hooks)
		for i := range hooks {
			path := "/h" + strconv.Itoa(i)
			w, secret, err := svc.Create(ctx, webhooks.Input{Name: "h" + strconv.Itoa(i), URL: srv.URL + path,
				SubscribedEvents: []string{"orders.*"}})
			if err != nil {
				t.Fatal(err)
			}
			v, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			ids[i], secrets[path] = w.ID, []*standardwebhooks.Webhook{v}
		}
		// rotate gives the first half of the webhooks a new secret; the
		// receiver learns it before any delivery can carry it.
		rotate := func() {
			for i := range hooks / 2 {
				path := "/h" + strconv.Itoa(i)
				mu.Lock()
				r, err := svc.RotateSecret(ctx, ids[i])
				if err == nil {
					var v *standardwebhooks.Webhook
					if v, err = standardwebhooks.NewWebhook(r.Secret); err == nil {
						secrets[path] = append([]*standardwebhooks.Webhook{v}, secrets[path]...)
					}
				}
				mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer func() {
			stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = e.Stop(stop)
		}()

		// PostgreSQL plans its queries from table statistics, which
		// autovacuum refreshes as tables grow. The test servers run with
		// autovacuum off, so the run refreshes them itself, as autovacuum's
		// analyze would (without it, lookups by primary key in a table
		// planned as empty turn into scans).
		if db.Dialect().Name() == "postgres" {
			analyze, stopAnalyze := context.WithCancel(context.Background())
			defer stopAnalyze()
			go func() {
				for {
					select {
					case <-analyze.Done():
						return
					case <-time.After(5 * time.Second):
						_, _ = db.Exec(analyze, `ANALYZE webhook_deliveries`)
					}
				}
			}()
		}

		// Events are committed perTx to a transaction, as a host's batch
		// of changes would be.
		perTx := 10
		if n, _ := strconv.Atoi(os.Getenv("TENANTKIT_FANOUT_PER_TX")); n > 0 {
			perTx = n
		}
		start := time.Now()
		for i := 0; i < events; i += perTx {
			if i == events/2/perTx*perTx {
				rotate()
			}
			err := db.Tx(ctx, func(tx *store.Tx) error {
				for j := i; j < min(i+perTx, events); j++ {
					if _, err := tx.EmitData(ctx, "orders.order.created", sc, map[string]int{"n": j}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		emitted := time.Since(start)
		select {
		case <-done:
		case <-time.After(30 * time.Minute):
			t.Fatalf("%d of %d deliveries arrived", len(latencies), want)
		}
		elapsed := time.Since(start)
		mu.Lock()
		slices.Sort(latencies)
		p50, p99 := latencies[len(latencies)/2], latencies[len(latencies)*99/100]
		mu.Unlock()
		t.Logf("%s: %d events, %d per transaction (emitted in %v) → %d deliveries in %v: %.0f deliveries/s; event-to-arrival p50 %v, p99 %v; %d arrived before an earlier event's; %d verified with both secrets of a rotation, %d did not verify",
			db.Dialect().Name(), events, perTx, emitted.Round(time.Millisecond), want, elapsed.Round(time.Millisecond),
			float64(want)/elapsed.Seconds(), p50.Round(time.Millisecond), p99.Round(time.Millisecond), outOfOrder, verifiedTwice, unverified)
		if unverified > 0 || verifiedTwice == 0 {
			t.Errorf("%d deliveries did not verify, %d verified with both secrets (want 0 and some)", unverified, verifiedTwice)
		}

		// Paced: 200 events one at a time, 50 per second.
		const pacedEvents = 200
		for i := range pacedEvents {
			emitOne(t, db, ctx, sc, events+i)
			time.Sleep(20 * time.Millisecond)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			mu.Lock()
			n := len(paced)
			mu.Unlock()
			if n == pacedEvents*hooks {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("paced: %d of %d deliveries arrived", n, pacedEvents*hooks)
			}
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		slices.Sort(paced)
		t.Logf("%s paced: %d events at 50/s → %d deliveries; event-to-arrival p50 %v, p99 %v; %d out of order in all",
			db.Dialect().Name(), pacedEvents, len(paced), paced[len(paced)/2].Round(time.Millisecond),
			paced[len(paced)*99/100].Round(time.Millisecond), outOfOrder)
		mu.Unlock()
	}, webhooks.Migrations)
}

func emitOne(t *testing.T, db *store.DB, ctx context.Context, sc store.Scope, n int) {
	t.Helper()
	err := db.Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.EmitData(ctx, "orders.order.created", sc, map[string]int{"n": n})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
