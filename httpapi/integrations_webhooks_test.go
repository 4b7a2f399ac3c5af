package httpapi

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// The custom webhooks integration's state switches one tenant's outbound
// webhooks: while tenant A has webhooks_custom disabled, its test sends
// and retries answer 409 and its event deliveries expire unsent, while
// tenant B's go out; enabled again, A's go out too. On both engines, with
// the job engine running.
func TestIntegrationWebhooksSwitch(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		e := newTestEnvConfig(t, db, tenantkit.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true}})
		e.start()
		var hits atomic.Int64
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
		t.Cleanup(rcv.Close)
		features := []string{featureWebhooksView, featureWebhooksManage, "webhooks.test", featureIntegrationsManage,
			featureRulesView, featureRulesCreate}
		a, b := e.newTenant("A "+randomHex(3)), e.newTenant("B "+randomHex(3))
		keyA, keyB := e.newKey(a, features...), e.newKey(b, features...)
		hook := func(key string) string {
			return e.createWebhook(key, whBody("h", withField("url", rcv.URL), withField("subscribedEvents", []string{"business_rules.rule.*"})))["id"].(string)
		}
		hookA, hookB := hook(keyA), hook(keyB)

		e.do("PUT", "/api/integrations/webhooks_custom/state", keyA, map[string]any{"isEnabled": false}).expect(200)
		r := e.do("POST", whPath(hookA, "/test"), keyA, map[string]any{}).expect(409)
		if msg := r.JSON()["error"]; msg != "Custom Webhooks integration is disabled" {
			t.Fatalf("test send while disabled: %v", msg)
		}
		e.do("POST", whPath(hookB, "/test"), keyB, map[string]any{}).expect(200) // B is untouched

		// A rule created in each tenant: A's delivery expires unsent, B's
		// is delivered.
		e.createRule(keyA, ruleBody("SW-A"))
		e.createRule(keyB, ruleBody("SW-B"))
		expired := e.waitDeliveries(keyA, hookA, "expired", 1)
		e.waitDeliveries(keyB, hookB, "delivered", 2) // the test send and the rule's event
		if n := hits.Load(); n != 2 {
			t.Fatalf("the receiver got %d requests, want 2 (tenant B's only)", n)
		}
		e.do("POST", webhooksBase+"/deliveries/"+expired[0]["id"].(string)+"/retry", keyA, nil).expect(409)

		// Enabled again: A's retry and new events go out.
		e.do("PUT", "/api/integrations/webhooks_custom/state", keyA, map[string]any{"isEnabled": true}).expect(200)
		e.do("POST", webhooksBase+"/deliveries/"+expired[0]["id"].(string)+"/retry", keyA, nil).expect(200)
		e.createRule(keyA, ruleBody("SW-A2"))
		e.waitDeliveries(keyA, hookA, "delivered", 2)
		e.do("POST", whPath(hookA, "/test"), keyA, map[string]any{}).expect(200)
	})
}
