package httpapi

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/httpapi/rulesapi"
	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
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
		e := newTestEnvConfig(t, db, full.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true}})
		e.start()
		var hits atomic.Int64
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
		t.Cleanup(rcv.Close)
		features := []string{webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksManage, "webhooks.test", integrationsapi.FeatureIntegrationsManage,
			rulesapi.FeatureRulesView, rulesapi.FeatureRulesCreate}
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

// The payments area writes the gateway integration's log: a payment's
// status change is an info line under gateway_mock naming the
// transaction, in the tenant's log only.
func TestIntegrationPaymentsLog(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		a, b := e.newTenant("A "+randomHex(3)), e.newTenant("B "+randomHex(3))
		features := append([]string{integrationsapi.FeatureIntegrationsView}, payAllFeatures...)
		keyA, keyB := e.newKey(a, features...), e.newKey(b, features...)
		tx := e.do("POST", payBase+"/sessions", keyA, map[string]any{"providerKey": "mock", "amount": 10, "currencyCode": "USD",
			"captureMethod": "manual"}).expect(201).JSON()["transactionId"].(string)
		e.do("POST", payBase+"/capture", keyA, map[string]any{"transactionId": tx}).expect(200)

		logs := e.do("GET", "/api/integrations/logs?integrationId=gateway_mock&entityId="+tx, keyA, nil).expect(200).JSON()
		items, _ := logs["items"].([]any)
		found := false
		for _, it := range items {
			line := it.(map[string]any)
			if line["code"] == "status_changed" && line["level"] == "info" && line["entityType"] == "payment_transaction" &&
				line["message"] == "Payment "+tx+": authorized → captured" {
				found = true
			}
		}
		if !found {
			t.Fatalf("no status_changed line for the capture in %v", logs)
		}
		if other := e.do("GET", "/api/integrations/logs?integrationId=gateway_mock", keyB, nil).expect(200).JSON(); other["total"] != 0.0 {
			t.Fatalf("tenant B sees %v log lines", other["total"])
		}
	})
}
