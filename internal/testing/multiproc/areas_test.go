package multiproc_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/internal/testing/multiproc"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/webhooks"
)

// TestBackgroundAcrossServers runs two servers with their background
// work started (job workers, event delivery) on one PostgreSQL schema and
// checks the areas whose work crosses servers: a payment's provider
// webhook received by one server and captures sent to both apply once;
// credentials changed through one server are used by a sync run started
// through the other, whose progress every server reports; a dashboard
// layout saved through both with If-Match loses no update.
func TestBackgroundAcrossServers(t *testing.T) {
	c := multiproc.Start(t, multiproc.Options{Start: true,
		Config: full.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true}}})
	a, b := c.Servers[0], c.Servers[1]
	t.Run("payments", func(t *testing.T) { paymentsAcross(t, c, a, b) })
	t.Run("integrations and data sync", func(t *testing.T) { syncAcross(t, c, a, b) })
	t.Run("dashboards", func(t *testing.T) { dashboardsAcross(t, c, a, b) })
}

// Captures of one authorized payment sent at once through both servers,
// while its provider's "captured" webhook arrives through A: the payment
// is captured once (one capture event, the amount captured once), and
// both captures answer 200 captured.
func paymentsAcross(t *testing.T, c *multiproc.Cluster, a, b *multiproc.Server) {
	tn := c.NewTenant(t, "Payments "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn, "payment_gateways.*", "integrations.*")
	secret := "whsec_" + multiproc.RandomHex(8)
	// The gateway's secret set through B, used by A to verify.
	b.Do(t, "PUT", "/api/integrations/gateway_mock/credentials", key, map[string]any{"credentials": map[string]any{"webhookSecret": secret}}).Expect(t, 200)

	const payments_ = 10
	for i := range payments_ {
		s := a.Do(t, "POST", "/api/payment_gateways/sessions", key, map[string]any{"providerKey": "mock", "amount": 25,
			"currencyCode": "USD", "captureMethod": "manual"}).Expect(t, 201).JSON(t)
		id, sid := s["transactionId"].(string), s["sessionId"].(string)
		body, _ := json.Marshal(map[string]any{"id": "evt_" + multiproc.RandomHex(6), "type": "payment.captured",
			"data": map[string]any{"id": sid, "status": "captured"}})
		var wg sync.WaitGroup
		answers := make([]*multiproc.Response, 2)
		for j, srv := range []*multiproc.Server{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[j] = srv.Do(t, "POST", "/api/payment_gateways/capture", key, map[string]any{"transactionId": id})
			}()
		}
		hook := a.DoWith(t, "POST", "/api/payment_gateways/webhook/mock", "", body,
			http.Header{payments.MockSignatureHeader: {payments.MockSignature(body, secret)}})
		wg.Wait()
		if hook.Status != 202 {
			t.Fatalf("payment %d: webhook through A: %d %s", i, hook.Status, hook.Body)
		}
		for j, r := range answers {
			if r.Status != 200 || r.JSON(t)["status"] != "captured" {
				t.Errorf("payment %d: capture through %s: %d %s", i, []string{"A", "B"}[j], r.Status, r.Body)
			}
		}
		// The webhook's job runs on either server; wait until it is applied.
		deadline := time.Now().Add(15 * time.Second)
		var detail map[string]any
		for {
			detail = b.Do(t, "GET", "/api/payment_gateways/transactions/"+id, key, nil).Expect(t, 200).JSON(t)
			if hooks, _ := detail["webhooks"].([]any); len(hooks) == 1 && hooks[0].(map[string]any)["processedAt"] != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("payment %d: the webhook was not processed within 15 s: %v", i, detail)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if detail["status"] != "captured" || fmt.Sprint(detail["amountReceived"]) != "25" {
			t.Errorf("payment %d: status %v, amountReceived %v; want captured, 25", i, detail["status"], detail["amountReceived"])
		}
		if n := countEvents(t, a.DB, tn.ID, payments.EventPaymentCaptured, id); n != 1 {
			t.Errorf("payment %d: %d capture events, want 1", i, n)
		}
	}
}

// countEvents counts the tenant's events of type typ whose data names the
// transaction.
func countEvents(t *testing.T, db *store.DB, tenantID, typ, transactionID string) int {
	t.Helper()
	evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: tenantID, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == typ && strings.Contains(string(ev.Data), transactionID) {
			n++
		}
	}
	return n
}

// The sync source's address changed through A is the one the next run
// started through B reads, every time; the run's progress job reads the
// same through both servers once it ends.
func syncAcross(t *testing.T, c *multiproc.Cluster, a, b *multiproc.Server) {
	tn := c.NewTenant(t, "Sync "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn, "integrations.*", "data_sync.*", "entities.*", "progress.view")
	eid := "mp.sync_" + multiproc.RandomHex(4)
	a.Do(t, "POST", "/api/entities/entities", key, map[string]any{"entityId": eid, "label": "Synced"}).Expect(t, 200)
	a.Do(t, "POST", "/api/entities/definitions", key, map[string]any{"entityId": eid, "key": "name", "kind": "text"}).Expect(t, 200)

	// Two sources: each answers one page of one item named after it.
	var hits [2]atomic.Int64
	sources := make([]*httptest.Server, 2)
	for i := range sources {
		sources[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits[i].Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"items":[{"externalId":"item-%d","data":{"name":"from source %d"}}],"nextCursor":null}`, i, i)
		}))
		t.Cleanup(sources[i].Close)
	}
	const runs = 10
	for i := range runs {
		src := i % 2
		a.Do(t, "PUT", "/api/integrations/sync_http_json/credentials", key,
			map[string]any{"credentials": map[string]any{"baseUrl": sources[src].URL}}).Expect(t, 200)
		before := hits[src].Load()
		run := b.Do(t, "POST", "/api/data_sync/run", key, map[string]any{"integrationId": "sync_http_json", "direction": "import",
			"entityType": eid, "batchSize": 10}).Expect(t, 201).JSON(t)
		runID, jobID := run["id"].(string), run["progressJobId"].(string)
		deadline := time.Now().Add(20 * time.Second)
		var got map[string]any
		for {
			got = a.Do(t, "GET", "/api/data_sync/runs/"+runID, key, nil).Expect(t, 200).JSON(t)
			if got["status"] != "running" && got["status"] != "pending" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %d did not end within 20 s: %v", i, got)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got["status"] != "completed" || hits[src].Load() == before {
			t.Errorf("run %d (source %d): status %v, lastError %v, source called %d times; want completed from source %d",
				i, src, got["status"], got["lastError"], hits[src].Load()-before, src)
		}
		for _, srv := range []*multiproc.Server{a, b} {
			job := srv.Do(t, "GET", "/api/progress/jobs/"+jobID, key, nil).Expect(t, 200).JSON(t)
			if job["status"] != "completed" {
				t.Errorf("run %d: progress job through %s is %v, want completed", i, srv.Name, job["status"])
			}
		}
	}
	// Every run wrote the item of the source it read: the record of the
	// last one names source 1.
	list := b.Do(t, "GET", "/api/entities/records?entityId="+eid, key, nil).Expect(t, 200).JSON(t)
	if !strings.Contains(fmt.Sprint(list), "from source 1") || !strings.Contains(fmt.Sprint(list), "from source 0") {
		t.Errorf("records after the runs: %v", list)
	}
}

// Ten savers, five through each server, each read the layout with its
// ETag and write it back with If-Match, retrying on 412: every save lands
// (the layout ends with every saver's widget) and the version counts them
// all.
func dashboardsAcross(t *testing.T, c *multiproc.Cluster, a, b *multiproc.Server) {
	tn := c.NewTenant(t, "Dashboards "+multiproc.RandomHex(3))
	key := c.NewKey(t, tn, "dashboard.widgets.*", "webhooks.view")
	first, err := strconv.Atoi(strings.Trim(a.Do(t, "PUT", "/api/dashboards/layout", key, map[string]any{"widgets": []any{}}).Expect(t, 200).Header.Get("ETag"), `"`))
	if err != nil {
		t.Fatalf("the first save's ETag: %v", err)
	}
	const savers = 10
	ids := make([]string, savers)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	for i := range savers {
		srv := []*multiproc.Server{a, b}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 0; attempt < 200; attempt++ {
				r := srv.Do(t, "GET", "/api/dashboards/layout", key, nil)
				if r.Status != 200 {
					t.Errorf("saver %d: GET %d %s", i, r.Status, r.Body)
					return
				}
				widgets := r.JSON(t)["widgets"].([]any)
				widgets = append(widgets, map[string]any{"id": ids[i], "definitionId": "webhooks.delivery_health",
					"grid": map[string]any{"x": 0, "y": i * 4, "w": 6, "h": 4}, "config": map[string]any{}})
				put := srv.DoWith(t, "PUT", "/api/dashboards/layout", key, map[string]any{"widgets": widgets},
					http.Header{"If-Match": {r.Header.Get("ETag")}})
				switch put.Status {
				case 200:
					return
				case 412, 409:
					conflicts.Add(1)
					continue
				default:
					t.Errorf("saver %d: PUT %d %s", i, put.Status, put.Body)
					return
				}
			}
			t.Errorf("saver %d: did not land in 200 attempts", i)
		}()
	}
	wg.Wait()
	r := b.Do(t, "GET", "/api/dashboards/layout", key, nil).Expect(t, 200)
	got := map[string]bool{}
	for _, w := range r.JSON(t)["widgets"].([]any) {
		got[w.(map[string]any)["id"].(string)] = true
	}
	for i := range savers {
		if !got[ids[i]] {
			t.Errorf("saver %d's widget is missing: a lost update (layout %s)", i, r.Body)
		}
	}
	if etag, want := r.Header.Get("ETag"), strconv.Quote(strconv.Itoa(first+savers)); etag != want {
		t.Errorf("ETag %s after %d saves, want %s", etag, savers, want)
	}
	t.Logf("dashboards: %d saves through two servers, %d conflicts retried", savers, conflicts.Load())
}
