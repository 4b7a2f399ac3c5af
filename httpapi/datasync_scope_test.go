package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/datasyncapi"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// dsListener is an export target on 127.0.0.1 that keeps the localId of
// every item it is sent, answers each a success after delay, or every
// batch with status when it is set.
type dsListener struct {
	*httptest.Server
	mu     sync.Mutex
	got    []string
	delay  time.Duration
	status int
}

func dsNewListener(t *testing.T, delay time.Duration) *dsListener {
	l := &dsListener{delay: delay}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Items []datasync.ExportItem `json:"items"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		l.mu.Lock()
		status := l.status
		if status == 0 {
			for _, it := range body.Items {
				l.got = append(l.got, it.LocalID)
			}
		}
		l.mu.Unlock()
		if status != 0 {
			http.Error(w, "refused", status)
			return
		}
		select {
		case <-time.After(l.delay):
		case <-r.Context().Done():
			return
		}
		results := []datasync.ExportResult{}
		for _, it := range body.Items {
			results = append(results, datasync.ExportResult{LocalID: it.LocalID, ExternalID: "x-" + it.LocalID, Status: "success"})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"results": results})
	}))
	t.Cleanup(l.Close)
	return l
}

// received returns the localIds sent so far, sorted, and forgets them.
func (l *dsListener) received() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Sorted(slices.Values(l.got))
	l.got = nil
	return out
}

func (l *dsListener) setStatus(status int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status = status
}

// An export sends only what its caller may read. A role limited to org1
// with data_sync.run and integrations.credentials.manage but not
// entities.records.view (so GET /entities/records is 403) cannot start
// one: 403 naming the feature, and no run. With the feature, the export
// sends org1's records and those of no organization, never org2's, on
// both engines. The job carrying the run is handed back to the queue
// between batches (each batch outlasts the job's slice of its short time
// limit) and resumes from the run's row, with the run's scope. A failed
// run retried by a caller of every organization still sends only org1's.
func TestDataSyncExportOrganizationScope(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		// A 4 s job limit gives a job a 2 s slice; every export batch below
		// takes over 1.2 s, so a run of three batches needs a second job.
		e := newTestEnvConfig(t, db, full.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true},
			DataSync: datasync.Options{Backoff: dsBackoff}, Jobs: jobs.Config{JobTimeout: 4 * time.Second}})
		var snoozes atomic.Int64
		e.kit.Jobs.Observe(func(kind, outcome string, _ time.Duration) {
			if kind == (datasync.RunArgs{}).Kind() && outcome == jobs.OutcomeSnoozed {
				snoozes.Add(1)
			}
		})
		e.start()
		g := e.newGrantFixture()
		tenantKey, _ := e.keyWith(g.tenantFixture, "", g.adminRole)
		org1Admin, _ := e.keyWith(g.tenantFixture, g.OrgID, g.adminRole)
		org2Admin, _ := e.keyWith(g.tenantFixture, g.org2, g.adminRole)

		eid := recEntity()
		e.do("POST", "/api/entities/entities", tenantKey, map[string]any{"entityId": eid, "label": "Products"}).expect(200)
		e.do("POST", "/api/entities/definitions.batch", tenantKey, map[string]any{"entityId": eid,
			"definitions": []map[string]any{{"key": "title", "kind": "text"}}}).expect(200)
		create := func(key, title string) string {
			body := e.do("POST", recRecords, key, map[string]any{"entityId": eid, "values": map[string]any{"title": title}}).expect(200).JSON()
			return body["item"].(map[string]any)["recordId"].(string)
		}
		readable := []string{create(tenantKey, "no organization"), create(org1Admin, "org1 a"), create(org1Admin, "org1 b")}
		slices.Sort(readable)
		org2Records := []string{create(org2Admin, "org2 a"), create(org2Admin, "org2 b")}

		listener := dsNewListener(t, 1200*time.Millisecond)
		e.do("PUT", "/api/integrations/"+dsIntegration+"/credentials", tenantKey,
			map[string]any{"credentials": map[string]any{"baseUrl": listener.URL}}).expect(200)
		body := map[string]any{"integrationId": dsIntegration, "entityType": eid, "direction": "export", "batchSize": 1}

		// Without the records view: 403 naming it, on the start and nothing
		// stored.
		noView, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, []string{g.OrgID},
			datasyncapi.FeatureSyncRun, datasyncapi.FeatureSyncView, integrationsapi.FeatureIntegrationsCredentials))
		e.do("GET", recRecords+"?entityId="+eid, noView, nil).expect(403)
		expectForbidden(t, e.do("POST", "/api/data_sync/run", noView, body), entitiesapi.FeatureEntitiesRecordsView)
		if l := e.do("GET", "/api/data_sync/runs", tenantKey, nil).expect(200).JSON(); l["total"] != 0.0 {
			t.Fatalf("a refused export stored a run: %v", l)
		}
		// An import needs no records view: it reads nothing local.
		e.do("POST", "/api/data_sync/run", noView, map[string]any{"integrationId": dsIntegration, "entityType": eid,
			"direction": "import"}).expect(201)

		// With it: org1's records and those of no organization, never org2's.
		withView, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, []string{g.OrgID},
			datasyncapi.FeatureSyncRun, datasyncapi.FeatureSyncView, integrationsapi.FeatureIntegrationsCredentials, entitiesapi.FeatureEntitiesRecordsView))
		id := e.do("POST", "/api/data_sync/run", withView, body).expect(201).JSON()["id"].(string)
		f := &dsFixture{t: t, e: e, tf: g.tenantFixture, key: withView, eid: eid}
		run := f.wait(id)
		expectRun(t, "the org1 export", run, "completed", 0, 3, 0, 0, 3)
		if got := listener.received(); !slices.Equal(got, readable) {
			t.Fatalf("the listener received %v, want org1's and no organization's %v (org2's are %v)", got, readable, org2Records)
		}
		if n := snoozes.Load(); n == 0 {
			t.Fatalf("the run's job was never handed back to the queue: the run was not resumed")
		}

		// A failed run of the org1 caller, retried from the beginning by a
		// caller of every organization, keeps org1's scope.
		listener.setStatus(http.StatusForbidden)
		again := maps.Clone(body)
		again["fullSync"] = true
		failed := e.do("POST", "/api/data_sync/run", withView, again).expect(201).JSON()["id"].(string)
		expectRun(t, "the refused export", f.wait(failed), "failed", 0, 0, 0, 0, 0)
		listener.setStatus(0)
		expectForbidden(t, e.do("POST", "/api/data_sync/runs/"+failed+"/retry", noView, map[string]any{"fromBeginning": true}),
			entitiesapi.FeatureEntitiesRecordsView)
		retried := e.do("POST", "/api/data_sync/runs/"+failed+"/retry", tenantKey, map[string]any{"fromBeginning": true}).expect(201).JSON()
		expectRun(t, "the retried export", f.wait(retried["id"].(string)), "completed", 0, 3, 0, 0, 3)
		if got := listener.received(); !slices.Equal(got, readable) {
			t.Fatalf("the retry sent %v, want only %v", got, readable)
		}

		// The tenant's own caller sends every record.
		all := e.do("POST", "/api/data_sync/run", tenantKey, map[string]any{"integrationId": dsIntegration, "entityType": eid,
			"direction": "export", "batchSize": 100, "fullSync": true}).expect(201).JSON()["id"].(string)
		expectRun(t, "the tenant-wide export", f.wait(all), "completed", 0, 5, 0, 0, 1)
		if got, want := listener.received(), slices.Sorted(slices.Values(append(slices.Clone(readable), org2Records...))); !slices.Equal(got, want) {
			t.Fatalf("the tenant-wide export sent %v, want %v", got, want)
		}
	})
}

// An import writes only where its caller may. Two records of org2 hold
// the derived ids of ext-0 (written by an import of a caller of every
// organization acting in org2) and ext-1 (created directly by an org2
// caller). A caller limited to org1 importing ext-0…ext-3 leaves both
// untouched: each is a failed item with a warn line saying so and
// nothing of the record; ext-2 and ext-3 are created in org1 and a
// second run updates them, on both engines. A caller of every
// organization then updates all four, each in its own organization.
func TestDataSyncImportOrganizationScope(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		e := dsNewEnv(t, db, true)
		g := e.newGrantFixture()
		tenantKey, _ := e.keyWith(g.tenantFixture, "", g.adminRole)
		tenantInOrg2, _ := e.keyWith(g.tenantFixture, g.org2, g.adminRole)
		org1Key, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, []string{g.OrgID},
			datasyncapi.FeatureSyncRun, datasyncapi.FeatureSyncView, entitiesapi.FeatureEntitiesRecordsView))
		org2Key, _ := e.keyWith(g.tenantFixture, g.org2, e.newRole(g.tenantFixture, []string{g.org2}, recAllFeatures...))

		eid := recEntity()
		e.do("POST", "/api/entities/entities", tenantKey, map[string]any{"entityId": eid, "label": "Products"}).expect(200)
		e.do("POST", "/api/entities/definitions.batch", tenantKey, map[string]any{"entityId": eid,
			"definitions": []map[string]any{{"key": "title", "kind": "text"}, {"key": "qty", "kind": "integer"}}}).expect(200)
		f := &dsFixture{t: t, e: e, tf: g.tenantFixture, key: tenantKey, eid: eid}
		src := dsNewSource(t, 1)
		f.credentials(src.URL, "")
		// title returns the title of ext's record as key reads it ("" when
		// key reads none).
		title := func(key, ext string) string {
			t.Helper()
			id := datasync.RecordID(g.ID, dsIntegration, eid, ext)
			items := recItems(t, e.do("GET", recRecords+"?entityId="+eid+"&id="+id, key, nil).expect(200).JSON())
			if len(items) == 0 {
				return ""
			}
			return items[0]["title"].(string)
		}
		run := func(key, what string, counts ...int) string {
			t.Helper()
			id := e.do("POST", "/api/data_sync/run", key, f.body("import", "batchSize", 10, "fullSync", true)).expect(201).JSON()["id"].(string)
			expectRun(t, what, f.wait(id), "completed", counts...)
			return id
		}

		// org2's records: one imported, one created directly.
		run(tenantInOrg2, "the import into org2", 1, 0, 0, 0, 1)
		e.do("POST", recRecords, org2Key, map[string]any{"entityId": eid, "recordId": datasync.RecordID(g.ID, dsIntegration, eid, "ext-1"),
			"values": map[string]any{"title": "made in org2", "qty": 1}}).expect(200)
		if got := []string{title(org2Key, "ext-0"), title(org2Key, "ext-1"), title(org1Key, "ext-0")}; !slices.Equal(got, []string{"Item 0", "made in org2", ""}) {
			t.Fatalf("org2's records as org2 and org1 read them: %q", got)
		}

		src.set(func(s *dsSource) { s.n, s.version = 4, " by org1" })
		first := run(org1Key, "the org1 import", 2, 0, 0, 2, 1)
		src.set(func(s *dsSource) { s.version = " by org1 again" })
		second := run(org1Key, "the org1 re-import", 0, 2, 0, 2, 1)
		for ext, want := range map[string]string{"ext-0": "Item 0", "ext-1": "made in org2"} {
			if got := title(org2Key, ext); got != want {
				t.Errorf("org2's %s holds %q after org1's imports, want %q", ext, got, want)
			}
		}
		for _, ext := range []string{"ext-2", "ext-3"} {
			want := "Item " + ext[4:] + " by org1 again"
			if got := []string{title(org1Key, ext), title(org2Key, ext)}; !slices.Equal(got, []string{want, ""}) {
				t.Errorf("org1's %s as org1 and org2 read it: %q, want [%q \"\"]", ext, got, want)
			}
		}
		for _, id := range []string{first, second} {
			warns := f.logs(id, "warn")
			if len(warns) != 2 {
				t.Fatalf("run %s: warn lines %v, want 2", id, warns)
			}
			for _, w := range warns {
				ext := map[string]string{datasync.RecordID(g.ID, dsIntegration, eid, "ext-0"): "ext-0",
					datasync.RecordID(g.ID, dsIntegration, eid, "ext-1"): "ext-1"}[fmt.Sprint(w["entityId"])]
				want := "Item " + ext + " was not imported: record exists in an organization this run may not write"
				if ext == "" || w["message"] != want || w["runId"] != id {
					t.Errorf("run %s: warn line %v, want %q", id, w, want)
				}
				raw, _ := json.Marshal(w)
				for _, secret := range []string{g.org2, "made in org2", "Item 0\""} {
					if strings.Contains(string(raw), secret) {
						t.Errorf("run %s: warn line %s tells %q of org2's record", id, raw, secret)
					}
				}
			}
			if errs := f.logs(id, "error"); len(errs) != 0 {
				t.Errorf("run %s: error lines %v", id, errs)
			}
		}

		// A caller of every organization updates every record where it is.
		src.set(func(s *dsSource) { s.version = " by the tenant" })
		run(tenantInOrg2, "the tenant-wide import", 0, 4, 0, 0, 1)
		for _, c := range []struct{ key, ext string }{{org2Key, "ext-0"}, {org2Key, "ext-1"}, {org1Key, "ext-2"}, {org1Key, "ext-3"}} {
			if got, want := title(c.key, c.ext), "Item "+c.ext[4:]+" by the tenant"; got != want {
				t.Errorf("%s after the tenant-wide import: %q in its organization, want %q", c.ext, got, want)
			}
		}
	})
}
