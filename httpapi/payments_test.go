package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/paymentsapi"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The payment gateway routes, black box over HTTP on both engines: session
// creation and its refusals, exact amounts, status, capture, refund,
// cancel, operationId replays, concurrent actions on one payment, tenant
// isolation, the mock provider's webhooks (verification, durable
// processing, history, per-tenant secrets, the rate limit), domain
// events, failing providers and the lists. Every test makes its own
// tenants, so on PostgreSQL (one schema for the package) nothing another
// test writes shows up; the webhook test starts the job engine and so runs
// on a schema of its own (EachIsolated).

const payBase = "/api/payment_gateways"

// payAllFeatures are every payment gateway feature.
var payAllFeatures = []string{paymentsapi.FeaturePaymentsView, paymentsapi.FeaturePaymentsManage, paymentsapi.FeaturePaymentsCapture, paymentsapi.FeaturePaymentsRefund}

// The exact key sets of the documented bodies.
var (
	paySessionKeys = []string{"transactionId", "sessionId", "providerKey", "clientSecret", "redirectUrl", "providerData", "status", "paymentId"}
	payStatusKeys  = []string{"transactionId", "paymentId", "providerKey", "sessionId", "status", "gatewayStatus", "amount",
		"amountReceived", "currencyCode", "createdAt", "updatedAt"}
)

var payMockSessionID = regexp.MustCompile(`^mock_pi_[0-9a-f]+$`)

// payFixture is a tenant with a key holding every payment feature in its
// organization.
type payFixture struct {
	e   *testEnv
	tf  tenantFixture
	key string
}

func paySetup(e *testEnv, name string) *payFixture {
	e.t.Helper()
	tf := e.newTenant(name)
	return &payFixture{e: e, tf: tf, key: e.newKey(tf, payAllFeatures...)}
}

// payJSON decodes a body as an object, keeping each number's text
// (json.Number), so that amounts compare exactly.
func payJSON(t testing.TB, body []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("response body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

// payBody checks the status and that the body is exactly want (numbers
// compared by their JSON text: give them as json.Number).
func payBody(t testing.TB, r *response, status int, want map[string]any) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d %v; body: %s", r.Status, status, want, r.Body)
	}
	got := payJSON(t, r.Body)
	sameJSON(t, fmt.Sprintf("%d body", status), got, want)
	return got
}

// payError checks the status and that the body is exactly {error: msg}.
func payError(t testing.TB, r *response, status int, msg string) {
	t.Helper()
	payBody(t, r, status, map[string]any{"error": msg})
}

// payInvalid checks a 422 {error: "Invalid payload", details} whose
// details name exactly fields.
func payInvalid(t testing.TB, what string, r *response, fields ...string) {
	t.Helper()
	if r.Status != http.StatusUnprocessableEntity {
		t.Errorf("%s: status %d, want 422 naming %v; body: %s", what, r.Status, fields, r.Body)
		return
	}
	body := r.JSON()
	expectKeys(t, what+": 422 body", body, "error", "details")
	if body["error"] != "Invalid payload" {
		t.Errorf("%s: error %v, want Invalid payload", what, body["error"])
	}
	details, _ := body["details"].(map[string]any)
	expectKeys(t, what+": 422 details", details, fields...)
}

// num is a JSON number's text.
func num(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return fmt.Sprintf("%v (not a number)", v)
}

// open opens a session with body (sent as JSON), expects 201 and returns
// the session.
func (f *payFixture) open(body map[string]any) map[string]any {
	f.e.t.Helper()
	r := f.e.do("POST", payBase+"/sessions", f.key, body).expect(201)
	s := payJSON(f.e.t, r.Body)
	expectKeys(f.e.t, "session", s, paySessionKeys...)
	return s
}

// pay opens a session of amount (a JSON number's text) in currency with
// the provider and capture method ("" for the default) and returns its
// transactionId.
func (f *payFixture) pay(provider, amount, currency, method string) string {
	f.e.t.Helper()
	body := map[string]any{"providerKey": provider, "amount": json.Number(amount), "currencyCode": currency}
	if method != "" {
		body["captureMethod"] = method
	}
	return f.open(body)["transactionId"].(string)
}

// act posts to /capture, /refund or /cancel with the fixture's key.
func (f *payFixture) act(action string, body any) *response {
	f.e.t.Helper()
	return f.e.do("POST", payBase+"/"+action, f.key, body)
}

// status is GET /status of a transaction (200, exact keys).
func (f *payFixture) status(id string) map[string]any {
	f.e.t.Helper()
	s := payJSON(f.e.t, f.e.do("GET", payBase+"/status?transactionId="+id, f.key, nil).expect(200).Body)
	expectKeys(f.e.t, "status", s, payStatusKeys...)
	return s
}

// detail is GET /transactions/{id} (200).
func (f *payFixture) detail(id string) map[string]any {
	f.e.t.Helper()
	return payJSON(f.e.t, f.e.do("GET", payBase+"/transactions/"+id, f.key, nil).expect(200).Body)
}

// list is GET /transactions?query (200).
func (f *payFixture) list(query string) map[string]any {
	f.e.t.Helper()
	body := payJSON(f.e.t, f.e.do("GET", payBase+"/transactions?"+query, f.key, nil).expect(200).Body)
	expectKeys(f.e.t, "list", body, "items", "total", "page", "pageSize", "totalPages")
	return body
}

// payItems returns a body's array field as objects.
func payItems(t testing.TB, body map[string]any, field string) []map[string]any {
	t.Helper()
	list, ok := body[field].([]any)
	if !ok {
		t.Fatalf("body without a %s array: %v", field, body)
	}
	out := make([]map[string]any, len(list))
	for i, it := range list {
		out[i] = it.(map[string]any)
	}
	return out
}

// payIDs returns the transactionId of each item of a list body.
func payIDs(t testing.TB, body map[string]any) []string {
	t.Helper()
	var ids []string
	for _, it := range payItems(t, body, "items") {
		ids = append(ids, it["transactionId"].(string))
	}
	return ids
}

// payEvents returns the types of the tenant's payment_gateways.* events
// about the transaction, oldest first, and their data.
func (e *testEnv) payEvents(tenantID, transactionID string) ([]string, []map[string]any) {
	e.t.Helper()
	var types []string
	var data []map[string]any
	for _, ev := range e.events(tenantID, "payment_gateways.") {
		d := payJSON(e.t, ev.Data)
		if d["transactionId"] != transactionID {
			continue
		}
		types = append(types, ev.Type)
		data = append(data, d)
	}
	return types, data
}

// payResult is the status and body of one concurrent request.
type payResult struct {
	status int
	body   []byte
}

// payConcurrently sends n POSTs to path with key at once, against the
// environment's handler, body(i) being the i-th request's JSON body. It
// never touches t from the goroutines.
func (e *testEnv) payConcurrently(n int, path, key string, body func(i int) any) []payResult {
	e.t.Helper()
	ctx := e.t.Context()
	bodies := make([][]byte, n)
	for i := range n {
		b, err := json.Marshal(body(i))
		if err != nil {
			e.t.Fatal(err)
		}
		bodies[i] = b
	}
	out := make([]payResult, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := httptest.NewRequestWithContext(ctx, "POST", path, bytes.NewReader(bodies[i]))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Api-Key", key)
			rec := httptest.NewRecorder()
			<-start
			e.handler.ServeHTTP(rec, req)
			out[i] = payResult{status: rec.Code, body: rec.Body.Bytes()}
		})
	}
	close(start)
	wg.Wait()
	return out
}

// payCount counts results by status and fails on any status outside want.
func payCount(t testing.TB, results []payResult, want ...int) map[int]int {
	t.Helper()
	counts := map[int]int{}
	for _, r := range results {
		counts[r.status]++
		if !slices.Contains(want, r.status) {
			t.Errorf("concurrent request answered %d: %s", r.status, r.body)
		}
	}
	return counts
}

func TestPaymentSessions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		a := paySetup(e, "Acme")
		b := paySetup(e, "Globex")

		// The Kit's providers.
		payBody(t, e.do("GET", payBase+"/providers", a.key, nil), 200, map[string]any{
			"items": []any{map[string]any{"providerKey": "mock"}, map[string]any{"providerKey": "mock_processing"},
				map[string]any{"providerKey": "stripe"}},
			"total": json.Number("3")})

		// Automatic capture (the default): the mock captures at once.
		s := a.open(map[string]any{"providerKey": "mock", "amount": 10, "currencyCode": "USD"})
		sid, _ := s["sessionId"].(string)
		is.True(payMockSessionID.MatchString(sid))      // sessionId is mock_pi_<hex>
		is.Equal(s["clientSecret"], "mock_secret_"+sid) // clientSecret
		is.Equal(s["redirectUrl"], nil)
		is.Equal(s["providerKey"], "mock")
		is.Equal(s["status"], "captured")
		_, isObject := s["providerData"].(map[string]any)
		is.True(isObject) // providerData is an object
		id := s["transactionId"].(string)
		is.True(store.IsID(id))
		is.True(store.IsID(s["paymentId"].(string)))
		is.True(s["paymentId"] != id)

		st := a.status(id)
		is.Equal(st["transactionId"], id)
		is.Equal(st["paymentId"], s["paymentId"])
		is.Equal(st["providerKey"], "mock")
		is.Equal(st["sessionId"], sid)
		is.Equal(st["status"], "captured")
		is.Equal(st["gatewayStatus"], "captured")
		is.Equal(num(st["amount"]), "10")
		is.Equal(num(st["amountReceived"]), "10")
		is.Equal(st["currencyCode"], "USD")
		parseTime(t, "createdAt", st["createdAt"])
		parseTime(t, "updatedAt", st["updatedAt"])

		// The capture methods and the processing mock.
		for _, c := range []struct {
			provider, method, status, received string
		}{
			{"mock", "automatic", "captured", "5"},
			{"mock", "manual", "authorized", "0"},
			{"mock_processing", "", "pending", "0"},
			{"mock_processing", "manual", "pending", "0"},
		} {
			body := map[string]any{"providerKey": c.provider, "amount": 5, "currencyCode": "usd"}
			if c.method != "" {
				body["captureMethod"] = c.method
			}
			s := a.open(body)
			if s["status"] != c.status {
				t.Errorf("%s %q session status %v, want %s", c.provider, c.method, s["status"], c.status)
			}
			st := a.status(s["transactionId"].(string))
			is.Equal(st["status"], c.status)
			is.Equal(st["currencyCode"], "USD") // stored upper-case
			is.Equal(num(st["amountReceived"]), c.received)
		}

		// Amounts round-trip exactly (no float64 on the way).
		for _, c := range []struct{ amount, currency string }{
			{"10.1", "USD"}, {"0.3", "USD"}, {"19.99", "USD"}, {"1000", "JPY"}, {"1.234", "KWD"}, {"0.01", "USD"},
			{"1.1", "EUR"}, {"123456789.99", "USD"},
		} {
			id := a.pay("mock", c.amount, c.currency, "")
			st := a.status(id)
			if num(st["amount"]) != c.amount || num(st["amountReceived"]) != c.amount || st["currencyCode"] != c.currency {
				t.Errorf("session of %s %s: status shows amount %s, amountReceived %s, currency %v", c.amount, c.currency,
					num(st["amount"]), num(st["amountReceived"]), st["currencyCode"])
			}
			if d := a.detail(id); num(d["amount"]) != c.amount {
				t.Errorf("session of %s %s: detail shows amount %s", c.amount, c.currency, num(d["amount"]))
			}
		}
		// Trailing zeros are the same amount.
		is.Equal(num(a.status(a.pay("mock", "10.50", "USD", ""))["amount"]), "10.5")

		// Refusals: 422 {error: Invalid payload, details} naming the field.
		valid := func(kv ...any) map[string]any {
			m := map[string]any{"providerKey": "mock", "amount": 10, "currencyCode": "USD"}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] == nil {
					delete(m, kv[i].(string))
				} else {
					m[kv[i].(string)] = kv[i+1]
				}
			}
			return m
		}
		for _, c := range []struct {
			what  string
			body  any
			field string
		}{
			{"missing amount", valid("amount", nil), "amount"},
			{"amount null", `{"providerKey":"mock","amount":null,"currencyCode":"USD"}`, "amount"},
			{"amount 0", valid("amount", 0), "amount"},
			{"negative amount", valid("amount", -5), "amount"},
			{"amount as a string", valid("amount", "10"), "amount"},
			{"amount as a boolean", valid("amount", true), "amount"},
			{"currency US", valid("currencyCode", "US"), "currencyCode"},
			{"currency USDD", valid("currencyCode", "USDD"), "currencyCode"},
			{"currency 12$", valid("currencyCode", "12$"), "currencyCode"},
			{"missing currency", valid("currencyCode", nil), "currencyCode"},
			{"captureMethod later", valid("captureMethod", "later"), "captureMethod"},
			{"description of 501 characters", valid("description", strings.Repeat("x", 501)), "description"},
			{"10.001 USD", valid("amount", json.Number("10.001")), "amount"},
			{"10.5 JPY", valid("amount", json.Number("10.5"), "currencyCode", "JPY"), "amount"},
			{"1.2345 KWD", valid("amount", json.Number("1.2345"), "currencyCode", "KWD"), "amount"},
			{"missing providerKey", valid("providerKey", nil), "providerKey"},
		} {
			payInvalid(t, c.what, e.do("POST", payBase+"/sessions", a.key, c.body), c.field)
		}
		// 500 characters (not bytes) is the limit.
		a.open(valid("description", strings.Repeat("é", 500)))
		payError(t, e.do("POST", payBase+"/sessions", a.key, valid("providerKey", "nope")), 422, "No gateway adapter for provider: nope")
		for _, body := range []string{`{"providerKey":"mock","amount":10,`, `nope`, `[1,2]`} {
			r := e.do("POST", payBase+"/sessions", a.key, body)
			if r.Status != 422 {
				t.Errorf("malformed body %s: status %d, want 422; body: %s", body, r.Status, r.Body)
				continue
			}
			if m := r.JSON(); m["error"] == "" || m["error"] == nil {
				t.Errorf("malformed body %s: 422 body %s has no error", body, r.Body)
			}
		}

		// GET /status refusals.
		payError(t, e.do("GET", payBase+"/status", a.key, nil), 400, "transactionId is required")
		payError(t, e.do("GET", payBase+"/status?transactionId=", a.key, nil), 400, "transactionId is required")
		payError(t, e.do("GET", payBase+"/status?transactionId=nope", a.key, nil), 400, "Invalid transactionId")
		payError(t, e.do("GET", payBase+"/status?transactionId="+store.NewID(), a.key, nil), 404, "Transaction not found")
		payError(t, e.do("GET", payBase+"/status?transactionId="+id, b.key, nil), 404, "Transaction not found")
	})
}

func TestPaymentCapture(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		a := paySetup(e, "Acme")

		// Manual session, capture of all of it, twice (idempotent).
		id := a.pay("mock", "10", "USD", "manual")
		want := map[string]any{"status": "captured", "capturedAmount": json.Number("10")}
		payBody(t, a.act("capture", map[string]any{"transactionId": id}), 200, want)
		payBody(t, a.act("capture", map[string]any{"transactionId": id}), 200, want)
		payBody(t, a.act("capture", map[string]any{"transactionId": id, "amount": 3}), 200, want)
		st := a.status(id)
		is.Equal(st["status"], "captured")
		is.Equal(num(st["amountReceived"]), "10")

		// Partial capture, then more than is left, then the rest.
		id = a.pay("mock", "10", "USD", "manual")
		payBody(t, a.act("capture", map[string]any{"transactionId": id, "amount": json.Number("4.5")}), 200,
			map[string]any{"status": "partially_captured", "capturedAmount": json.Number("4.5")})
		payError(t, a.act("capture", map[string]any{"transactionId": id, "amount": 6}), 409,
			"Capture amount 6 exceeds the amount left to capture (5.5)")
		st = a.status(id)
		is.Equal(st["status"], "partially_captured")
		is.Equal(num(st["amountReceived"]), "4.5")
		payBody(t, a.act("capture", map[string]any{"transactionId": id, "amount": json.Number("5.5")}), 200,
			map[string]any{"status": "captured", "capturedAmount": json.Number("10")})
		is.Equal(num(a.status(id)["amountReceived"]), "10")

		// More than the whole payment.
		id = a.pay("mock", "10", "USD", "manual")
		e.do("POST", payBase+"/capture", a.key, map[string]any{"transactionId": id, "amount": 11}).expect(409)
		is.Equal(a.status(id)["status"], "authorized")

		// A bad amount is the caller's: 422.
		for _, amount := range []any{0, -1, "4", json.Number("4.001")} {
			payInvalid(t, fmt.Sprintf("capture amount %v", amount), a.act("capture", map[string]any{"transactionId": id, "amount": amount}), "amount")
		}
		is.Equal(a.status(id)["status"], "authorized")

		// A pending payment (not authorized yet) cannot be captured in
		// part: pending never becomes partially_captured. The refusal
		// comes before the provider is asked.
		pending := a.pay("mock_processing", "10", "USD", "")
		payError(t, a.act("capture", map[string]any{"transactionId": pending, "amount": 4}), 409, `Cannot capture a payment in status "pending"`)
		st = a.status(pending)
		is.Equal(st["status"], "pending")
		is.Equal(num(st["amountReceived"]), "0")
		is.Equal(st["gatewayStatus"], "pending")
		payBody(t, a.act("capture", map[string]any{"transactionId": pending}), 200, want)

		// Cancelled and refunded payments capture nothing.
		payBody(t, a.act("cancel", map[string]any{"transactionId": id}), 200, map[string]any{"status": "cancelled"})
		payError(t, a.act("capture", map[string]any{"transactionId": id}), 409, `Cannot capture a payment in status "cancelled"`)
		refunded := a.pay("mock", "10", "USD", "")
		a.act("refund", map[string]any{"transactionId": refunded}).expect(200)
		is.Equal(a.status(refunded)["status"], "refunded")
		payError(t, a.act("capture", map[string]any{"transactionId": refunded}), 409, `Cannot capture a payment in status "refunded"`)
		partly := a.pay("mock", "10", "USD", "")
		a.act("refund", map[string]any{"transactionId": partly, "amount": 1}).expect(200)
		payError(t, a.act("capture", map[string]any{"transactionId": partly}), 409, `Cannot capture a payment in status "partially_refunded"`)
	})
}

func TestPaymentRefund(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		a := paySetup(e, "Acme")

		id := a.pay("mock", "10", "USD", "")
		r1 := payJSON(t, a.act("refund", map[string]any{"transactionId": id, "amount": 3, "reason": "damaged"}).expect(200).Body)
		expectKeys(t, "refund", r1, "refundId", "status", "refundedAmount")
		is.True(r1["refundId"] != "" && r1["refundId"] != nil)
		is.Equal(r1["status"], "partially_refunded")
		is.Equal(num(r1["refundedAmount"]), "3")
		is.Equal(a.status(id)["status"], "partially_refunded")

		// More than is left (7).
		payError(t, a.act("refund", map[string]any{"transactionId": id, "amount": json.Number("7.01")}), 409,
			"Refund amount 7.01 exceeds the amount left to refund (7)")
		// The rest: refunded, this refund's amount.
		r2 := payJSON(t, a.act("refund", map[string]any{"transactionId": id, "amount": 7}).expect(200).Body)
		is.Equal(r2["status"], "refunded")
		is.Equal(num(r2["refundedAmount"]), "7")
		is.True(r2["refundId"] != r1["refundId"])
		payError(t, a.act("refund", map[string]any{"transactionId": id, "amount": 1}), 409, `Cannot refund a payment in status "refunded"`)
		payError(t, a.act("refund", map[string]any{"transactionId": id}), 409, `Cannot refund a payment in status "refunded"`)

		// The detail lists both refunds, oldest first.
		d := a.detail(id)
		is.Equal(d["status"], "refunded")
		is.Equal(d["redirectUrl"], nil) // the mock gives none: null, as in the session answer
		is.Equal(num(d["amountReceived"]), "10")
		is.Equal(num(d["refundedAmount"]), "10")
		refunds := payItems(t, d, "refunds")
		is.Equal(len(refunds), 2)
		for i, want := range []struct {
			r      map[string]any
			amount string
			reason string
		}{{r1, "3", "damaged"}, {r2, "7", ""}} {
			got := refunds[i]
			expectKeys(t, "refund entry", got, "id", "transactionId", "refundId", "amount", "reason", "gatewayStatus", "createdAt")
			is.Equal(got["refundId"], want.r["refundId"])
			is.Equal(num(got["amount"]), want.amount)
			is.Equal(got["reason"], want.reason)
			is.Equal(got["transactionId"], id)
			parseTime(t, "refund createdAt", got["createdAt"])
		}
		is.Equal(len(payItems(t, d, "webhooks")), 0)

		// Without an amount, all of what is left.
		id = a.pay("mock", "19.99", "USD", "")
		a.act("refund", map[string]any{"transactionId": id, "amount": json.Number("0.99")}).expect(200)
		r := payJSON(t, a.act("refund", map[string]any{"transactionId": id}).expect(200).Body)
		is.Equal(r["status"], "refunded")
		is.Equal(num(r["refundedAmount"]), "19")

		// A payment that is not captured refunds nothing.
		auth := a.pay("mock", "10", "USD", "manual")
		payError(t, a.act("refund", map[string]any{"transactionId": auth, "amount": 1}), 409, `Cannot refund a payment in status "authorized"`)
		pending := a.pay("mock_processing", "10", "USD", "")
		payError(t, a.act("refund", map[string]any{"transactionId": pending}), 409, `Cannot refund a payment in status "pending"`)
		is.Equal(len(payItems(t, a.detail(auth), "refunds")), 0)

		// Reason: at most 200 characters; bad amounts are 422.
		id = a.pay("mock", "10", "USD", "")
		payInvalid(t, "reason of 201", a.act("refund", map[string]any{"transactionId": id, "amount": 1, "reason": strings.Repeat("r", 201)}), "reason")
		for _, amount := range []any{0, -1, "1", json.Number("0.001")} {
			payInvalid(t, fmt.Sprintf("refund amount %v", amount), a.act("refund", map[string]any{"transactionId": id, "amount": amount}), "amount")
		}
		is.Equal(a.status(id)["status"], "captured")
		a.act("refund", map[string]any{"transactionId": id, "amount": 1, "reason": strings.Repeat("é", 200)}).expect(200)
	})
}

func TestPaymentCancel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		a := paySetup(e, "Acme")

		for _, c := range []struct{ provider, method, from string }{
			{"mock", "manual", "authorized"},
			{"mock_processing", "", "pending"},
		} {
			id := a.pay(c.provider, "10", "USD", c.method)
			is.Equal(a.status(id)["status"], c.from)
			payBody(t, a.act("cancel", map[string]any{"transactionId": id}), 200, map[string]any{"status": "cancelled"})
			is.Equal(a.status(id)["status"], "cancelled")
			payError(t, a.act("cancel", map[string]any{"transactionId": id}), 409, `Cannot cancel a payment in status "cancelled"`)
		}
		id := a.pay("mock", "10", "USD", "")
		payError(t, a.act("cancel", map[string]any{"transactionId": id}), 409, `Cannot cancel a payment in status "captured"`)
		is.Equal(a.status(id)["status"], "captured")
		a.act("refund", map[string]any{"transactionId": id, "amount": 1}).expect(200)
		payError(t, a.act("cancel", map[string]any{"transactionId": id}), 409, `Cannot cancel a payment in status "partially_refunded"`)
	})
}

func TestPaymentOperationID(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		a := paySetup(e, "Acme")

		// Refund: the same operationId replays the first answer.
		id := a.pay("mock", "10", "USD", "")
		first := payJSON(t, a.act("refund", map[string]any{"transactionId": id, "amount": 3, "operationId": "A"}).expect(200).Body)
		is.Equal(first["status"], "partially_refunded")
		is.Equal(num(first["refundedAmount"]), "3")
		events, _ := e.payEvents(a.tf.ID, id)
		for range 2 {
			payBody(t, a.act("refund", map[string]any{"transactionId": id, "amount": 3, "operationId": "A"}), 200, first)
		}
		// A replay answers what the first did, whatever its body says now.
		payBody(t, a.act("refund", map[string]any{"transactionId": id, "amount": 5, "operationId": "A"}), 200, first)
		d := a.detail(id)
		is.Equal(len(payItems(t, d, "refunds")), 1)
		is.Equal(num(d["refundedAmount"]), "3")
		after, _ := e.payEvents(a.tf.ID, id)
		is.Equal(after, events) // a replay emits nothing

		// Different operationIds apply separately, even when equal.
		rB := payJSON(t, a.act("refund", map[string]any{"transactionId": id, "amount": 2, "operationId": "B"}).expect(200).Body)
		rC := payJSON(t, a.act("refund", map[string]any{"transactionId": id, "amount": 2, "operationId": "C"}).expect(200).Body)
		is.True(rB["refundId"] != rC["refundId"])
		is.Equal(num(rB["refundedAmount"]), "2")
		is.Equal(num(rC["refundedAmount"]), "2")
		d = a.detail(id)
		is.Equal(len(payItems(t, d, "refunds")), 3)
		is.Equal(num(d["refundedAmount"]), "7")
		// Replays still answer their own first answers.
		payBody(t, a.act("refund", map[string]any{"transactionId": id, "amount": 2, "operationId": "B"}), 200, rB)
		payBody(t, a.act("refund", map[string]any{"transactionId": id, "operationId": "A"}), 200, first)
		is.Equal(num(a.detail(id)["refundedAmount"]), "7")
		// An operationId of one action is not another's.
		e.do("POST", payBase+"/capture", a.key, map[string]any{"transactionId": id, "operationId": "A"}).expect(409)

		// Capture: the same operationId replays, another applies.
		id = a.pay("mock", "10", "USD", "manual")
		c1 := map[string]any{"status": "partially_captured", "capturedAmount": json.Number("4")}
		payBody(t, a.act("capture", map[string]any{"transactionId": id, "amount": 4, "operationId": "X"}), 200, c1)
		events, _ = e.payEvents(a.tf.ID, id)
		payBody(t, a.act("capture", map[string]any{"transactionId": id, "amount": 4, "operationId": "X"}), 200, c1)
		is.Equal(num(a.status(id)["amountReceived"]), "4")
		after, _ = e.payEvents(a.tf.ID, id)
		is.Equal(after, events)
		payBody(t, a.act("capture", map[string]any{"transactionId": id, "amount": 4, "operationId": "Y"}), 200,
			map[string]any{"status": "partially_captured", "capturedAmount": json.Number("8")})
		is.Equal(num(a.status(id)["amountReceived"]), "8")

		// The same operationId on another payment is another operation.
		other := a.pay("mock", "10", "USD", "")
		a.act("refund", map[string]any{"transactionId": other, "amount": 1, "operationId": "A"}).expect(200)
		is.Equal(num(a.detail(other)["refundedAmount"]), "1")

		// Too long an operationId is refused.
		payInvalid(t, "operationId of 201", a.act("refund", map[string]any{"transactionId": other, "amount": 1,
			"operationId": strings.Repeat("o", 201)}), "operationId")
	})
}

// payCountingProvider is the mock counting the calls that move money at
// the provider.
type payCountingProvider struct {
	*payments.Mock
	mu                       sync.Mutex
	captures, refunds, voids int
}

func (p *payCountingProvider) Capture(ctx context.Context, in payments.CaptureInput) (*payments.CaptureResult, error) {
	p.mu.Lock()
	p.captures++
	p.mu.Unlock()
	return p.Mock.Capture(ctx, in)
}

func (p *payCountingProvider) Refund(ctx context.Context, in payments.RefundInput) (*payments.RefundResult, error) {
	p.mu.Lock()
	p.refunds++
	p.mu.Unlock()
	return p.Mock.Refund(ctx, in)
}

func (p *payCountingProvider) Cancel(ctx context.Context, in payments.CancelInput) (*payments.CancelResult, error) {
	p.mu.Lock()
	p.voids++
	p.mu.Unlock()
	return p.Mock.Cancel(ctx, in)
}

// calls returns the counts and resets them.
func (p *payCountingProvider) calls() (captures, refunds, voids int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	captures, refunds, voids = p.captures, p.refunds, p.voids
	p.captures, p.refunds, p.voids = 0, 0, 0
	return captures, refunds, voids
}

func TestPaymentConcurrency(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		// The provider is called only for what the books record: a refund
		// the payment cannot take must not reach it.
		provider := &payCountingProvider{Mock: payments.NewMock(payments.KeyMock)}
		e := newTestEnvConfig(t, db, full.Config{Payments: payments.Options{
			Providers: payments.NewRegistry(provider, payments.NewMock(payments.KeyMockProcessing))}})
		a := paySetup(e, "Acme")

		// 30 sessions at once: each its own payment, event and list entry.
		results := e.payConcurrently(30, payBase+"/sessions", a.key, func(i int) any {
			return map[string]any{"providerKey": "mock", "amount": json.Number(fmt.Sprintf("%d.01", i+1)), "currencyCode": "USD"}
		})
		is.Equal(payCount(t, results, 201)[201], 30)
		opened := map[string]bool{}
		for _, r := range results {
			opened[payJSON(t, r.body)["transactionId"].(string)] = true
		}
		is.Equal(len(opened), 30)
		is.Equal(num(a.list("")["total"]), "30")
		is.Equal(len(e.events(a.tf.ID, payments.EventSessionCreated)), 30)
		is.Equal(len(e.events(a.tf.ID, payments.EventPaymentCaptured)), 30)

		// 100 refunds of 1 on a payment of 50: exactly 50 succeed.
		id := a.pay("mock", "50", "USD", "")
		results = e.payConcurrently(100, payBase+"/refund", a.key, func(int) any {
			return map[string]any{"transactionId": id, "amount": 1}
		})
		counts := payCount(t, results, 200, 409)
		is.Equal(counts[200], 50)
		is.Equal(counts[409], 50)
		d := a.detail(id)
		is.Equal(d["status"], "refunded")
		is.Equal(num(d["refundedAmount"]), "50")
		is.Equal(num(d["amountReceived"]), "50")
		is.Equal(len(payItems(t, d, "refunds")), 50)
		_, refunds, _ := provider.calls()
		is.Equal(refunds, 50) // the provider refunded 50, no more
		// One event per status change: captured → partially_refunded →
		// refunded.
		types, _ := e.payEvents(a.tf.ID, id)
		is.Equal(types, []string{payments.EventSessionCreated, payments.EventPaymentCaptured, payments.EventPaymentRefunded,
			payments.EventPaymentRefunded})

		// 20 captures of 3 on an authorized payment of 10: 3 succeed, the
		// rest find more asked than is left; never more than authorized.
		id = a.pay("mock", "10", "USD", "manual")
		results = e.payConcurrently(20, payBase+"/capture", a.key, func(int) any {
			return map[string]any{"transactionId": id, "amount": 3}
		})
		counts = payCount(t, results, 200, 409)
		is.Equal(counts[200], 3)
		is.Equal(counts[409], 17)
		var captured []string
		for _, r := range results {
			if r.status == 200 {
				captured = append(captured, num(payJSON(t, r.body)["capturedAmount"]))
			}
		}
		slices.Sort(captured)
		is.Equal(captured, []string{"3", "6", "9"})
		captures, _, _ := provider.calls()
		is.Equal(captures, 3)
		st := a.status(id)
		is.Equal(st["status"], "partially_captured")
		is.Equal(num(st["amountReceived"]), "9")

		// 20 refunds with one operationId: one refund, every answer the same.
		id = a.pay("mock", "10", "USD", "")
		results = e.payConcurrently(20, payBase+"/refund", a.key, func(int) any {
			return map[string]any{"transactionId": id, "amount": 3, "operationId": "same"}
		})
		is.Equal(payCount(t, results, 200)[200], 20)
		for _, r := range results[1:] {
			is.Equal(string(r.body), string(results[0].body))
		}
		d = a.detail(id)
		is.Equal(len(payItems(t, d, "refunds")), 1)
		is.Equal(num(d["refundedAmount"]), "3")
		_, refunds, _ = provider.calls()
		is.Equal(refunds, 1)

		// 10 cancels of one authorized payment: one cancels, the rest find
		// it cancelled.
		id = a.pay("mock", "10", "USD", "manual")
		results = e.payConcurrently(10, payBase+"/cancel", a.key, func(int) any { return map[string]any{"transactionId": id} })
		counts = payCount(t, results, 200, 409)
		is.Equal(counts[200], 1)
		is.Equal(counts[409], 9)
		_, _, voids := provider.calls()
		is.Equal(voids, 1)
		types, _ = e.payEvents(a.tf.ID, id)
		is.Equal(types, []string{payments.EventSessionCreated, payments.EventPaymentAuthorized, payments.EventPaymentCancelled})
	})
}

func TestPaymentTenants(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		a := paySetup(e, "Acme")
		b := paySetup(e, "Globex")

		authorized := a.pay("mock", "10", "USD", "manual")
		captured := a.pay("mock", "10", "USD", "")
		pending := a.pay("mock_processing", "10", "USD", "")
		mine := b.pay("mock", "5", "USD", "")

		// Another tenant's payment and an unknown one are 404 everywhere.
		for _, id := range []string{authorized, captured, pending, store.NewID()} {
			for _, action := range []string{"capture", "refund", "cancel"} {
				for _, body := range []map[string]any{{"transactionId": id}, {"transactionId": id, "amount": 1, "operationId": "op"}} {
					payError(t, b.act(action, body), 404, "Transaction not found")
				}
			}
			payError(t, e.do("GET", payBase+"/status?transactionId="+id, b.key, nil), 404, "Transaction not found")
			payError(t, e.do("GET", payBase+"/transactions/"+id, b.key, nil), 404, "Transaction not found")
		}
		// Nothing of A's changed.
		is.Equal(a.status(authorized)["status"], "authorized")
		is.Equal(a.status(captured)["status"], "captured")
		is.Equal(a.status(pending)["status"], "pending")
		is.Equal(len(payItems(t, a.detail(captured), "refunds")), 0)
		// A's key cannot reach B's either.
		payError(t, a.act("refund", map[string]any{"transactionId": mine}), 404, "Transaction not found")
		is.Equal(b.status(mine)["status"], "captured")

		// A malformed or missing transactionId is the caller's: 422.
		for _, action := range []string{"capture", "refund", "cancel"} {
			for _, body := range []any{map[string]any{"transactionId": "nope"}, map[string]any{}, map[string]any{"transactionId": ""},
				map[string]any{"transactionId": authorized + "x"}} {
				payInvalid(t, action+" with a bad transactionId", b.act(action, body), "transactionId")
			}
			payInvalid(t, action+" with a numeric transactionId", b.act(action, `{"transactionId": 12}`), "transactionId")
			if r := b.act(action, "{"); r.Status != 422 {
				t.Errorf("%s with malformed JSON: status %d, want 422; body: %s", action, r.Status, r.Body)
			}
		}
		payError(t, e.do("GET", payBase+"/transactions/nope", a.key, nil), 404, "Transaction not found")

		// The lists hold the tenant's own only.
		is.Equal(payIDs(t, b.list("")), []string{mine})
		ids := payIDs(t, a.list(""))
		slices.Sort(ids)
		want := []string{authorized, captured, pending}
		slices.Sort(want)
		is.Equal(ids, want)
	})
}

func TestPaymentLists(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		a := paySetup(e, "Acme")
		b := paySetup(e, "Globex")
		empty := b.list("")
		is.Equal(len(payItems(t, empty, "items")), 0)
		is.Equal(num(empty["total"]), "0")
		is.Equal(num(empty["totalPages"]), "0")

		var all []string
		for range 3 {
			all = append(all, a.pay("mock", "10", "USD", ""))
		}
		for range 2 {
			all = append(all, a.pay("mock", "20", "EUR", "manual"))
		}
		all = append(all, a.pay("mock_processing", "30", "JPY", ""))
		b.pay("mock", "1", "USD", "")

		list := a.list("")
		is.Equal(num(list["total"]), "6")
		is.Equal(num(list["page"]), "1")
		is.Equal(num(list["pageSize"]), "20")
		is.Equal(num(list["totalPages"]), "1")
		got := payIDs(t, list)
		is.Equal(len(got), 6)
		for _, it := range payItems(t, list, "items") {
			for _, k := range []string{"transactionId", "paymentId", "providerKey", "sessionId", "status", "gatewayStatus", "amount",
				"amountReceived", "refundedAmount", "currencyCode", "createdAt", "updatedAt"} {
				if _, ok := it[k]; !ok {
					t.Errorf("list item without %s: %v", k, it)
				}
			}
		}

		// Paging: 3 pages of 2, every payment once.
		var paged []string
		for page := 1; page <= 4; page++ {
			p := a.list(fmt.Sprintf("pageSize=2&page=%d", page))
			is.Equal(num(p["total"]), "6")
			is.Equal(num(p["totalPages"]), "3")
			is.Equal(num(p["pageSize"]), "2")
			is.Equal(num(p["page"]), fmt.Sprint(page))
			ids := payIDs(t, p)
			if page <= 3 {
				is.Equal(len(ids), 2)
			} else {
				is.Equal(len(ids), 0)
			}
			paged = append(paged, ids...)
		}
		slices.Sort(paged)
		want := slices.Clone(all)
		slices.Sort(want)
		is.Equal(paged, want)
		is.Equal(num(a.list("pageSize=4")["totalPages"]), "2")
		is.Equal(num(a.list("pageSize=101")["pageSize"]), "100") // at most 100
		for _, q := range []string{"pageSize=0", "page=0", "pageSize=x"} {
			e.do("GET", payBase+"/transactions?"+q, a.key, nil).expect(400)
		}

		// Filters.
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"status=captured", all[0:3]},
			{"status=authorized", all[3:5]},
			{"status=pending", all[5:6]},
			{"status=refunded", nil},
			{"providerKey=mock", all[0:5]},
			{"providerKey=mock_processing", all[5:6]},
			{"providerKey=stripe", nil},
			{"status=captured&providerKey=mock", all[0:3]},
			{"status=captured&providerKey=mock_processing", nil},
		} {
			l := a.list(c.query)
			ids := payIDs(t, l)
			slices.Sort(ids)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(ids, want) || num(l["total"]) != fmt.Sprint(len(want)) {
				t.Errorf("?%s: %v (total %v), want %v", c.query, ids, l["total"], want)
			}
		}
		r := e.do("GET", payBase+"/transactions?status=bogus", a.key, nil).expect(400).JSON()
		details, _ := r["details"].(map[string]any)
		expectKeys(t, "status=bogus details", details, "status")

		// B's list never holds A's.
		for _, id := range payIDs(t, b.list("pageSize=100")) {
			is.True(!slices.Contains(all, id))
		}
		is.Equal(num(b.list("")["total"]), "1")

		// The detail: the transaction with its refunds and webhooks.
		a.act("refund", map[string]any{"transactionId": all[0], "amount": json.Number("2.5"), "reason": "late"}).expect(200)
		d := a.detail(all[0])
		is.Equal(d["transactionId"], all[0])
		is.Equal(d["status"], "partially_refunded")
		is.Equal(num(d["refundedAmount"]), "2.5")
		refunds := payItems(t, d, "refunds")
		is.Equal(len(refunds), 1)
		is.Equal(num(refunds[0]["amount"]), "2.5")
		is.Equal(refunds[0]["reason"], "late")
		is.True(refunds[0]["refundId"] != "")
		is.Equal(len(payItems(t, d, "webhooks")), 0)
		is.Equal(payIDs(t, a.list("status=partially_refunded")), []string{all[0]})
	})
}

func TestPaymentFeatures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		a := paySetup(e, "Acme")
		id := a.pay("mock", "10", "USD", "manual")
		view := e.newKey(a.tf, paymentsapi.FeaturePaymentsView)
		for _, c := range []struct {
			method, path, feature string
		}{
			{"POST", "/sessions", paymentsapi.FeaturePaymentsManage},
			{"POST", "/capture", paymentsapi.FeaturePaymentsCapture},
			{"POST", "/refund", paymentsapi.FeaturePaymentsRefund},
			{"POST", "/cancel", paymentsapi.FeaturePaymentsManage},
		} {
			expectForbidden(t, e.do(c.method, payBase+c.path, view, map[string]any{"transactionId": id}), c.feature)
			e.do(c.method, payBase+c.path, "", map[string]any{"transactionId": id}).expect(401)
		}
		manage := e.newKey(a.tf, paymentsapi.FeaturePaymentsManage)
		expectForbidden(t, e.do("POST", payBase+"/capture", manage, map[string]any{"transactionId": id}), paymentsapi.FeaturePaymentsCapture)
		expectForbidden(t, e.do("POST", payBase+"/refund", manage, map[string]any{"transactionId": id}), paymentsapi.FeaturePaymentsRefund)
		for _, path := range []string{"/status?transactionId=" + id, "/transactions", "/transactions/" + id, "/providers"} {
			expectForbidden(t, e.do("GET", payBase+path, manage, nil), paymentsapi.FeaturePaymentsView)
			e.do("GET", payBase+path, view, nil).expect(200)
			e.do("GET", payBase+path, "", nil).expect(401)
		}
		// Each feature is enough for its route.
		capture := e.newKey(a.tf, paymentsapi.FeaturePaymentsCapture)
		e.do("POST", payBase+"/capture", capture, map[string]any{"transactionId": id}).expect(200)
		refund := e.newKey(a.tf, paymentsapi.FeaturePaymentsRefund)
		e.do("POST", payBase+"/refund", refund, map[string]any{"transactionId": id, "amount": 1}).expect(200)
		e.do("POST", payBase+"/sessions", manage, map[string]any{"providerKey": "mock", "amount": 1, "currencyCode": "USD"}).expect(201)
	})
}

// payFailingProvider is the mock with some of its calls failing.
type payFailingProvider struct {
	*payments.Mock
	createErr, captureErr, refundErr, cancelErr error
}

func (p *payFailingProvider) CreateSession(ctx context.Context, in payments.SessionInput) (*payments.SessionResult, error) {
	if p.createErr != nil {
		return nil, p.createErr
	}
	return p.Mock.CreateSession(ctx, in)
}

func (p *payFailingProvider) Capture(ctx context.Context, in payments.CaptureInput) (*payments.CaptureResult, error) {
	if p.captureErr != nil {
		return nil, p.captureErr
	}
	return p.Mock.Capture(ctx, in)
}

func (p *payFailingProvider) Refund(ctx context.Context, in payments.RefundInput) (*payments.RefundResult, error) {
	if p.refundErr != nil {
		return nil, p.refundErr
	}
	return p.Mock.Refund(ctx, in)
}

func (p *payFailingProvider) Cancel(ctx context.Context, in payments.CancelInput) (*payments.CancelResult, error) {
	if p.cancelErr != nil {
		return nil, p.cancelErr
	}
	return p.Mock.Cancel(ctx, in)
}

func TestPaymentProviderFailures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		const secret = "sk_live_51HxSECRETdoNotShow"
		leak := fmt.Errorf("stripe: invalid API key %s (request req_9f8e7d)", secret)
		logs := &logbuf.Buffer{}
		e := newTestEnvConfig(t, db, full.Config{
			Logger: slog.New(slog.NewTextHandler(logs, nil)),
			Payments: payments.Options{Providers: payments.NewRegistry(payments.NewMock("mock"),
				&payFailingProvider{Mock: payments.NewMock("failing"), createErr: leak},
				&payFailingProvider{Mock: payments.NewMock("declining"), captureErr: payments.DeclinedError("card declined"),
					refundErr: leak, cancelErr: errors.New("connection reset by peer")})},
		})
		a := paySetup(e, "Acme")
		payBody(t, e.do("GET", payBase+"/providers", a.key, nil), 200, map[string]any{
			"items": []any{map[string]any{"providerKey": "declining"}, map[string]any{"providerKey": "failing"},
				map[string]any{"providerKey": "mock"}},
			"total": json.Number("3")})

		// A failing session: 502, the provider's words nowhere in the body,
		// logged in full; nothing stored, nothing emitted.
		r := e.do("POST", payBase+"/sessions", a.key, map[string]any{"providerKey": "failing", "amount": 10, "currencyCode": "USD"}).expect(502)
		body := r.JSON()
		expectKeys(t, "502 body", body, "error")
		msg, _ := body["error"].(string)
		is.True(msg != "")
		for _, word := range []string{secret, "sk_live", "invalid API key", "req_9f8e7d", "stripe"} {
			if strings.Contains(string(r.Body), word) {
				t.Errorf("502 body %s shows the provider's %q", r.Body, word)
			}
		}
		is.True(strings.Contains(logs.String(), secret)) // the cause is logged
		is.Equal(num(a.list("")["total"]), "0")
		is.Equal(len(e.events(a.tf.ID, "payment_gateways.")), 0)

		// A declined capture: 409 with the provider's message; nothing
		// changes.
		id := a.pay("declining", "10", "USD", "manual")
		payError(t, a.act("capture", map[string]any{"transactionId": id}), 409, "card declined")
		payError(t, a.act("capture", map[string]any{"transactionId": id, "amount": 1, "operationId": "op"}), 409, "card declined")
		st := a.status(id)
		is.Equal(st["status"], "authorized")
		is.Equal(num(st["amountReceived"]), "0")
		types, _ := e.payEvents(a.tf.ID, id)
		is.Equal(types, []string{payments.EventSessionCreated, payments.EventPaymentAuthorized})

		// A failing cancel and refund: 502, the payment as it was.
		r = a.act("cancel", map[string]any{"transactionId": id}).expect(502)
		is.True(!strings.Contains(string(r.Body), "connection reset"))
		is.Equal(a.status(id)["status"], "authorized")
		paid := a.pay("declining", "10", "USD", "")
		r = a.act("refund", map[string]any{"transactionId": paid, "amount": 1, "operationId": "op"}).expect(502)
		is.True(!strings.Contains(string(r.Body), secret))
		d := a.detail(paid)
		is.Equal(d["status"], "captured")
		is.Equal(num(d["refundedAmount"]), "0")
		is.Equal(len(payItems(t, d, "refunds")), 0)
		// A failed operation keeps no answer: the same operationId on a
		// working provider call would act (here it fails again).
		a.act("refund", map[string]any{"transactionId": paid, "amount": 1, "operationId": "op"}).expect(502)
		types, _ = e.payEvents(a.tf.ID, paid)
		is.Equal(types, []string{payments.EventSessionCreated, payments.EventPaymentCaptured})
	})
}

func TestPaymentEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		a := paySetup(e, "Acme")
		b := paySetup(e, "Globex")

		expect := func(id string, want ...string) []map[string]any {
			t.Helper()
			types, data := e.payEvents(a.tf.ID, id)
			if !slices.Equal(types, want) {
				t.Errorf("events of %s: %v, want %v", id, types, want)
			}
			return data
		}

		// Automatic: created, captured.
		auto := a.pay("mock", "12.5", "USD", "")
		data := expect(auto, payments.EventSessionCreated, payments.EventPaymentCaptured)
		if len(data) == 2 {
			is.Equal(data[0]["status"], "captured")
			is.Equal(num(data[0]["amount"]), "12.5")
			is.Equal(data[1]["status"], "captured")
			is.Equal(data[1]["previousStatus"], "pending")
			is.Equal(num(data[1]["amountReceived"]), "12.5")
			is.Equal(data[1]["currencyCode"], "USD")
		}
		// Refund in part, then the rest.
		a.act("refund", map[string]any{"transactionId": auto, "amount": 2}).expect(200)
		a.act("refund", map[string]any{"transactionId": auto, "amount": 100}).expect(409)
		data = expect(auto, payments.EventSessionCreated, payments.EventPaymentCaptured, payments.EventPaymentRefunded)
		if len(data) == 3 {
			is.Equal(data[2]["status"], "partially_refunded")
			is.Equal(data[2]["previousStatus"], "captured")
			is.Equal(num(data[2]["refundedAmount"]), "2")
		}
		a.act("refund", map[string]any{"transactionId": auto, "operationId": "rest"}).expect(200)
		a.act("refund", map[string]any{"transactionId": auto, "operationId": "rest"}).expect(200) // replay
		a.act("refund", map[string]any{"transactionId": auto}).expect(409)
		data = expect(auto, payments.EventSessionCreated, payments.EventPaymentCaptured, payments.EventPaymentRefunded,
			payments.EventPaymentRefunded)
		if len(data) == 4 {
			is.Equal(data[3]["status"], "refunded")
			is.Equal(data[3]["previousStatus"], "partially_refunded")
			is.Equal(num(data[3]["refundedAmount"]), "12.5")
		}

		// Manual: created, authorized; captured once, however often asked.
		manual := a.pay("mock", "10", "USD", "manual")
		expect(manual, payments.EventSessionCreated, payments.EventPaymentAuthorized)
		a.act("capture", map[string]any{"transactionId": manual, "amount": 4}).expect(200)
		a.act("capture", map[string]any{"transactionId": manual}).expect(200)
		a.act("capture", map[string]any{"transactionId": manual}).expect(200)
		data = expect(manual, payments.EventSessionCreated, payments.EventPaymentAuthorized, payments.EventPaymentCaptured,
			payments.EventPaymentCaptured)
		if len(data) == 4 {
			is.Equal(data[2]["status"], "partially_captured")
			is.Equal(data[3]["status"], "captured")
			is.Equal(data[3]["previousStatus"], "partially_captured")
		}
		a.act("cancel", map[string]any{"transactionId": manual}).expect(409)
		expect(manual, payments.EventSessionCreated, payments.EventPaymentAuthorized, payments.EventPaymentCaptured,
			payments.EventPaymentCaptured)

		// Cancelled, from authorized and from pending.
		cancel := a.pay("mock", "10", "USD", "manual")
		a.act("cancel", map[string]any{"transactionId": cancel, "operationId": "c"}).expect(200)
		a.act("cancel", map[string]any{"transactionId": cancel, "operationId": "c"}).expect(200)
		a.act("cancel", map[string]any{"transactionId": cancel}).expect(409)
		expect(cancel, payments.EventSessionCreated, payments.EventPaymentAuthorized, payments.EventPaymentCancelled)
		pending := a.pay("mock_processing", "10", "USD", "")
		expect(pending, payments.EventSessionCreated)
		a.act("cancel", map[string]any{"transactionId": pending}).expect(200)
		data = expect(pending, payments.EventSessionCreated, payments.EventPaymentCancelled)
		if len(data) == 2 {
			is.Equal(data[1]["previousStatus"], "pending")
		}

		// Every event is the tenant's, with its organization; B has none of
		// A's.
		for _, ev := range e.events(a.tf.ID, "payment_gateways.") {
			is.Equal(ev.TenantID, a.tf.ID)
			is.Equal(ev.OrganizationID, a.tf.OrgID)
		}
		is.Equal(len(e.events(b.tf.ID, "payment_gateways.")), 0)
	})
}

// payWebhook posts a mock webhook body signed with secret ("" for no
// signature) to provider's webhook route.
func (e *testEnv) payWebhook(provider string, body []byte, secret string) *response {
	e.t.Helper()
	return e.send("POST", payBase+"/webhook/"+provider, body, func(r *http.Request) {
		if secret != "" {
			r.Header.Set(payments.MockSignatureHeader, payments.MockSignature(body, secret))
		}
	})
}

// payEvent is a mock webhook body.
func payEvent(eventID, typ, sessionID, status string) []byte {
	b, _ := json.Marshal(map[string]any{"id": eventID, "type": typ, "data": map[string]any{"id": sessionID, "status": status}})
	return b
}

// waitWebhooks polls the transaction's detail until n of its webhooks are
// processed and returns it.
func (f *payFixture) waitWebhooks(id string, n int) map[string]any {
	f.e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		d := f.detail(id)
		done := 0
		for _, w := range payItems(f.e.t, d, "webhooks") {
			if w["processedAt"] != nil {
				done++
			}
		}
		if done >= n {
			// Read again: the detail reads the payment before its
			// webhooks, so the first read may predate the processing.
			return f.detail(id)
		}
		if time.Now().After(deadline) {
			f.e.t.Fatalf("%d of %d webhooks of %s processed after 15 s: %v", done, n, id, d["webhooks"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPaymentWebhooks(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		var secrets sync.Map // tenant id → its mock webhookSecret
		e := newTestEnvConfig(t, db, full.Config{Payments: payments.Options{
			Credentials: payments.CredentialFunc(func(_ context.Context, tenantID, _ string) (payments.Credentials, error) {
				if s, ok := secrets.Load(tenantID); ok {
					return payments.Credentials{"webhookSecret": s.(string)}, nil
				}
				return payments.Credentials{}, nil
			})}})
		e.start()
		a := paySetup(e, "Acme")
		b := paySetup(e, "Globex")
		secretA, secretB := "whsec_a_"+randomHex(8), "whsec_b_"+randomHex(8)
		secrets.Store(a.tf.ID, secretA)
		secrets.Store(b.tf.ID, secretB)
		accepted := map[string]any{"received": true, "queued": true}

		// A verified webhook is accepted, then applied by the job.
		s := a.open(map[string]any{"providerKey": "mock", "amount": 10, "currencyCode": "USD", "captureMethod": "manual"})
		id, sid := s["transactionId"].(string), s["sessionId"].(string)
		captured := payEvent("evt_1", "payment.captured", sid, "captured")
		payBody(t, e.payWebhook("mock", captured, secretA), 202, accepted)
		d := a.waitWebhooks(id, 1)
		is.Equal(d["status"], "captured")
		is.Equal(num(d["amountReceived"]), "10")
		hooks := payItems(t, d, "webhooks")
		is.Equal(len(hooks), 1)
		is.Equal(hooks[0]["outcome"], "applied")
		is.Equal(hooks[0]["eventId"], "evt_1")
		is.Equal(hooks[0]["eventType"], "payment.captured")
		is.Equal(hooks[0]["providerKey"], "mock")
		is.Equal(hooks[0]["mappedStatus"], "captured")
		is.Equal(hooks[0]["statusBefore"], "authorized")
		is.Equal(hooks[0]["statusAfter"], "captured")
		is.Equal(hooks[0]["transactionId"], id)
		parseTime(t, "receivedAt", hooks[0]["receivedAt"])
		parseTime(t, "processedAt", hooks[0]["processedAt"])
		is.Equal(a.status(id)["status"], "captured")

		// The same event again: accepted, stored and applied once.
		payBody(t, e.payWebhook("mock", captured, secretA), 202, accepted)
		// A late "authorized" after the capture: in the history as ignored,
		// the payment stays captured.
		payBody(t, e.payWebhook("mock", payEvent("evt_2", "payment.authorized", sid, "authorized"), secretA), 202, accepted)
		d = a.waitWebhooks(id, 2)
		hooks = payItems(t, d, "webhooks")
		is.Equal(len(hooks), 2) // no entry for the repeated evt_1
		is.Equal(hooks[0]["eventId"], "evt_1")
		is.Equal(hooks[1]["eventId"], "evt_2")
		is.Equal(hooks[1]["outcome"], "ignored")
		is.Equal(hooks[1]["statusBefore"], "captured")
		is.Equal(hooks[1]["statusAfter"], "captured")
		is.Equal(d["status"], "captured")
		// One event per status change: none for the repeat or the ignored.
		types, _ := e.payEvents(a.tf.ID, id)
		is.Equal(types, []string{payments.EventSessionCreated, payments.EventPaymentAuthorized, payments.EventPaymentCaptured})
		// A capture now changes nothing.
		payBody(t, a.act("capture", map[string]any{"transactionId": id}), 200, map[string]any{"status": "captured", "capturedAmount": json.Number("10")})

		// Refusals: 401 Webhook verification failed, nothing stored.
		other := a.open(map[string]any{"providerKey": "mock", "amount": 7, "currencyCode": "USD", "captureMethod": "manual"})
		oid, osid := other["transactionId"].(string), other["sessionId"].(string)
		body := payEvent("evt_3", "payment.captured", osid, "captured")
		for _, c := range []struct {
			what   string
			body   []byte
			secret string
		}{
			{"bad signature", body, "wrong"},
			{"no signature", body, ""},
			{"tenant B's secret on A's session", body, secretB},
			{"unknown session", payEvent("evt_4", "payment.captured", "mock_pi_0000000000000000", "captured"), secretA},
			{"malformed body", []byte(`{"id":"evt_5","type":`), secretA},
			{"not an object", []byte(`[]`), secretA},
			{"no session", []byte(`{"id":"evt_6","type":"payment.captured","data":{"status":"captured"}}`), secretA},
			// Signed with A's secret, a session id holding NUL: no payment
			// has it, on either engine.
			{"NUL in the session id", []byte(`{"id":"evt_7","type":"payment.cancelled","data":{"id":"` + osid + `\u0000","status":"cancelled"}}`), secretA},
		} {
			r := e.payWebhook("mock", c.body, c.secret)
			if r.Status != 401 {
				t.Errorf("%s: status %d, want 401; body: %s", c.what, r.Status, r.Body)
				continue
			}
			sameJSON(t, c.what+" body", r.JSON(), map[string]any{"error": "Webhook verification failed"})
		}
		// The signature covers the exact body.
		tampered := e.send("POST", payBase+"/webhook/mock", payEvent("evt_3", "payment.captured", osid, "refunded"), func(r *http.Request) {
			r.Header.Set(payments.MockSignatureHeader, payments.MockSignature(body, secretA))
		})
		payError(t, tampered, 401, "Webhook verification failed")
		// A provider that does not exist.
		payError(t, e.payWebhook("nope", body, secretA), 404, "No webhook handler for provider: nope")
		time.Sleep(200 * time.Millisecond)
		d = a.detail(oid)
		is.Equal(d["status"], "authorized")
		is.Equal(len(payItems(t, d, "webhooks")), 0)

		// B's secret verifies B's payments, with B's own event ids (evt_1
		// again is not A's evt_1).
		bs := b.open(map[string]any{"providerKey": "mock", "amount": 5, "currencyCode": "USD", "captureMethod": "manual"})
		bid := bs["transactionId"].(string)
		payBody(t, e.payWebhook("mock", payEvent("evt_1", "payment.captured", bs["sessionId"].(string), "captured"), secretB), 202, accepted)
		d = b.waitWebhooks(bid, 1)
		is.Equal(d["status"], "captured")
		is.Equal(payItems(t, d, "webhooks")[0]["outcome"], "applied")
		is.Equal(len(payItems(t, a.detail(id), "webhooks")), 2)

		// The processing mock: pending, then authorized, then captured by
		// webhooks; then a refund webhook.
		ps := a.open(map[string]any{"providerKey": "mock_processing", "amount": json.Number("19.99"), "currencyCode": "USD"})
		pid, psid := ps["transactionId"].(string), ps["sessionId"].(string)
		is.Equal(ps["status"], "pending")
		payBody(t, e.payWebhook("mock_processing", payEvent("p1", "payment.authorized", psid, "authorized"), secretA), 202, accepted)
		is.Equal(a.waitWebhooks(pid, 1)["status"], "authorized")
		payBody(t, e.payWebhook("mock_processing", payEvent("p2", "payment.captured", psid, "captured"), secretA), 202, accepted)
		d = a.waitWebhooks(pid, 2)
		is.Equal(d["status"], "captured")
		is.Equal(num(d["amountReceived"]), "19.99")
		payBody(t, e.payWebhook("mock_processing", payEvent("p3", "payment.refunded", psid, "refunded"), secretA), 202, accepted)
		d = a.waitWebhooks(pid, 3)
		is.Equal(d["status"], "refunded")
		is.Equal(num(d["refundedAmount"]), "19.99")
		// An unknown status is recorded and ignored.
		payBody(t, e.payWebhook("mock_processing", payEvent("p4", "payment.weird", psid, "weird"), secretA), 202, accepted)
		d = a.waitWebhooks(pid, 4)
		hooks = payItems(t, d, "webhooks")
		is.Equal(hooks[3]["outcome"], "ignored")
		is.Equal(hooks[3]["mappedStatus"], "unknown")
		is.Equal(d["status"], "refunded")
		types, _ = e.payEvents(a.tf.ID, pid)
		is.Equal(types, []string{payments.EventSessionCreated, payments.EventPaymentAuthorized, payments.EventPaymentCaptured,
			payments.EventPaymentRefunded})
		// The mock routes take each other's sessions, and one event is one
		// event whichever route brought it.
		payBody(t, e.payWebhook("mock", payEvent("p3", "payment.refunded", psid, "refunded"), secretA), 202, accepted)
		payBody(t, e.payWebhook("mock", payEvent("p5", "payment.captured", psid, "captured"), secretA), 202, accepted)
		d = a.waitWebhooks(pid, 5)
		hooks = payItems(t, d, "webhooks")
		is.Equal(len(hooks), 5) // no second p3
		is.Equal(hooks[4]["eventId"], "p5")
		is.Equal(hooks[4]["outcome"], "ignored")
		is.Equal(hooks[4]["providerKey"], "mock_processing")

		// A refund webhook with an amount (minor units, refunded so far):
		// partial until it reaches what was captured.
		rs := a.open(map[string]any{"providerKey": "mock", "amount": 10, "currencyCode": "USD"})
		rid, rsid := rs["transactionId"].(string), rs["sessionId"].(string)
		refundEvent := func(eventID string, amount int) []byte {
			b, _ := json.Marshal(map[string]any{"id": eventID, "type": "payment.refunded",
				"data": map[string]any{"id": rsid, "status": "refunded", "amount": amount}})
			return b
		}
		payBody(t, e.payWebhook("mock", refundEvent("r1", 300), secretA), 202, accepted)
		d = a.waitWebhooks(rid, 1)
		is.Equal(d["status"], "partially_refunded")
		is.Equal(num(d["refundedAmount"]), "3")
		payBody(t, e.payWebhook("mock", refundEvent("r2", 1000), secretA), 202, accepted)
		d = a.waitWebhooks(rid, 2)
		is.Equal(d["status"], "refunded")
		is.Equal(num(d["refundedAmount"]), "10")
		// The refunds add up to refundedAmount.
		var refunded []string
		for _, r := range payItems(t, d, "refunds") {
			refunded = append(refunded, num(r["amount"]))
		}
		is.Equal(refunded, []string{"3", "7"})
		hooks = payItems(t, d, "webhooks")
		is.Equal(hooks[0]["statusAfter"], "partially_refunded")
		is.Equal(hooks[1]["statusAfter"], "refunded")
		types, _ = e.payEvents(a.tf.ID, rid)
		is.Equal(types, []string{payments.EventSessionCreated, payments.EventPaymentCaptured, payments.EventPaymentRefunded,
			payments.EventPaymentRefunded})

		// The same webhook 20 times at once: stored and applied once; 20
		// different payments' webhooks at once: each applied.
		many := make([]map[string]any, 20)
		for i := range many {
			many[i] = a.open(map[string]any{"providerKey": "mock", "amount": i + 1, "currencyCode": "USD", "captureMethod": "manual"})
		}
		same := payEvent("same_evt", "payment.captured", many[0]["sessionId"].(string), "captured")
		hookAt := func(body []byte) *http.Request {
			r := httptest.NewRequestWithContext(t.Context(), "POST", payBase+"/webhook/mock", bytes.NewReader(body))
			r.Header.Set(payments.MockSignatureHeader, payments.MockSignature(body, secretA))
			return r
		}
		var wg sync.WaitGroup
		codes := make([]int, 40)
		for i := range 40 {
			body := same
			if i >= 20 {
				m := many[i-20]
				body = payEvent("many_"+m["transactionId"].(string), "payment.captured", m["sessionId"].(string), "captured")
			}
			req := hookAt(body)
			wg.Go(func() {
				rec := httptest.NewRecorder()
				e.handler.ServeHTTP(rec, req)
				codes[i] = rec.Code
			})
		}
		wg.Wait()
		for i, code := range codes {
			if code != 202 {
				t.Errorf("concurrent webhook %d: status %d, want 202", i, code)
			}
		}
		for i, m := range many {
			mid := m["transactionId"].(string)
			want := 1
			if i == 0 {
				want = 2 // same_evt and its own many_ event
			}
			d := a.waitWebhooks(mid, want)
			is.Equal(d["status"], "captured")
			is.Equal(len(payItems(t, d, "webhooks")), want)
			types, _ := e.payEvents(a.tf.ID, mid)
			is.Equal(types, []string{payments.EventSessionCreated, payments.EventPaymentAuthorized, payments.EventPaymentCaptured})
		}

		// A tenant without a webhookSecret verifies nothing.
		c := paySetup(e, "Initech")
		cs := c.open(map[string]any{"providerKey": "mock", "amount": 5, "currencyCode": "USD", "captureMethod": "manual"})
		payError(t, e.payWebhook("mock", payEvent("c1", "payment.captured", cs["sessionId"].(string), "captured"), ""), 401, "Webhook verification failed")
		payError(t, e.payWebhook("mock", payEvent("c1", "payment.captured", cs["sessionId"].(string), "captured"), secretA), 401, "Webhook verification failed")
	})
}

func TestPaymentWebhookRateLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		post := func(t *testing.T, h http.Handler, provider, ip string) *response {
			env := e.with(t)
			env.handler = h
			return env.send("POST", payBase+"/webhook/"+provider, `{"id":"evt","type":"payment.captured","data":{"id":"mock_pi_00"}}`,
				func(r *http.Request) {
					r.Header.Set("X-Forwarded-For", ip)
					r.Header.Set(payments.MockSignatureHeader, "00")
				})
		}
		// check sends 60 webhooks from one client to one provider (401:
		// they do not verify), then expects the 61st refused; handlers take
		// turns (processes sharing a limiter).
		check := func(t *testing.T, handlers ...http.Handler) {
			for i := range 60 {
				if r := post(t, handlers[i%len(handlers)], "mock", "192.0.2.1"); r.Status != 401 {
					t.Fatalf("webhook %d: status %d, want 401; body: %s", i+1, r.Status, r.Body)
				}
			}
			for _, h := range handlers {
				r := post(t, h, "mock", "192.0.2.1").expect(http.StatusTooManyRequests)
				sameJSON(t, "429 body", r.JSON(), map[string]any{"error": "Too many requests. Please try again later."})
				// Another provider and another client count apart.
				post(t, h, "mock_processing", "192.0.2.1").expect(401)
				post(t, h, "mock", "192.0.2.2").expect(401)
			}
		}
		t.Run("memory", func(t *testing.T) {
			check(t, mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(behindProxy(), nil, e.kit.Logger)}))
		})
		t.Run("redis", func(t *testing.T) {
			url := os.Getenv("TENANTKIT_TEST_REDIS_URL")
			if url == "" {
				t.Skip("TENANTKIT_TEST_REDIS_URL not set; skipping the Redis-backed webhook limit")
			}
			cfg := behindProxy()
			cfg.KeyPrefix = "rl-test-" + randomHex(6) // no leftovers from other runs
			var handlers []http.Handler
			for range 2 {
				l, err := ratelimit.OpenRedis(url, ratelimit.RedisOptions{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				handlers = append(handlers, mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(cfg, l, e.kit.Logger)}))
			}
			check(t, handlers...)
		})
	})
}
