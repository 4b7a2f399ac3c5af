package httpapi

import (
	"testing"

	"github.com/tenantkit/tenantkit/store/storetest"
)

// FuzzPaymentBodies sends arbitrary bodies to every payment POST, the
// provider webhook included: never a 5xx, and a session is created only
// from a body that names a provider, an amount and a currency.
func FuzzPaymentBodies(f *testing.F) {
	for _, seed := range []string{``, `{}`, `null`, `[`, `{"providerKey":"mock","amount":10,"currencyCode":"USD"}`,
		`{"providerKey":"mock","amount":"10","currencyCode":"USD"}`, `{"providerKey":"mock","amount":1e999,"currencyCode":"USD"}`,
		`{"providerKey":"mock","amount":0.001,"currencyCode":"JPY","metadata":{"a":[1,{"b":null}]}}`,
		`{"transactionId":"01a21396-1ee4-7668-893b-192651ce5640","amount":-1,"operationId":"\u0000"}`,
		`{"id":"evt","type":"x","data":{"id":"mock_pi_1","status":"captured","amount":1.5}}`, "\x00\xff"} {
		f.Add(seed)
	}
	shared := newTestEnv(f, storetest.SQLite(f))
	tf := shared.newTenant("Fuzz")
	key := shared.newKey(tf, "payment_gateways.manage", "payment_gateways.capture", "payment_gateways.refund", "payment_gateways.view")
	f.Fuzz(func(t *testing.T, body string) {
		e := shared.with(t)
		for _, path := range []string{"/sessions", "/capture", "/refund", "/cancel", "/status"} {
			r := e.do("POST", "/api/payment_gateways"+path, key, body)
			if r.Status >= 500 {
				t.Fatalf("POST %s with %q: status %d: %s", path, body, r.Status, r.Body)
			}
			if path == "/sessions" && r.Status == 201 {
				s := r.JSON()
				if s["transactionId"] == "" || s["status"] == nil {
					t.Fatalf("a 201 session without its id or status: %s", r.Body)
				}
			}
		}
		if r := e.do("POST", "/api/payment_gateways/webhook/mock", "", body); r.Status >= 500 || r.Status == 202 {
			t.Fatalf("an unsigned webhook %q: status %d: %s", body, r.Status, r.Body)
		}
	})
}
