package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Outbound webhook delivery, end to end over HTTP: webhooks are created
// through the API and target a local receiver (httptest); business rules
// created through the API emit the events; the receiver records what
// arrives and the delivery log routes are read back. Real Kit, real
// stores, both engines. Every test starts the Kit's workers, so it runs on
// storetest.EachIsolated (a schema of its own on PostgreSQL).

// deliveryWait bounds every wait of these tests. A retry waits for the job
// engine to promote its scheduled drain (about every 5 s).
const deliveryWait = 30 * time.Second

// ruleEventPatterns subscribes a webhook to the rule CRUD events.
var ruleEventPatterns = []string{"business_rules.rule.*"}

// deliveryKeys are the fields of a delivery's detail, when it has a
// response body and headers and no error message.
var deliveryKeys = []string{"id", "webhookId", "webhookName", "eventId", "eventType", "messageId", "status", "attemptNumber",
	"maxAttempts", "targetUrl", "payload", "responseStatus", "responseBody", "responseHeaders", "durationMs", "nextRetryAt",
	"enqueuedAt", "lastAttemptAt", "deliveredAt", "tenantId", "organizationId", "createdAt", "updatedAt"}

// deliveryListKeys are the fields of a list item: no payload, no response.
var deliveryListKeys = []string{"id", "webhookId", "webhookName", "eventId", "eventType", "messageId", "status", "attemptNumber",
	"maxAttempts", "targetUrl", "responseStatus", "durationMs", "nextRetryAt", "enqueuedAt", "lastAttemptAt", "deliveredAt",
	"tenantId", "organizationId", "createdAt", "updatedAt"}

var msgIDPattern = regexp.MustCompile(`^msg_[0-9a-f]{32}$`)

// newDeliveryEnv is newTestEnv with webhooks that may target loopback
// addresses and retry after 50 ms, and the Kit's workers started.
func newDeliveryEnv(t *testing.T, db *store.DB) *testEnv {
	t.Helper()
	return newDeliveryEnvRetrying(t, db, 50*time.Millisecond)
}

// newDeliveryEnvRetrying is newDeliveryEnv with retries after retryDelay.
func newDeliveryEnvRetrying(t *testing.T, db *store.DB, retryDelay time.Duration) *testEnv {
	t.Helper()
	e := newTestEnvConfig(t, db, full.Config{
		Webhooks: webhooks.Options{AllowPrivateURLs: true, RetryDelay: func(int) time.Duration { return retryDelay }},
		Rules:    rules.Options{AllowPrivateURLs: true}})
	e.start()
	return e
}

// hookRequest is one request the receiver got.
type hookRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	At           time.Time
	// Attempt counts the requests with this webhook-id so far (1-based).
	Attempt int
}

func (h hookRequest) msgID() string { return h.Header.Get("webhook-id") }

// payload decodes the body.
func (h hookRequest) payload(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(h.Body, &m); err != nil {
		t.Fatalf("delivery body is not a JSON object: %v\n%s", err, h.Body)
	}
	return m
}

// ruleID is the body's data.ruleId.
func (h hookRequest) ruleID(t testing.TB) string {
	t.Helper()
	data, _ := h.payload(t)["data"].(map[string]any)
	id, _ := data["ruleId"].(string)
	return id
}

// hookReply is the receiver's answer.
type hookReply struct {
	status int
	header map[string]string
	body   string
}

// hookReceiver is a local webhook target that records every request and
// answers with its answer function (200 {"ok":true} by default). The
// answer function runs outside the lock and may block.
type hookReceiver struct {
	URL string

	mu     sync.Mutex
	reqs   []hookRequest
	tries  map[string]int
	answer func(hookRequest) hookReply
}

// newHookReceiver starts a receiver, closed when the test ends. Make it
// before the Kit, so that the Kit (and its drains) stops first.
func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	rcv := &hookReceiver{tries: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rcv.mu.Lock()
		id := r.Header.Get("webhook-id")
		rcv.tries[id]++
		req := hookRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now(), Attempt: rcv.tries[id]}
		rcv.reqs = append(rcv.reqs, req)
		answer := rcv.answer
		rcv.mu.Unlock()
		reply := hookReply{status: http.StatusOK, body: `{"ok":true}`}
		if answer != nil {
			reply = answer(req)
		}
		for k, v := range reply.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(reply.status)
		_, _ = io.WriteString(w, reply.body)
	}))
	t.Cleanup(srv.Close)
	rcv.URL = srv.URL
	return rcv
}

// respond sets the answer function.
func (rcv *hookReceiver) respond(f func(hookRequest) hookReply) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	rcv.answer = f
}

// requests returns the requests to path so far, in arrival order.
func (rcv *hookReceiver) requests(path string) []hookRequest {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var out []hookRequest
	for _, r := range rcv.reqs {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// waitRequests waits until path has had at least n requests and returns
// them.
func (rcv *hookReceiver) waitRequests(t testing.TB, path string, n int) []hookRequest {
	t.Helper()
	deadline := time.Now().Add(deliveryWait)
	for {
		got := rcv.requests(path)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver got %d requests on %s within %s, want %d", len(got), path, deliveryWait, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// verifyHook checks the Standard Webhooks signature of req with secret.
func verifyHook(t testing.TB, secret string, req hookRequest) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh.Verify(req.Body, req.Header)
}

// eventually polls cond every 20 ms until it holds, failing the test after
// deliveryWait.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(deliveryWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", deliveryWait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listDeliveries lists deliveries with query (without "?").
func (e *testEnv) listDeliveries(key, query string) map[string]any {
	e.t.Helper()
	return e.do("GET", webhooksBase+"/deliveries?"+query, key, nil).expect(200).JSON()
}

// deliveryItems returns the items of a list body.
func deliveryItems(t testing.TB, list map[string]any) []map[string]any {
	t.Helper()
	items, ok := list["items"].([]any)
	if !ok {
		t.Fatalf("list without items: %v", list)
	}
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i] = it.(map[string]any)
	}
	return out
}

// waitDeliveries waits until the webhook has n deliveries of status and
// returns them (newest first).
func (e *testEnv) waitDeliveries(key, webhookID, status string, n int) []map[string]any {
	e.t.Helper()
	var items []map[string]any
	eventually(e.t, fmt.Sprintf("%d %s deliveries of webhook %s", n, status, webhookID), func() bool {
		list := e.listDeliveries(key, "pageSize=100&webhookId="+webhookID+"&status="+status)
		items = deliveryItems(e.t, list)
		return list["total"] == float64(n) && len(items) == n
	})
	return items
}

// getDelivery returns a delivery's detail.
func (e *testEnv) getDelivery(key, id string) map[string]any {
	e.t.Helper()
	return e.do("GET", webhooksBase+"/deliveries/"+id, key, nil).expect(200).JSON()
}

// deliveryByMsg finds the item with messageId msg.
func deliveryByMsg(t testing.TB, items []map[string]any, msg string) map[string]any {
	t.Helper()
	for _, it := range items {
		if it["messageId"] == msg {
			return it
		}
	}
	t.Fatalf("no delivery with messageId %s among %d", msg, len(items))
	return nil
}

// rawField returns field of a JSON object body, as its bytes.
func rawField(t testing.TB, body []byte, field string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m[field]
}

// jsonValue decodes b. (Payloads are compared as JSON values: on
// PostgreSQL the payload column is jsonb, whose rendering orders keys and
// spaces them its own way, and the API's encoder escapes <, > and &.)
func jsonValue(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// deliveryFixture is a tenant, a key with every webhook and rule feature,
// and a webhook on the receiver's path subscribed to the rule events.
type deliveryFixture struct {
	tenant    tenantFixture
	key       string
	webhookID string
	secret    string
	path      string
}

// deliveryFeatures are the features of deliveryFixture's key.
var deliveryFeatures = slices.Concat([]string{webhooksapi.FeatureWebhooksTest}, allWebhookFeatures, allRuleFeatures)

// deliveryFixture makes a tenant named name with a key and a webhook on
// the receiver's path.
func (e *testEnv) deliveryFixture(rcv *hookReceiver, name, path string) deliveryFixture {
	e.t.Helper()
	tf := e.newTenant(name)
	key := e.newKey(tf, deliveryFeatures...)
	wh := e.createWebhook(key, whBody(name, withField("url", rcv.URL+path), withField("subscribedEvents", ruleEventPatterns)))
	return deliveryFixture{tenant: tf, key: key, webhookID: wh["id"].(string), secret: wh["secret"].(string), path: path}
}

// createRules creates rules with ids over HTTP, one after the other, and
// returns their ids (the "id" field).
func (e *testEnv) createRules(key string, ids ...string) []string {
	e.t.Helper()
	var out []string
	for _, id := range ids {
		out = append(out, e.createRule(key, ruleBody(id))["id"].(string))
	}
	return out
}

// ruleIDsOfRequests returns the data.ruleId of each request.
func ruleIDsOfRequests(t testing.TB, reqs []hookRequest) []string {
	t.Helper()
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.ruleID(t)
	}
	return out
}

// Three rules created over HTTP reach the receiver as three signed
// deliveries, in order; the delivery log lists them delivered, and a
// detail carries the payload sent and the response got, field by field.
func TestWebhookDeliveryEndToEnd(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		longBody := strings.Repeat("r", 5000) // over the 4096 bytes a delivery keeps
		rcv.respond(func(hookRequest) hookReply {
			time.Sleep(20 * time.Millisecond) // so that durationMs has something to measure
			return hookReply{status: 200, header: map[string]string{"X-Receiver": "yes"}, body: longBody}
		})
		e := newDeliveryEnv(t, db)
		f := e.deliveryFixture(rcv, "Acme", "/acme")
		ids := []string{"E2E-1", "E2E-2", "E2E-3"}
		before := time.Now()
		uuids := e.createRules(f.key, ids...)

		// The receiver: three signed POSTs, in creation order.
		items := e.waitDeliveries(f.key, f.webhookID, "delivered", 3)
		reqs := rcv.waitRequests(t, f.path, 3)
		is.Equal(len(reqs), 3) // each sent once
		is.Equal(ruleIDsOfRequests(t, reqs), ids)
		msgs := map[string]bool{}
		for _, r := range reqs {
			is.NoErr(verifyHook(t, f.secret, r))
			is.True(verifyHook(t, webhooks.NewSecret(), r) != nil) // another secret does not verify
			is.Equal(r.Method, "POST")
			is.Equal(r.Header.Get("Content-Type"), "application/json")
			is.Equal(r.Header.Get("User-Agent"), "tenantkit-webhooks")
			is.True(msgIDPattern.MatchString(r.msgID()))
			msgs[r.msgID()] = true
			sig := r.Header.Get("webhook-signature")
			is.True(strings.HasPrefix(sig, "v1,") && !strings.Contains(sig, " ")) // one secret, one signature
			ts, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
			is.NoErr(err)
			is.True(time.Since(time.Unix(ts, 0)) < time.Minute && time.Until(time.Unix(ts, 0)) < time.Minute)
			body := r.payload(t)
			expectKeys(t, "delivery body", body, "type", "timestamp", "data", "idempotencyKey")
			is.Equal(body["type"], "business_rules.rule.created")
			occurred := parseTime(t, "timestamp", body["timestamp"])
			is.True(!occurred.Before(before.Add(-time.Second)) && time.Since(occurred) < time.Minute)
			data := body["data"].(map[string]any)
			is.Equal(data["tenantId"], f.tenant.ID)
			is.Equal(data["id"], uuids[slices.Index(ids, r.ruleID(t))])
		}
		is.Equal(len(msgs), 3) // a message id per delivery

		// The log lists the three, newest first, without payloads or
		// responses.
		list := e.listDeliveries(f.key, "webhookId="+f.webhookID)
		expectKeys(t, "list", list, "items", "total", "page", "pageSize", "totalPages")
		is.Equal(list["total"], 3.0)
		is.Equal(list["page"], 1.0)
		is.Equal(list["pageSize"], 50.0)
		is.Equal(list["totalPages"], 1.0)
		items = deliveryItems(t, list)
		for i, it := range items {
			expectKeys(t, "list item", it, deliveryListKeys...)
			is.Equal(it["messageId"], reqs[2-i].msgID())                    // newest first
			is.Equal(it["eventId"], reqs[2-i].payload(t)["idempotencyKey"]) // the payload's idempotencyKey is the event's id
			is.Equal(it["status"], "delivered")
			is.Equal(it["eventType"], "business_rules.rule.created")
			is.Equal(it["webhookId"], f.webhookID)
			is.Equal(it["webhookName"], "Acme")
			is.Equal(it["attemptNumber"], 1.0)
			is.Equal(it["responseStatus"], 200.0)
		}

		// The detail of the second: what was sent, what came back.
		r := reqs[1]
		first := deliveryByMsg(t, items, r.msgID())
		resp := e.do("GET", webhooksBase+"/deliveries/"+first["id"].(string), f.key, nil).expect(200)
		d := resp.JSON()
		expectKeys(t, "delivery detail", d, deliveryKeys...)
		is.Equal(jsonValue(t, rawField(t, resp.Body, "payload")), jsonValue(t, r.Body)) // the body sent
		is.Equal(d["id"], first["id"])
		is.Equal(d["webhookId"], f.webhookID)
		is.Equal(d["webhookName"], "Acme")
		is.True(store.IsID(d["eventId"].(string)))
		is.Equal(d["eventType"], "business_rules.rule.created")
		is.Equal(d["messageId"], r.msgID())
		is.Equal(d["status"], "delivered")
		is.Equal(d["attemptNumber"], 1.0)
		is.Equal(d["maxAttempts"], 10.0) // the webhook's maxRetries
		is.Equal(d["targetUrl"], rcv.URL+f.path)
		is.Equal(d["responseStatus"], 200.0)
		is.Equal(d["responseBody"], longBody[:4096]) // bounded
		headers, _ := d["responseHeaders"].(map[string]any)
		is.Equal(headers["X-Receiver"], "yes")
		ms, ok := d["durationMs"].(float64)
		is.True(ok && ms >= 20 && ms < 10_000)
		is.Equal(d["nextRetryAt"], nil)
		delivered := parseTime(t, "deliveredAt", d["deliveredAt"])
		attempted := parseTime(t, "lastAttemptAt", d["lastAttemptAt"])
		enqueued := parseTime(t, "enqueuedAt", d["enqueuedAt"])
		is.True(!attempted.Before(enqueued) && !delivered.Before(attempted))
		is.True(time.Since(delivered) < time.Minute)
		is.Equal(d["tenantId"], f.tenant.ID)
		is.Equal(d["organizationId"], f.tenant.OrgID)
		parseTime(t, "createdAt", d["createdAt"])
		parseTime(t, "updatedAt", d["updatedAt"])

		// Filters and pages.
		is.Equal(e.listDeliveries(f.key, "status=delivered")["total"], 3.0)
		is.Equal(e.listDeliveries(f.key, "status=failed")["total"], 0.0)
		is.Equal(e.listDeliveries(f.key, "eventType=business_rules.rule.created")["total"], 3.0)
		is.Equal(e.listDeliveries(f.key, "eventType=business_rules.rule.updated")["total"], 0.0)
		is.Equal(e.listDeliveries(f.key, "webhookId="+store.NewID())["total"], 0.0)
		p := e.listDeliveries(f.key, "pageSize=2&page=2")
		is.Equal(p["total"], 3.0)
		is.Equal(p["totalPages"], 2.0)
		is.Equal(len(deliveryItems(t, p)), 1)
		is.Equal(deliveryItems(t, p)[0]["messageId"], reqs[0].msgID())
		expectWebhookInvalid(t, e.do("GET", webhooksBase+"/deliveries?status=done", f.key, nil),
			map[string]string{"status": "must be one of pending, sending, delivered, failed, expired"})
		expectWebhookInvalid(t, e.do("GET", webhooksBase+"/deliveries?pageSize=0", f.key, nil),
			map[string]string{"pageSize": "must be a positive integer"})
		for _, bad := range []string{store.NewID(), "not-a-uuid", strings.ToUpper(d["id"].(string))} {
			expectBody(t, e.do("GET", webhooksBase+"/deliveries/"+bad, f.key, nil), 404, map[string]any{"error": "Delivery not found"})
		}

		// Updates and deletes are rule.* events too, in order after them.
		e.do("PUT", rulesBase, f.key, ruleBody("E2E-1", withField("id", uuids[0]), withField("ruleName", "Renamed"))).expect(200)
		e.do("DELETE", rulesBase+"?id="+uuids[0], f.key, nil).expect(204)
		e.waitDeliveries(f.key, f.webhookID, "delivered", 5)
		reqs = rcv.waitRequests(t, f.path, 5)
		is.Equal(len(reqs), 5)
		is.Equal(reqs[3].payload(t)["type"], "business_rules.rule.updated")
		is.Equal(reqs[4].payload(t)["type"], "business_rules.rule.deleted")
		is.Equal(reqs[3].ruleID(t), "E2E-1")

		// The webhook counts the successes.
		wh := e.do("GET", whPath(f.webhookID), f.key, nil).expect(200).JSON()
		is.Equal(wh["consecutiveFailures"], 0.0)
		is.True(wh["lastSuccessAt"] != nil)
		is.Equal(wh["lastFailureAt"], nil)
		is.Equal(wh["isActive"], true)
	})
}

// Twenty rules created one after the other arrive in creation order.
func TestWebhookDeliveryOrder(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		e := newDeliveryEnv(t, db)
		f := e.deliveryFixture(rcv, "Ordered", "/ordered")
		var ids []string
		for i := range 20 {
			ids = append(ids, fmt.Sprintf("ORD-%02d", i+1))
		}
		e.createRules(f.key, ids...)
		e.waitDeliveries(f.key, f.webhookID, "delivered", 20)
		reqs := rcv.waitRequests(t, f.path, 20)
		is.Equal(len(reqs), 20) // each once
		is.Equal(ruleIDsOfRequests(t, reqs), ids)
		for _, r := range reqs {
			is.NoErr(verifyHook(t, f.secret, r))
		}
	})
}

// A 500 is retried with the same webhook-id and does not hold back the
// later deliveries; everything ends delivered. Retries wait 2 s here, so
// that the later delivery is sent while the failed one waits: the
// arrival order is exactly 1, 2 (500), 3, 2 (retry).
func TestWebhookDeliveryRetryDoesNotBlock(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		rcv.respond(func(r hookRequest) hookReply {
			var body struct {
				Data struct {
					RuleID string `json:"ruleId"`
				} `json:"data"`
			}
			_ = json.Unmarshal(r.Body, &body)
			if body.Data.RuleID == "RETRY-2" && r.Attempt == 1 {
				return hookReply{status: 500, body: "try again"}
			}
			return hookReply{status: 200, body: "ok"}
		})
		e := newDeliveryEnvRetrying(t, db, 2*time.Second)
		f := e.deliveryFixture(rcv, "Retrying", "/retrying")
		ids := []string{"RETRY-1", "RETRY-2", "RETRY-3"}
		e.createRules(f.key, ids...)

		// RETRY-3 is delivered while RETRY-2 waits for its retry.
		e.waitDeliveries(f.key, f.webhookID, "delivered", 2)
		waiting := e.waitDeliveries(f.key, f.webhookID, "pending", 1)[0]
		w := e.getDelivery(f.key, waiting["id"].(string))
		is.Equal(w["attemptNumber"], 1.0)
		is.Equal(w["responseStatus"], 500.0)
		is.Equal(w["responseBody"], "try again")
		is.Equal(w["errorMessage"], "HTTP 500")
		is.True(w["nextRetryAt"] != nil)

		items := e.waitDeliveries(f.key, f.webhookID, "delivered", 3)
		reqs := rcv.waitRequests(t, f.path, 4)
		is.Equal(len(reqs), 4) // three deliveries, one of them twice

		// First attempts in creation order; the retry after.
		var firsts []hookRequest
		var retried []hookRequest
		for _, r := range reqs {
			is.NoErr(verifyHook(t, f.secret, r))
			if r.Attempt == 1 {
				firsts = append(firsts, r)
			}
			if r.ruleID(t) == "RETRY-2" {
				retried = append(retried, r)
			}
		}
		is.Equal(ruleIDsOfRequests(t, firsts), ids)
		is.Equal(len(retried), 2)
		is.Equal(retried[0].msgID(), retried[1].msgID()) // one message, sent twice
		is.Equal(retried[1].Attempt, 2)
		is.Equal(string(retried[0].Body), string(retried[1].Body))
		is.True(!retried[1].At.Before(retried[0].At.Add(1900 * time.Millisecond))) // after the retry delay
		// RETRY-3 did not wait for RETRY-2's retry.
		order := make([]string, len(reqs))
		for i, r := range reqs {
			order[i] = fmt.Sprintf("%s#%d", r.ruleID(t), r.Attempt)
		}
		is.Equal(order, []string{"RETRY-1#1", "RETRY-2#1", "RETRY-3#1", "RETRY-2#2"})

		for _, r := range firsts {
			d := e.getDelivery(f.key, deliveryByMsg(t, items, r.msgID())["id"].(string))
			is.Equal(d["status"], "delivered")
			is.Equal(d["responseStatus"], 200.0)
			is.Equal(d["nextRetryAt"], nil)
			_, hasErr := d["errorMessage"]
			is.True(!hasErr) // the last attempt's outcome: no error left over
			if r.ruleID(t) == "RETRY-2" {
				is.Equal(d["attemptNumber"], 2.0)
			} else {
				is.Equal(d["attemptNumber"], 1.0)
			}
		}
		wh := e.do("GET", whPath(f.webhookID), f.key, nil).expect(200).JSON()
		is.Equal(wh["consecutiveFailures"], 0.0)
		is.True(wh["lastFailureAt"] != nil)
		is.Equal(wh["isActive"], true)
	})
}

// A 429 with Retry-After is retried no sooner than it asks, although the
// retry delay is 50 ms; while it waits the delivery is pending with the
// 429 and its next attempt's time.
func TestWebhookDeliveryRetryAfter(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		rcv.respond(func(r hookRequest) hookReply {
			if r.Attempt == 1 {
				return hookReply{status: 429, header: map[string]string{"Retry-After": "2"}, body: "slow down"}
			}
			return hookReply{status: 200, body: "ok"}
		})
		e := newDeliveryEnv(t, db)
		f := e.deliveryFixture(rcv, "Limited", "/limited")
		e.createRules(f.key, "LIMITED-1")

		// Pending between the attempts.
		pending := e.waitDeliveries(f.key, f.webhookID, "pending", 1)
		var d map[string]any
		eventually(t, "the 429 recorded", func() bool {
			d = e.getDelivery(f.key, pending[0]["id"].(string))
			return d["responseStatus"] == 429.0 || d["status"] == "delivered"
		})
		is.Equal(d["status"], "pending")
		is.Equal(d["attemptNumber"], 1.0)
		is.Equal(d["responseBody"], "slow down")
		is.Equal(d["errorMessage"], "HTTP 429")
		is.Equal(d["deliveredAt"], nil)
		next := parseTime(t, "nextRetryAt", d["nextRetryAt"])
		last := parseTime(t, "lastAttemptAt", d["lastAttemptAt"])
		if gap := next.Sub(last); gap < 2*time.Second || gap > 5*time.Second { // the attempt's own time on top
			t.Errorf("nextRetryAt is %s after lastAttemptAt, want Retry-After's 2 s", gap)
		}

		e.waitDeliveries(f.key, f.webhookID, "delivered", 1)
		reqs := rcv.waitRequests(t, f.path, 2)
		is.Equal(len(reqs), 2)
		is.Equal(reqs[0].msgID(), reqs[1].msgID())
		if gap := reqs[1].At.Sub(reqs[0].At); gap < 1900*time.Millisecond {
			t.Errorf("retried %s after the 429, want at least Retry-After's 2 s", gap)
		}
		d = e.getDelivery(f.key, pending[0]["id"].(string))
		is.Equal(d["attemptNumber"], 2.0)
		is.Equal(d["responseStatus"], 200.0)
		is.Equal(d["nextRetryAt"], nil)
	})
}

// A 400 fails the delivery without a retry; POST .../retry gives it one
// more attempt with the same webhook-id; a delivered delivery cannot be
// retried.
func TestWebhookDeliveryFailedAndManualRetry(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		rcv.respond(func(hookRequest) hookReply { return hookReply{status: 400, body: `{"error":"bad"}`} })
		e := newDeliveryEnv(t, db)
		f := e.deliveryFixture(rcv, "Picky", "/picky")
		e.createRules(f.key, "PICKY-1")

		failed := e.waitDeliveries(f.key, f.webhookID, "failed", 1)[0]
		id := failed["id"].(string)
		d := e.getDelivery(f.key, id)
		is.Equal(d["status"], "failed")
		is.Equal(d["attemptNumber"], 1.0)
		is.Equal(d["responseStatus"], 400.0)
		is.Equal(d["responseBody"], `{"error":"bad"}`)
		is.Equal(d["errorMessage"], "HTTP 400")
		is.Equal(d["nextRetryAt"], nil)
		is.Equal(d["deliveredAt"], nil)

		// Not retried: a later delivery goes through the queue after it,
		// and the receiver still has one request for it.
		rcv.respond(nil) // 200 from now on
		time.Sleep(100 * time.Millisecond)
		e.createRules(f.key, "PICKY-2")
		e.waitDeliveries(f.key, f.webhookID, "delivered", 1)
		reqs := rcv.requests(f.path)
		is.Equal(len(reqs), 2)
		is.Equal(reqs[0].ruleID(t), "PICKY-1")
		is.Equal(reqs[0].msgID(), d["messageId"])
		is.Equal(reqs[1].ruleID(t), "PICKY-2")
		is.Equal(e.getDelivery(f.key, id)["status"], "failed")
		wh := e.do("GET", whPath(f.webhookID), f.key, nil).expect(200).JSON()
		is.Equal(wh["isActive"], true) // a 400 does not disable

		// Retry: one more attempt, the same message.
		r := e.do("POST", webhooksBase+"/deliveries/"+id+"/retry", f.key, nil).expect(200).JSON()
		is.Equal(r["id"], id)
		is.Equal(r["messageId"], d["messageId"])
		is.True(r["status"] == "pending" || r["status"] == "sending" || r["status"] == "delivered")
		eventually(t, "the retried delivery delivered", func() bool {
			return e.getDelivery(f.key, id)["status"] == "delivered"
		})
		d = e.getDelivery(f.key, id)
		is.Equal(d["attemptNumber"], 2.0)
		is.Equal(d["responseStatus"], 200.0)
		_, hasErr := d["errorMessage"]
		is.True(!hasErr)
		reqs = rcv.waitRequests(t, f.path, 3)
		is.Equal(len(reqs), 3)
		is.Equal(reqs[2].msgID(), d["messageId"])
		is.Equal(reqs[2].Attempt, 2)
		is.Equal(string(reqs[2].Body), string(reqs[0].Body))
		is.NoErr(verifyHook(t, f.secret, reqs[2]))

		// A delivered delivery cannot be retried; an unknown one is not found.
		expectBody(t, e.do("POST", webhooksBase+"/deliveries/"+id+"/retry", f.key, nil), 409,
			map[string]any{"error": "Only a failed or expired delivery can be retried (this one is delivered)"})
		expectBody(t, e.do("POST", webhooksBase+"/deliveries/"+store.NewID()+"/retry", f.key, nil), 404,
			map[string]any{"error": "Delivery not found"})
		time.Sleep(200 * time.Millisecond)
		is.Equal(len(rcv.requests(f.path)), 3)
	})
}

// A 410 fails the delivery and disables the webhook: the delivery queued
// behind it expires unsent, and a later event makes no delivery at all.
// While the first attempt is under way its delivery is "sending".
func TestWebhookDeliveryGoneDisables(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		hold := make(chan struct{})
		var once sync.Once
		release := func() { once.Do(func() { close(hold) }) }
		rcv.respond(func(hookRequest) hookReply {
			<-hold
			return hookReply{status: 410, body: "gone"}
		})
		e := newDeliveryEnv(t, db)
		t.Cleanup(release) // before the Kit closes
		f := e.deliveryFixture(rcv, "Gone", "/gone")
		e.createRules(f.key, "GONE-1")

		// The first attempt is held at the receiver: sending.
		first := rcv.waitRequests(t, f.path, 1)[0]
		sending := e.waitDeliveries(f.key, f.webhookID, "sending", 1)[0]
		is.Equal(sending["messageId"], first.msgID())
		is.Equal(sending["attemptNumber"], 1.0)
		is.Equal(sending["responseStatus"], nil)
		is.True(sending["lastAttemptAt"] != nil)
		// A second event meanwhile queues behind it.
		e.createRules(f.key, "GONE-2")
		queued := e.waitDeliveries(f.key, f.webhookID, "pending", 1)[0]
		release()

		failed := e.waitDeliveries(f.key, f.webhookID, "failed", 1)[0]
		is.Equal(failed["messageId"], first.msgID())
		d := e.getDelivery(f.key, failed["id"].(string))
		is.Equal(d["responseStatus"], 410.0)
		is.Equal(d["errorMessage"], "HTTP 410")
		is.Equal(d["attemptNumber"], 1.0)
		is.Equal(d["nextRetryAt"], nil)

		wh := e.do("GET", whPath(f.webhookID), f.key, nil).expect(200).JSON()
		is.Equal(wh["isActive"], false)
		is.Equal(wh["consecutiveFailures"], 1.0)
		is.True(wh["lastFailureAt"] != nil)
		var types []string
		for _, ev := range e.webhookEvents(f.tenant.ID) {
			types = append(types, ev.Type)
		}
		is.True(slices.Contains(types, "webhooks.webhook.disabled"))

		// The queued one expires unsent.
		expired := e.waitDeliveries(f.key, f.webhookID, "expired", 1)[0]
		is.Equal(expired["id"], queued["id"])
		x := e.getDelivery(f.key, expired["id"].(string))
		is.Equal(x["attemptNumber"], 0.0)
		is.Equal(x["responseStatus"], nil)
		is.Equal(x["errorMessage"], "Webhook is inactive")
		is.Equal(x["nextRetryAt"], nil)
		is.Equal(x["lastAttemptAt"], nil)

		// A later event: no delivery for the inactive webhook, nothing sent.
		e.createRules(f.key, "GONE-3")
		time.Sleep(500 * time.Millisecond)
		is.Equal(e.listDeliveries(f.key, "webhookId="+f.webhookID)["total"], 2.0)
		is.Equal(e.listDeliveries(f.key, "status=pending")["total"], 0.0)
		reqs := rcv.requests(f.path)
		is.Equal(len(reqs), 1)
		is.Equal(reqs[0].ruleID(t), "GONE-1")
	})
}

// POST /webhooks/{id}/test sends one signed webhooks.test.ping now and
// returns its delivery; a failed test send is not retried and does not
// count against the webhook; an inactive webhook can be tested.
func TestWebhookDeliveryTestSend(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		e := newDeliveryEnv(t, db)
		f := e.deliveryFixture(rcv, "Pinged", "/pinged")

		resp := e.do("POST", whPath(f.webhookID, "/test"), f.key, nil).expect(200)
		d := resp.JSON()
		expectKeys(t, "test delivery", d, deliveryKeys...)
		is.Equal(d["status"], "delivered")
		is.Equal(d["eventType"], "webhooks.test.ping")
		is.Equal(d["eventId"], "")
		is.Equal(d["attemptNumber"], 1.0)
		is.Equal(d["maxAttempts"], 1.0)
		is.Equal(d["responseStatus"], 200.0)
		is.Equal(d["responseBody"], `{"ok":true}`)
		is.Equal(d["webhookId"], f.webhookID)
		is.Equal(d["targetUrl"], rcv.URL+f.path)
		is.True(d["durationMs"] != nil && d["deliveredAt"] != nil)
		reqs := rcv.requests(f.path) // sent before the answer
		is.Equal(len(reqs), 1)
		r := reqs[0]
		is.NoErr(verifyHook(t, f.secret, r))
		is.Equal(r.msgID(), d["messageId"])
		is.Equal(jsonValue(t, rawField(t, resp.Body, "payload")), jsonValue(t, r.Body))
		body := r.payload(t)
		is.Equal(body["type"], "webhooks.test.ping")
		data := body["data"].(map[string]any)
		is.Equal(data["ping"], true)
		is.Equal(data["webhookId"], f.webhookID)
		is.Equal(e.getDelivery(f.key, d["id"].(string))["status"], "delivered")
		is.Equal(e.listDeliveries(f.key, "eventType=webhooks.test.ping")["total"], 1.0)

		// Inactive, and the target failing: one attempt, failed, not
		// counted.
		e.do("PUT", whPath(f.webhookID), f.key, map[string]any{"isActive": false}).expect(200)
		rcv.respond(func(hookRequest) hookReply { return hookReply{status: 503, body: "down"} })
		d = e.do("POST", whPath(f.webhookID, "/test"), f.key, nil).expect(200).JSON()
		is.Equal(d["status"], "failed")
		is.Equal(d["responseStatus"], 503.0)
		is.Equal(d["errorMessage"], "HTTP 503")
		is.Equal(d["attemptNumber"], 1.0)
		is.Equal(d["nextRetryAt"], nil)
		time.Sleep(300 * time.Millisecond)
		is.Equal(len(rcv.requests(f.path)), 2)
		is.Equal(e.getDelivery(f.key, d["id"].(string))["status"], "failed")
		wh := e.do("GET", whPath(f.webhookID), f.key, nil).expect(200).JSON()
		is.Equal(wh["consecutiveFailures"], 0.0)
		is.Equal(wh["lastFailureAt"], nil)

		expectWebhookNotFound(t, e.do("POST", whPath(store.NewID(), "/test"), f.key, nil))
	})
}

// After a rotation a delivery carries two signatures, the new secret's
// first: a receiver holding either secret accepts it.
func TestWebhookDeliveryRotation(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		e := newDeliveryEnv(t, db)
		f := e.deliveryFixture(rcv, "Rotating", "/rotating")
		oldSecret := f.secret

		e.createRules(f.key, "ROT-1")
		before := rcv.waitRequests(t, f.path, 1)[0]
		is.Equal(len(strings.Fields(before.Header.Get("webhook-signature"))), 1)
		is.NoErr(verifyHook(t, oldSecret, before))

		newSecret := e.do("POST", whPath(f.webhookID, "/rotate-secret"), f.key, nil).expect(200).JSON()["secret"].(string)
		is.True(newSecret != oldSecret)
		e.createRules(f.key, "ROT-2")
		reqs := rcv.waitRequests(t, f.path, 2)
		is.Equal(len(reqs), 2)
		after := reqs[1]
		is.Equal(after.ruleID(t), "ROT-2")
		is.NoErr(verifyHook(t, oldSecret, after))
		is.NoErr(verifyHook(t, newSecret, after))
		is.True(verifyHook(t, webhooks.NewSecret(), after) != nil)
		sigs := strings.Split(after.Header.Get("webhook-signature"), " ")
		is.Equal(len(sigs), 2)
		only := func(sig string) hookRequest {
			r := after
			r.Header = after.Header.Clone()
			r.Header.Set("webhook-signature", sig)
			return r
		}
		is.NoErr(verifyHook(t, newSecret, only(sigs[0]))) // the new secret's first
		is.NoErr(verifyHook(t, oldSecret, only(sigs[1])))
		is.True(verifyHook(t, oldSecret, only(sigs[0])) != nil)
	})
}

// Two tenants' webhooks on one receiver: each tenant's events reach only
// its own webhook, and neither sees the other's deliveries.
func TestWebhookDeliveryTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		e := newDeliveryEnv(t, db)
		a := e.deliveryFixture(rcv, "Acme", "/acme")
		b := e.deliveryFixture(rcv, "Globex", "/globex")

		e.createRules(a.key, "ACME-1", "ACME-2")
		e.createRules(b.key, "GLOBEX-1")
		aItems := e.waitDeliveries(a.key, a.webhookID, "delivered", 2)
		bItems := e.waitDeliveries(b.key, b.webhookID, "delivered", 1)
		time.Sleep(200 * time.Millisecond)
		aReqs, bReqs := rcv.requests(a.path), rcv.requests(b.path)
		is.Equal(ruleIDsOfRequests(t, aReqs), []string{"ACME-1", "ACME-2"})
		is.Equal(ruleIDsOfRequests(t, bReqs), []string{"GLOBEX-1"})
		for _, r := range aReqs {
			is.NoErr(verifyHook(t, a.secret, r))
			is.True(verifyHook(t, b.secret, r) != nil)
			is.Equal(r.payload(t)["data"].(map[string]any)["tenantId"], a.tenant.ID)
		}
		is.NoErr(verifyHook(t, b.secret, bReqs[0]))
		is.True(verifyHook(t, a.secret, bReqs[0]) != nil)

		// B sees only its own deliveries.
		aID := aItems[0]["id"].(string)
		expectBody(t, e.do("GET", webhooksBase+"/deliveries/"+aID, b.key, nil), 404, map[string]any{"error": "Delivery not found"})
		expectBody(t, e.do("POST", webhooksBase+"/deliveries/"+aID+"/retry", b.key, nil), 404, map[string]any{"error": "Delivery not found"})
		all := e.listDeliveries(b.key, "pageSize=100")
		is.Equal(all["total"], 1.0)
		is.Equal(deliveryItems(t, all)[0]["id"], bItems[0]["id"])
		is.Equal(e.listDeliveries(b.key, "webhookId="+a.webhookID)["total"], 0.0)
		expectWebhookNotFound(t, e.do("POST", whPath(a.webhookID, "/test"), b.key, nil))
		is.Equal(e.listDeliveries(a.key, "pageSize=100")["total"], 2.0)
		is.Equal(e.getDelivery(a.key, aID)["tenantId"], a.tenant.ID)
		is.Equal(len(rcv.requests(a.path)), 2) // B's attempts sent nothing to A
	})
}

// The delivery routes' features: webhooks.view reads the log,
// webhooks.test sends a test, webhooks.manage retries.
func TestWebhookDeliveryFeatures(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		t.Parallel()
		is := is.New(t)
		rcv := newHookReceiver(t)
		rcv.respond(func(hookRequest) hookReply { return hookReply{status: 400} })
		e := newDeliveryEnv(t, db)
		f := e.deliveryFixture(rcv, "Guarded", "/guarded")
		d := e.do("POST", whPath(f.webhookID, "/test"), f.key, nil).expect(200).JSON()
		is.Equal(d["status"], "failed") // so that a retry would be allowed
		id := d["id"].(string)
		is.Equal(len(rcv.requests(f.path)), 1)

		noView := e.newKey(f.tenant, webhooksapi.FeatureWebhooksManage, webhooksapi.FeatureWebhooksSecrets, webhooksapi.FeatureWebhooksTest)
		expectForbiddenFeature(t, e.do("GET", webhooksBase+"/deliveries", noView, nil), webhooksapi.FeatureWebhooksView)
		expectForbiddenFeature(t, e.do("GET", webhooksBase+"/deliveries/"+id, noView, nil), webhooksapi.FeatureWebhooksView)

		noTest := e.newKey(f.tenant, allWebhookFeatures...)
		expectForbiddenFeature(t, e.do("POST", whPath(f.webhookID, "/test"), noTest, nil), webhooksapi.FeatureWebhooksTest)
		is.Equal(len(rcv.requests(f.path)), 1) // nothing sent

		noManage := e.newKey(f.tenant, webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksTest)
		expectForbiddenFeature(t, e.do("POST", webhooksBase+"/deliveries/"+id+"/retry", noManage, nil), webhooksapi.FeatureWebhooksManage)
		is.Equal(e.getDelivery(noManage, id)["status"], "failed") // not retried

		// Each feature alone is enough for its route.
		is.Equal(e.listDeliveries(e.newKey(f.tenant, webhooksapi.FeatureWebhooksView), "")["total"], 1.0)
		rcv.respond(nil)
		is.Equal(e.do("POST", whPath(f.webhookID, "/test"), e.newKey(f.tenant, webhooksapi.FeatureWebhooksTest), nil).expect(200).JSON()["status"], "delivered")
		e.do("POST", webhooksBase+"/deliveries/"+id+"/retry", e.newKey(f.tenant, webhooksapi.FeatureWebhooksManage), nil).expect(200)

		// Without a credential: 401.
		for _, rq := range []struct{ method, path string }{
			{"GET", webhooksBase + "/deliveries"}, {"GET", webhooksBase + "/deliveries/" + id},
			{"POST", webhooksBase + "/deliveries/" + id + "/retry"}, {"POST", whPath(f.webhookID, "/test")},
		} {
			expectBody(t, e.do(rq.method, rq.path, "", nil), 401, map[string]any{"error": "Unauthorized"})
		}
	})
}
