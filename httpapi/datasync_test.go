package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/datasyncapi"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// syncSource is a local JSON source of n items for any entity type:
// GET /{entityType}?cursor=&limit= pages them, cursor being the next
// index.
func syncSource(t *testing.T, n int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		to := min(from+limit, n)
		items := []map[string]any{}
		for i := from; i < to; i++ {
			items = append(items, map[string]any{"externalId": fmt.Sprintf("ext-%d", i), "data": map[string]any{"title": fmt.Sprintf("Item %d", i)}})
		}
		var next any
		if to < n {
			next = strconv.Itoa(to)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "nextCursor": next, "totalEstimate": n})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// waitRun polls a run until it is final and returns it.
func waitRun(t *testing.T, e *testEnv, key, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		run := e.do("GET", "/api/data_sync/runs/"+id, key, nil).expect(200).JSON()
		switch run["status"] {
		case "completed", "failed", "cancelled":
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %v after 30 s: %v", id, run["status"], run)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An import from a local source through sync_http_json, then a full
// re-run that updates and never duplicates, on both engines.
func TestDataSyncImportRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		e := newTestEnvConfig(t, db, full.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true}})
		e.start()
		tf := e.newTenant("Sync " + randomHex(3))
		key := e.newKey(tf, append(recAllFeatures, integrationsapi.FeatureIntegrationsView, integrationsapi.FeatureIntegrationsCredentials, datasyncapi.FeatureSyncRun, datasyncapi.FeatureSyncView, "progress.view")...)
		eid := recEntity()
		e.do("POST", "/api/entities/entities", key, map[string]any{"entityId": eid, "label": "Products"}).expect(200)
		e.do("POST", "/api/entities/definitions.batch", key, map[string]any{"entityId": eid,
			"definitions": []map[string]any{{"key": "title", "kind": "text"}}}).expect(200)
		src := syncSource(t, 250)
		e.do("PUT", "/api/integrations/sync_http_json/credentials", key, map[string]any{"credentials": map[string]any{"baseUrl": src.URL}}).expect(200)

		start := e.do("POST", "/api/data_sync/run", key, map[string]any{"integrationId": "sync_http_json", "entityType": eid,
			"direction": "import", "batchSize": 100}).expect(201).JSON()
		run := waitRun(t, e, key, start["id"].(string))
		if run["status"] != "completed" || run["createdCount"] != 250.0 || run["updatedCount"] != 0.0 || run["batchesCompleted"] != 3.0 {
			t.Fatalf("first run: %v", run)
		}
		pj, _ := run["progressJob"].(map[string]any)
		if pj == nil || pj["status"] != "completed" || pj["processedCount"] != 250.0 || pj["id"] != start["progressJobId"] {
			t.Fatalf("progress job: %v (start %v)", pj, start)
		}
		if total := e.do("GET", recRecords+"?entityId="+eid, key, nil).expect(200).JSON()["total"]; total != 250.0 {
			t.Fatalf("%v records after the import, want 250", total)
		}

		again := e.do("POST", "/api/data_sync/run", key, map[string]any{"integrationId": "sync_http_json", "entityType": eid,
			"direction": "import", "batchSize": 100, "fullSync": true}).expect(201).JSON()
		run = waitRun(t, e, key, again["id"].(string))
		if run["status"] != "completed" || run["createdCount"] != 0.0 || run["updatedCount"] != 250.0 {
			t.Fatalf("full re-run: %v", run)
		}
		if total := e.do("GET", recRecords+"?entityId="+eid, key, nil).expect(200).JSON()["total"]; total != 250.0 {
			t.Fatalf("%v records after the re-run, want 250 (no duplicates)", total)
		}
	})
}
