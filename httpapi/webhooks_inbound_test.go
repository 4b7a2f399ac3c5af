package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// POST /api/webhooks/inbound/{endpointId}: no credential, the signature
// is the authentication; 200 {ok:true}, then {ok:true, duplicate:true};
// 400 {error:"Verification failed"}; 404 for an unknown endpoint; 60 a
// minute per endpoint (and client). POST /webhooks/{id}/test and
// /rotate-secret, which share its pattern, keep their features.
func TestInboundRoute(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		e.start()
		secret := webhooks.NewSecret()
		e.kit.Webhooks.AddEndpoint("test", webhooks.Endpoint{Adapter: webhooks.StandardAdapter{Secret: secret}})
		post := func(endpoint, msgID string, body []byte, sign string, client string) *response {
			t.Helper()
			h, err := webhooks.SignatureHeaders(msgID, time.Now(), body, []string{sign})
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("POST", "/api/webhooks/inbound/"+endpoint, bytes.NewReader(body))
			req.Header = h
			req.RemoteAddr = client + ":1234"
			rec := httptest.NewRecorder()
			e.handler.ServeHTTP(rec, req)
			return &response{t: t, Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
		}
		body := []byte(`{"type":"shop.order.paid"}`)
		run := randomHex(4) // message ids are new on every run (PostgreSQL's schema is shared)
		// "test" as an endpoint id goes to the inbound receiver, not to the
		// test-send route that shares the pattern.
		sameJSON(t, "first", post("test", "msg_a_"+run, body, secret, "198.51.100.1").expect(200).JSON(), map[string]any{"ok": true})
		sameJSON(t, "again", post("test", "msg_a_"+run, body, secret, "198.51.100.1").expect(200).JSON(), map[string]any{"ok": true, "duplicate": true})
		sameJSON(t, "bad signature", post("test", "msg_b_"+run, body, webhooks.NewSecret(), "198.51.100.1").expect(400).JSON(),
			map[string]any{"error": "Verification failed"})
		big := bytes.Repeat([]byte("x"), 2<<20) // over the 1 MiB bound of a message
		post("test", "msg_big_"+run, big, secret, "198.51.100.1").expect(http.StatusRequestEntityTooLarge)
		sameJSON(t, "unknown", post("nowhere", "msg_c_"+run, body, secret, "198.51.100.1").expect(404).JSON(),
			map[string]any{"error": "Webhook endpoint not found"})

		// The routes sharing the pattern still need their features.
		acme := e.newTenant("Acme")
		viewer := e.newKey(acme, "webhooks.view")
		e.do("POST", "/api/webhooks/"+store.NewID()+"/test", viewer, nil).expect(http.StatusForbidden)
		e.do("POST", "/api/webhooks/"+store.NewID()+"/rotate-secret", viewer, nil).expect(http.StatusForbidden)
		e.do("POST", "/api/webhooks/"+store.NewID()+"/other", viewer, nil).expect(http.StatusNotFound)
		tester := e.newKey(acme, "webhooks.test", "webhooks.secrets")
		e.do("POST", "/api/webhooks/"+store.NewID()+"/test", tester, nil).expect(http.StatusNotFound)
		e.do("POST", "/api/webhooks/"+store.NewID()+"/rotate-secret", tester, nil).expect(http.StatusNotFound)

		// 60 requests a minute per endpoint and client address.
		for i := range 56 { // 4 already counted for this client on "test"
			post("test", "msg_n"+run+string(rune('a'+i%26))+string(rune('a'+i/26)), body, secret, "198.51.100.1").expect(200)
		}
		post("test", "msg_over_"+run, body, secret, "198.51.100.1").expect(http.StatusTooManyRequests)
		// Another endpoint has its own count. (Clients are told apart only
		// behind trusted proxies, see RATE_LIMIT_TRUST_PROXY_DEPTH.)
		e.kit.Webhooks.AddEndpoint("other", webhooks.Endpoint{Adapter: webhooks.StandardAdapter{Secret: secret}})
		post("other", "msg_over_"+run, body, secret, "198.51.100.1").expect(200)
	})
}
