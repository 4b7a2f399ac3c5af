package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/internal/testing/pgproxy"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestPostgresOutage: while the connection to PostgreSQL is cut, requests
// fail cleanly and promptly (5xx, never a 2xx, never a hang), readiness
// says so; once it is back the same Kit serves again without a restart,
// every payment session committed, before or after, has exactly its
// events, and the webhooks accepted just before the cut are applied (no
// job lost: one cut short mid-run is rescued after RescueStuckAfter).
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	proxy := pgproxy.New(t, storetest.IsolatedPostgresURL(t))
	u, err := url.Parse(proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	db, err := store.Open(t.Context(), u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const secret = "whsec_outage"
	creds := payments.CredentialFunc(func(context.Context, string, string) (payments.Credentials, error) {
		return payments.Credentials{"webhookSecret": secret}, nil
	})
	// A job running when the connection drops cannot record its end: it
	// stays running until River's rescuer (every 30 s or so) finds it
	// older than RescueStuckAfter (5 minutes by default, 8 s here) and
	// runs it again.
	e := newTestEnvConfig(t, db, full.Config{Payments: payments.Options{Credentials: creds},
		Jobs: jobs.Config{JobTimeout: 5 * time.Second, RescueStuckAfter: 8 * time.Second}})
	if err := e.kit.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	acme := e.newTenant("Acme")
	key := e.newKey(acme, "payment_gateways.manage", "payment_gateways.view")
	session := map[string]any{"providerKey": "mock", "amount": 10, "currencyCode": "USD"}
	created := 0
	for range 5 {
		e.do("POST", "/api/payment_gateways/sessions", key, session).expect(201)
		created++
	}
	e.do("GET", "/api/ready", "", nil).expect(200)

	// Provider webhooks accepted (202) just before the cut: their
	// processing jobs must not be lost to it.
	var pending []string
	for i := range 5 {
		s := e.do("POST", "/api/payment_gateways/sessions", key, map[string]any{"providerKey": "mock_processing",
			"amount": 10, "currencyCode": "USD"}).expect(201).JSON()
		created++
		body := fmt.Appendf(nil, `{"id":"evt_outage_%d","type":"payment.captured","data":{"id":%q,"status":"captured"}}`, i, s["sessionId"])
		e.send("POST", "/api/payment_gateways/webhook/mock_processing", body, func(r *http.Request) {
			r.Header.Set(payments.MockSignatureHeader, payments.MockSignature(body, secret))
		}).expect(202)
		pending = append(pending, s["transactionId"].(string))
	}

	proxy.SetCut(true)
	for range 5 {
		start := time.Now()
		r := e.do("POST", "/api/payment_gateways/sessions", key, session)
		if r.Status < 500 {
			t.Errorf("a session during the outage: %d %s, want a 5xx", r.Status, r.Body)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("a request during the outage took %s", took)
		}
	}
	if r := e.do("GET", "/api/ready", "", nil); r.Status != 503 || r.JSON()["reason"] != "database" {
		t.Errorf("ready during the outage: %d %s", r.Status, r.Body)
	}

	proxy.SetCut(false)
	deadline := time.Now().Add(20 * time.Second)
	for e.do("GET", "/api/ready", "", nil).Status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("not ready 20 s after the database came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for range 5 {
		e.do("POST", "/api/payment_gateways/sessions", key, session).expect(201)
		created++
	}
	for _, id := range pending {
		deadline := time.Now().Add(90 * time.Second)
		for e.do("GET", "/api/payment_gateways/status?transactionId="+id, key, nil).expect(200).JSON()["status"] != "captured" {
			if time.Now().After(deadline) {
				t.Fatalf("payment %s: its webhook, accepted before the outage, was not applied 90 s after it", id)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	total := e.do("GET", "/api/payment_gateways/transactions?pageSize=100", key, nil).expect(200).JSON()["total"]
	if total != float64(created) {
		t.Errorf("%v transactions, want the %d answered 201", total, created)
	}
	var events int
	err = db.QueryRow(context.Background(), `SELECT count(*) FROM store_events WHERE tenant_id = $1 AND type = $2`,
		acme.ID, "payment_gateways.session.created").Scan(&events)
	if err != nil || events != created {
		t.Errorf("%d session.created events (%v), want %d: one per committed session", events, err, created)
	}
}
