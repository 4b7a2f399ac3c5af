package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/dashboardsapi"
	"github.com/tenantkit/tenantkit/httpapi/datasyncapi"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// The built-in widgets' data, against known store contents, over HTTP on
// both engines: tenant Acme gets webhooks, rule executions, files and
// payments whose figures are known; tenant Other gets nothing and must see
// nothing of Acme's.
func TestDashboardBuiltinWidgetData(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnvConfig(t, db, full.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true}})
		acme, other := e.newTenant("Acme "+randomHex(3)), e.newTenant("Other "+randomHex(3))
		features := append([]string{dashboardsapi.FeatureWidgetsView, webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksManage, "webhooks.test",
			"attachments.view", "attachments.manage", datasyncapi.FeatureSyncView, datasyncapi.FeatureSyncRun, integrationsapi.FeatureIntegrationsCredentials,
			entitiesapi.FeatureEntitiesDefinitionsManage}, append(execFeatures, payAllFeatures...)...)
		key, otherKey := e.newKey(acme, features...), e.newKey(other, features...)
		data := func(key, widget string) map[string]any {
			t.Helper()
			return e.do("GET", "/api/dashboards/widgets/"+widget+"/data", key, nil).expect(200).JSON()
		}

		// Webhooks: three, subscribed to an event this test never emits;
		// test sends (sent at once) to a local target that accepts (alpha,
		// twice) and one that refuses (beta); gamma has none.
		accept := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }))
		t.Cleanup(accept.Close)
		t.Cleanup(refuse.Close)
		hook := func(name, url string) string {
			return e.createWebhook(key, whBody(name, withField("url", url), withField("subscribedEvents", []string{"dashboards.layout.updated"})))["id"].(string)
		}
		alpha, beta, gamma := hook("alpha", accept.URL+"/a"), hook("beta", refuse.URL+"/b"), hook("gamma", accept.URL+"/c")
		for _, id := range []string{alpha, alpha, beta} {
			e.do("POST", whPath(id, "/test"), key, map[string]any{}).expect(200)
		}

		// Rules: a set of two validations, one passing and one failing, run
		// twice: 4 rule executions, 2 failures.
		e.createRule(key, execRule("PASS-1", "VALIDATION", "order", "beforeCreate", leaf("total", ">", 0), []any{}, []any{}))
		e.createRule(key, execRule("FAIL-1", "VALIDATION", "order", "beforeCreate", leaf("total", ">", 1000), []any{}, []any{}))
		e.createSet(key, "CHECKS", "Order checks")
		e.addMember(key, "CHECKS", "PASS-1", 10)
		e.addMember(key, "CHECKS", "FAIL-1", 20)
		for _, id := range []string{"o-1", "o-2"} {
			e.do("POST", setExecPath("CHECKS"), key, orderRequest(id, map[string]any{"total": 150}, false)).expect(200)
		}

		// Attachments: two files, 100 and 250 bytes.
		permUpload(e, key, "catalog:product", "p-1", "a.txt", []byte(strings.Repeat("a", 100)))
		permUpload(e, key, "catalog:product", "p-1", "b.txt", []byte(strings.Repeat("b", 250)))

		// Payments: 10.00 USD captured, 5.00 USD authorized, 1000 JPY captured.
		for _, s := range []map[string]any{
			{"providerKey": "mock", "amount": 10, "currencyCode": "USD"},
			{"providerKey": "mock", "amount": 5, "currencyCode": "USD", "captureMethod": "manual"},
			{"providerKey": "mock", "amount": 1000, "currencyCode": "JPY"},
		} {
			e.do("POST", payBase+"/sessions", key, s).expect(201)
		}

		// Data sync: one run started (pending: no worker runs here).
		eid := recEntity()
		e.do("POST", "/api/entities/entities", key, map[string]any{"entityId": eid, "label": "Things"}).expect(200)
		e.do("PUT", "/api/integrations/sync_http_json/credentials", key, map[string]any{"credentials": map[string]any{"baseUrl": accept.URL}}).expect(200)
		runID := e.do("POST", "/api/data_sync/run", key, map[string]any{"integrationId": "sync_http_json", "entityType": eid,
			"direction": "import"}).expect(201).JSON()["id"].(string)

		hooks := data(key, "webhooks.delivery_health")
		if _, ok := hooks["since"].(string); !ok {
			t.Fatalf("webhook health has no since: %v", hooks)
		}
		sameJSON(t, "webhook health items", hooks["items"], []any{
			map[string]any{"webhookId": alpha, "name": "alpha", "url": accept.URL + "/a", "delivered": 2.0, "failed": 0.0, "pending": 0.0},
			map[string]any{"webhookId": beta, "name": "beta", "url": refuse.URL + "/b", "delivered": 0.0, "failed": 1.0, "pending": 0.0},
			map[string]any{"webhookId": gamma, "name": "gamma", "url": accept.URL + "/c", "delivered": 0.0, "failed": 0.0, "pending": 0.0},
		})
		sameJSON(t, "rule executions", data(key, "business_rules.executions")["items"], []any{
			map[string]any{"ruleSetId": "CHECKS", "name": "Order checks", "executions": 4.0, "failures": 2.0},
		})
		storage := data(key, "attachments.storage")
		if storage["usedBytes"] != 350.0 || storage["files"] != 2.0 || storage["quotaBytes"].(float64) <= 0 {
			t.Fatalf("storage = %v, want 350 bytes in 2 files against a quota", storage)
		}
		sameJSON(t, "payments", data(key, "payment_gateways.summary")["items"], map[string]any{
			"total":    3.0,
			"byStatus": map[string]any{"captured": 2.0, "authorized": 1.0},
			"received": []any{
				map[string]any{"currencyCode": "JPY", "amount": 1000.0, "count": 1.0},
				map[string]any{"currencyCode": "USD", "amount": 10.0, "count": 2.0},
			},
		})

		syncItems, _ := data(key, "data_sync.runs")["items"].([]any)
		if len(syncItems) != 1 {
			t.Fatalf("data sync widget: %v, want one integration", syncItems)
		}
		runs := syncItems[0].(map[string]any)
		if runs["integrationId"] != "sync_http_json" || runs["latest"].(map[string]any)["id"] != runID {
			t.Fatalf("data sync widget: %v, want run %s of sync_http_json", runs, runID)
		}
		sameJSON(t, "data sync by status", runs["byStatus"], map[string]any{"pending": 1.0})

		// The other tenant sees none of it.
		sameJSON(t, "other's data sync runs", data(otherKey, "data_sync.runs")["items"], []any{})
		sameJSON(t, "other's webhook health", data(otherKey, "webhooks.delivery_health")["items"], []any{})
		sameJSON(t, "other's rule executions", data(otherKey, "business_rules.executions")["items"], []any{})
		if s := data(otherKey, "attachments.storage"); s["usedBytes"] != 0.0 || s["files"] != 0.0 {
			t.Fatalf("other's storage = %v, want empty", s)
		}
		sameJSON(t, "other's payments", data(otherKey, "payment_gateways.summary")["items"],
			map[string]any{"total": 0.0, "byStatus": map[string]any{}, "received": []any{}})

		// A key lacking a widget's feature may not read its data.
		narrow := e.newKey(acme, dashboardsapi.FeatureWidgetsView)
		e.do("GET", "/api/dashboards/widgets/payment_gateways.summary/data", narrow, nil).expect(403)
	})
}
