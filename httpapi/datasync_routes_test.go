package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/datasyncapi"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/httpapi/progressapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// The data sync routes end to end: runs against local JSON sources and
// targets (httptest) through the built-in sync_http_json adapter, on both
// engines. Tests that run jobs use EachIsolated and start the Kit; tests
// that only start runs (which then stay pending: no worker takes them)
// use Each.

const dsIntegration = "sync_http_json"

// dsFeatures are every feature the tests' main keys hold.
var dsFeatures = slices.Concat(recAllFeatures, []string{integrationsapi.FeatureIntegrationsView, integrationsapi.FeatureIntegrationsManage,
	integrationsapi.FeatureIntegrationsCredentials, datasyncapi.FeatureSyncView, datasyncapi.FeatureSyncConfigure, datasyncapi.FeatureSyncRun, progressapi.FeatureProgressView})

// dsBackoff are the fast retry waits the tests' Kits use.
var dsBackoff = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}

// dsRunKeys and dsProgressKeys are the documented keys of a run and of
// its detail's progressJob.
var (
	dsRunKeys = []string{"batchesCompleted", "createdAt", "createdCount", "direction", "entityType", "failedCount", "id",
		"integrationId", "lastError", "progressJobId", "skippedCount", "status", "updatedAt", "updatedCount"}
	dsProgressKeys = []string{"etaSeconds", "id", "processedCount", "progressPercent", "status", "totalCount"}
	// dsDetailKeys are a run's keys and progressJob, sorted.
	dsDetailKeys = slices.Sorted(slices.Values(append(slices.Clone(dsRunKeys), "progressJob")))
)

// dsFixture is a Kit (started when the test runs jobs), a tenant, a key
// with every feature and a custom entity with a text field title and an
// integer field qty.
type dsFixture struct {
	t   *testing.T
	e   *testEnv
	tf  tenantFixture
	key string
	eid string
}

func dsNewEnv(t *testing.T, db *store.DB, start bool) *testEnv {
	t.Helper()
	e := newTestEnvConfig(t, db, full.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true},
		DataSync: datasync.Options{Backoff: dsBackoff}})
	if start {
		e.start()
	}
	return e
}

// dsTenant adds a tenant with a full key and an entity eid ("" for a new
// one) to e.
func dsTenant(t *testing.T, e *testEnv, name, eid string) *dsFixture {
	t.Helper()
	if eid == "" {
		eid = recEntity()
	}
	tf := e.newTenant(name + " " + randomHex(3))
	f := &dsFixture{t: t, e: e, tf: tf, key: e.newKey(tf, dsFeatures...), eid: eid}
	e.do("POST", "/api/entities/entities", f.key, map[string]any{"entityId": eid, "label": "Products"}).expect(200)
	e.do("POST", "/api/entities/definitions.batch", f.key, map[string]any{"entityId": eid,
		"definitions": []map[string]any{{"key": "title", "kind": "text"}, {"key": "qty", "kind": "integer"}}}).expect(200)
	return f
}

func dsSetup(t *testing.T, db *store.DB, start bool) *dsFixture {
	t.Helper()
	return dsTenant(t, dsNewEnv(t, db, start), "Sync", "")
}

// credentials stores the sync_http_json credentials of the fixture's
// tenant.
func (f *dsFixture) credentials(baseURL, token string) {
	f.t.Helper()
	c := map[string]any{"baseUrl": baseURL}
	if token != "" {
		c["token"] = token
	}
	f.e.do("PUT", "/api/integrations/"+dsIntegration+"/credentials", f.key, map[string]any{"credentials": c}).expect(200)
}

// body is a run request for the fixture's entity; kv adds or replaces
// members.
func (f *dsFixture) body(direction string, kv ...any) map[string]any {
	b := map[string]any{"integrationId": dsIntegration, "entityType": f.eid, "direction": direction}
	for i := 0; i < len(kv); i += 2 {
		b[kv[i].(string)] = kv[i+1]
	}
	return b
}

// start starts a run and returns its id, checking the 201 answer's shape.
func (f *dsFixture) start(body map[string]any) string {
	f.t.Helper()
	r := f.e.do("POST", "/api/data_sync/run", f.key, body).expect(201).JSON()
	if got := recKeys(r); !slices.Equal(got, []string{"id", "progressJobId"}) {
		f.t.Fatalf("run answer keys %v, want [id progressJobId]: %v", got, r)
	}
	id, _ := r["id"].(string)
	if !store.IsID(id) {
		f.t.Fatalf("run answer id %v", r["id"])
	}
	if pj, _ := r["progressJobId"].(string); !store.IsID(pj) {
		f.t.Fatalf("run answer progressJobId %v", r["progressJobId"])
	}
	return id
}

// wait polls the run until it is final and returns its detail.
func (f *dsFixture) wait(id string) map[string]any {
	f.t.Helper()
	return f.waitFor(id, func(r map[string]any) bool {
		return r["status"] == "completed" || r["status"] == "failed" || r["status"] == "cancelled"
	})
}

// waitFor polls the run's detail until cond holds (180 s at most: the
// machine may be busy).
func (f *dsFixture) waitFor(id string, cond func(map[string]any) bool) map[string]any {
	f.t.Helper()
	deadline := time.Now().Add(180 * time.Second)
	for {
		run := f.detail(id)
		if cond(run) {
			return run
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s: condition not met after 180 s: %v", id, run)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdInTx runs stmt in a transaction of db and keeps the transaction
// open, with the locks stmt took, until release is called; release
// returns the transaction's error. The test's end releases it too.
func holdInTx(t *testing.T, db *store.DB, stmt string, args ...any) (release func() error) {
	t.Helper()
	locked, end, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.Tx(context.WithoutCancel(t.Context()), func(tx *store.Tx) error {
			if _, err := tx.Exec(t.Context(), stmt, args...); err != nil {
				return err
			}
			close(locked)
			<-end
			return nil
		})
	}()
	select {
	case <-locked:
	case err := <-done:
		t.Fatalf("holding %q: %v", stmt, err)
	}
	var once sync.Once
	var err error
	release = func() error {
		once.Do(func() { close(end); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = release() })
	return release
}

func (f *dsFixture) detail(id string) map[string]any {
	f.t.Helper()
	return f.e.do("GET", "/api/data_sync/runs/"+id, f.key, nil).expect(200).JSON()
}

// records returns how many live records the fixture's entity has.
func (f *dsFixture) records() int {
	f.t.Helper()
	return int(f.e.do("GET", recRecords+"?entityId="+f.eid+"&pageSize=1", f.key, nil).expect(200).JSON()["total"].(float64))
}

// record returns the record an import wrote for externalID (nil when
// none).
func (f *dsFixture) record(externalID string) map[string]any {
	f.t.Helper()
	id := datasync.RecordID(f.tf.ID, dsIntegration, f.eid, externalID)
	items := recItems(f.t, f.e.do("GET", recRecords+"?entityId="+f.eid+"&id="+id, f.key, nil).expect(200).JSON())
	if len(items) == 0 {
		return nil
	}
	return items[0]
}

// logs returns the integration log entries of the run at level.
func (f *dsFixture) logs(runID, level string) []map[string]any {
	f.t.Helper()
	q := url.Values{"runId": {runID}, "pageSize": {"100"}}
	if level != "" {
		q.Set("level", level)
	}
	return recItems(f.t, f.e.do("GET", "/api/integrations/logs?"+q.Encode(), f.key, nil).expect(200).JSON())
}

// list returns the runs list body for the query.
func (f *dsFixture) list(query string) map[string]any {
	f.t.Helper()
	return f.e.do("GET", "/api/data_sync/runs?"+query, f.key, nil).expect(200).JSON()
}

// dsEvents counts the tenant's data sync events of the run, by type.
func dsEvents(t *testing.T, e *testEnv, tenantID, runID string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, typ := range []string{datasync.EventRunStarted, datasync.EventRunCompleted, datasync.EventRunFailed, datasync.EventRunCancelled} {
		evs, err := store.ListEvents(t.Context(), e.kit.DB, store.EventFilter{TenantID: tenantID, Type: typ, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			var data struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatalf("%s event data: %v", typ, err)
			}
			if data.ID == runID {
				out[strings.TrimPrefix(typ, "data_sync.run.")]++
			}
		}
	}
	return out
}

// expectEvents checks the run emitted exactly the events named, once
// each ("started", "completed", …).
func expectEvents(t *testing.T, e *testEnv, tenantID, runID string, want ...string) {
	t.Helper()
	got := dsEvents(t, e, tenantID, runID)
	wantMap := map[string]int{}
	for _, w := range want {
		wantMap[w] = 1
	}
	if fmt.Sprint(got) != fmt.Sprint(wantMap) {
		t.Errorf("run %s events %v, want %v", runID, got, wantMap)
	}
}

// expectRun checks the run's status and counters (created, updated,
// skipped, failed, batches).
func expectRun(t *testing.T, what string, run map[string]any, status string, counts ...int) {
	t.Helper()
	got := []any{run["status"]}
	want := []any{status}
	for i, k := range []string{"createdCount", "updatedCount", "skippedCount", "failedCount", "batchesCompleted"} {
		if i < len(counts) {
			got, want = append(got, run[k]), append(want, float64(counts[i]))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: status and counters %v, want %v; run %v", what, got, want, run)
	}
}

// dsReq is a request a source received.
type dsReq struct {
	Method, Path, Cursor, Limit, Auth string
	HasCursor                         bool
}

// dsSource is a local JSON source and target. GET /{entityType} pages n
// items ext-0…ext-(n-1), cursor being the next index; POST /{entityType}
// answers export results. It logs every request.
type dsSource struct {
	*httptest.Server

	mu sync.Mutex
	n  int
	// version is appended to every title.
	version string
	// bad are items whose qty is not a number.
	bad map[int]bool
	// fail, when set, answers the request for cursor, the attempt-th
	// (from 1) for that cursor, with a status instead of the page (0:
	// the page).
	fail     func(cursor string, attempt int) int
	failBody string
	attempts map[string]int
	reqs     []dsReq
	// gates hold the requests for a cursor until the gate is opened;
	// arrived gets the cursor of each held request.
	gates   map[string]*dsGate
	arrived chan string
	// exports are the items of each POST body; result decides an
	// exported item's result from its data.
	exports [][]map[string]any
	result  func(data map[string]any) (status, errText string)
}

type dsGate struct {
	ch   chan struct{}
	once sync.Once
}

func (g *dsGate) open() { g.once.Do(func() { close(g.ch) }) }

func dsNewSource(t *testing.T, n int) *dsSource {
	s := &dsSource{n: n, attempts: map[string]int{}, gates: map[string]*dsGate{}, arrived: make(chan string, 100)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(s.openAll) // before Close: no handler left waiting
	return s
}

func (s *dsSource) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := dsReq{Method: r.Method, Path: r.URL.Path, Cursor: q.Get("cursor"), Limit: q.Get("limit"),
		Auth: r.Header.Get("Authorization"), HasCursor: q.Has("cursor")}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.attempts[req.Cursor]++
	attempt := s.attempts[req.Cursor]
	gate := s.gates[req.Cursor]
	fail, failBody := s.fail, s.failBody
	s.mu.Unlock()
	if r.Method == http.MethodPost {
		s.export(w, r)
		return
	}
	if gate != nil {
		s.arrived <- req.Cursor
		select {
		case <-gate.ch:
		case <-r.Context().Done():
			return
		}
	}
	if fail != nil {
		if status := fail(req.Cursor, attempt); status != 0 {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(cmpOr(failBody, `{"error":"source unavailable"}`)))
			return
		}
	}
	s.mu.Lock()
	n, version := s.n, s.version
	bad := s.bad
	s.mu.Unlock()
	from, _ := strconv.Atoi(req.Cursor)
	limit, _ := strconv.Atoi(req.Limit)
	to := min(from+limit, n)
	items := []map[string]any{}
	for i := from; i < to; i++ {
		data := map[string]any{"title": fmt.Sprintf("Item %d%s", i, version), "qty": i}
		if bad[i] {
			data["qty"] = "not a number"
		}
		items = append(items, map[string]any{"externalId": fmt.Sprintf("ext-%d", i), "data": data})
	}
	var next any
	if to < n {
		next = strconv.Itoa(to)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "nextCursor": next, "totalEstimate": n})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *dsSource) export(w http.ResponseWriter, r *http.Request) {
	var raw map[string]json.RawMessage
	var body struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.NewDecoder(r.Body).Decode(&raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := json.Unmarshal(raw["items"], &body.Items); err != nil || len(raw) != 1 {
		http.Error(w, "want a body {items: [...]}", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.exports = append(s.exports, body.Items)
	result := s.result
	s.mu.Unlock()
	results := []map[string]any{}
	for _, it := range body.Items {
		data, _ := it["data"].(map[string]any)
		status, errText := "success", ""
		if result != nil {
			status, errText = result(data)
		}
		res := map[string]any{"localId": it["localId"], "status": status}
		if status == "success" {
			res["externalId"] = "x-" + fmt.Sprint(it["localId"])
		}
		if errText != "" {
			res["error"] = errText
		}
		results = append(results, res)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"results": results})
}

// set changes the source under its lock.
func (s *dsSource) set(fn func(s *dsSource)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

// reset forgets the requests and attempts so far.
func (s *dsSource) reset() {
	s.set(func(s *dsSource) { s.reqs, s.attempts, s.exports = nil, map[string]int{}, nil })
}

func (s *dsSource) requests() []dsReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// cursors returns the cursor of each GET so far ("-" when absent).
func (s *dsSource) cursors() []string {
	var out []string
	for _, r := range s.requests() {
		if r.Method != http.MethodGet {
			continue
		}
		if !r.HasCursor {
			out = append(out, "-")
		} else {
			out = append(out, r.Cursor)
		}
	}
	return out
}

// count returns how many GETs asked for cursor.
func (s *dsSource) count(cursor string) int {
	n := 0
	for _, r := range s.requests() {
		if r.Method == http.MethodGet && r.Cursor == cursor {
			n++
		}
	}
	return n
}

// hold makes requests for cursor wait until the returned gate opens.
func (s *dsSource) hold(cursor string) *dsGate {
	g := &dsGate{ch: make(chan struct{})}
	s.set(func(s *dsSource) { s.gates[cursor] = g })
	return g
}

func (s *dsSource) openAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.gates {
		g.open()
	}
}

// awaitArrival waits for a held request for cursor.
func (s *dsSource) awaitArrival(t *testing.T, cursor string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case c := <-s.arrived:
			if c == cursor {
				return
			}
		case <-timeout:
			t.Fatalf("no request for cursor %q after 60 s; requests %v", cursor, s.cursors())
		}
	}
}

// pageCursors are the cursors of pages of size bs from from to n, the
// first written "-" when from is 0 (no cursor parameter).
func pageCursors(from, n, bs int) []string {
	var out []string
	for i := from; i < n || (i == from && n == from); i += bs {
		if i == 0 {
			out = append(out, "-")
		} else {
			out = append(out, strconv.Itoa(i))
		}
	}
	return out
}

// 1, 13: 10,000 items in batches of 500, then a full re-run that updates
// every record and duplicates none.
func TestDataSyncImportTenThousand(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		src := dsNewSource(t, 10000)
		f.credentials(src.URL, "")

		began := time.Now()
		id := f.start(f.body("import", "batchSize", 500))
		run := f.wait(id)
		t.Logf("10,000 items imported in %v", time.Since(began))
		expectRun(t, "the import", run, "completed", 10000, 0, 0, 0, 20)
		if run["lastError"] != nil {
			t.Errorf("lastError %v", run["lastError"])
		}
		if got := recKeys(run); !slices.Equal(got, dsDetailKeys) {
			t.Errorf("detail keys %v", got)
		}
		pj, _ := run["progressJob"].(map[string]any)
		if pj == nil || pj["id"] != run["progressJobId"] || pj["status"] != "completed" || pj["processedCount"] != 10000.0 ||
			pj["totalCount"] != 10000.0 || pj["progressPercent"] != 100.0 {
			t.Errorf("progress job %v (run %v)", pj, run)
		}
		if got := f.records(); got != 10000 {
			t.Fatalf("%d records after the import, want 10000", got)
		}
		if got, want := src.cursors(), pageCursors(0, 10000, 500); !slices.Equal(got, want) {
			t.Errorf("source requests %v, want %v", got, want)
		}
		for _, r := range src.requests() {
			if r.Limit != "500" || r.Path != "/"+f.eid {
				t.Errorf("request %+v, want limit 500 on /%s", r, f.eid)
				break
			}
		}
		if rec := f.record("ext-4321"); rec == nil || rec["title"] != "Item 4321" || rec["qty"] != 4321.0 {
			t.Errorf("record of ext-4321: %v", rec)
		}

		// The run's progress job is among the recently completed ones.
		active := f.e.do("GET", "/api/progress/active", f.key, nil).expect(200).JSON()
		var found map[string]any
		for _, j := range recItems(t, map[string]any{"items": active["recentlyCompleted"]}) {
			if j["id"] == run["progressJobId"] {
				found = j
			}
		}
		if found == nil || found["status"] != "completed" || found["processedCount"] != 10000.0 || found["totalCount"] != 10000.0 ||
			found["jobType"] != "data_sync.run" {
			t.Errorf("recentlyCompleted lacks the run's job %v: %v", run["progressJobId"], active)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "completed")

		// A full re-run after the source changed every item.
		src.reset()
		src.set(func(s *dsSource) { s.version = " v2" })
		began = time.Now()
		again := f.start(f.body("import", "batchSize", 500, "fullSync", true))
		run = f.wait(again)
		t.Logf("10,000 items updated in %v", time.Since(began))
		expectRun(t, "the full re-run", run, "completed", 0, 10000, 0, 0, 20)
		if got := f.records(); got != 10000 {
			t.Fatalf("%d records after the re-run, want 10000 (no duplicates)", got)
		}
		if got, want := src.cursors(), pageCursors(0, 10000, 500); !slices.Equal(got, want) {
			t.Errorf("re-run requests %v, want every page from the first", got)
		}
		for _, ext := range []string{"ext-0", "ext-4321", "ext-9999"} {
			n, _ := strconv.Atoi(strings.TrimPrefix(ext, "ext-"))
			if rec := f.record(ext); rec == nil || rec["title"] != fmt.Sprintf("Item %d v2", n) {
				t.Errorf("record of %s after the re-run: %v", ext, rec)
			}
		}
		expectEvents(t, f.e, f.tf.ID, again, "started", "completed")
		expectEvents(t, f.e, f.tf.ID, id, "started", "completed")
	})
}

// 2: a run without fullSync continues at the last completed run's cursor:
// only the last page is read again (items added to it are created, the
// others updated).
func TestDataSyncContinuesFromLastCursor(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		src := dsNewSource(t, 250)
		f.credentials(src.URL, "")

		first := f.wait(f.start(f.body("import", "batchSize", 100)))
		expectRun(t, "the first run", first, "completed", 250, 0, 0, 0, 3)
		if got := src.cursors(); !slices.Equal(got, []string{"-", "100", "200"}) {
			t.Fatalf("first run requests %v", got)
		}
		src.reset()
		src.set(func(s *dsSource) { s.n, s.version = 260, " v2" })
		second := f.wait(f.start(f.body("import", "batchSize", 100)))
		expectRun(t, "the continuing run", second, "completed", 10, 50, 0, 0, 1)
		if got := src.cursors(); !slices.Equal(got, []string{"200"}) {
			t.Fatalf("continuing run requests %v, want only the last page (cursor 200)", got)
		}
		if got := f.records(); got != 260 {
			t.Fatalf("%d records, want 260", got)
		}
		if rec := f.record("ext-199"); rec == nil || rec["title"] != "Item 199" {
			t.Errorf("ext-199 (not read again): %v", rec)
		}
		if rec := f.record("ext-201"); rec == nil || rec["title"] != "Item 201 v2" {
			t.Errorf("ext-201 (read again): %v", rec)
		}
		// Again: the continuing run completed, so its cursor is the last.
		src.reset()
		third := f.wait(f.start(f.body("import", "batchSize", 100)))
		expectRun(t, "a third run", third, "completed", 0, 60, 0, 0, 1)
		if got := src.cursors(); !slices.Equal(got, []string{"200"}) {
			t.Fatalf("third run requests %v", got)
		}
	})
}

// 3, 10, 13: cancelling a running run: the batch in progress commits, no
// other page is read, counters match the records; a second cancel and a
// cancel of a completed run are 409; a cancelled run retried resumes.
func TestDataSyncCancelRunning(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		src := dsNewSource(t, 1000)
		f.credentials(src.URL, "")
		gate := src.hold("150") // the fourth page of 50

		id := f.start(f.body("import", "batchSize", 50))
		src.awaitArrival(t, "150")
		// While it runs, another run of the same target is refused.
		r := f.e.do("POST", "/api/data_sync/run", f.key, f.body("import", "batchSize", 50)).expect(409).JSON()
		if r["error"] != "A sync run is already in progress for this integration and entity direction" {
			t.Errorf("409 body %v", r)
		}
		expectBody(t, f.e.do("POST", "/api/data_sync/runs/"+id+"/cancel", f.key, nil), 200, map[string]any{"ok": true})
		// The batch in progress is not cut short: the run still runs. (The
		// fourth page is read while the third is written, so the third
		// may still be committing.)
		run := f.waitFor(id, func(run map[string]any) bool { return run["batchesCompleted"] == 3.0 })
		if run["status"] != "running" {
			t.Errorf("after cancel, before the page came back: %v", run)
		}
		gate.open()
		run = f.wait(id)
		expectRun(t, "the cancelled run", run, "cancelled", 200, 0, 0, 0, 4)
		if got := f.records(); got != 200 {
			t.Errorf("%d records, want 200 (the committed batches)", got)
		}
		if got := src.cursors(); !slices.Equal(got, []string{"-", "50", "100", "150"}) {
			t.Errorf("requests %v: a page was read after the cancel", got)
		}
		if pj, _ := run["progressJob"].(map[string]any); pj == nil || pj["status"] != "cancelled" || pj["processedCount"] != 200.0 {
			t.Errorf("progress job %v", run["progressJob"])
		}
		if run["lastError"] != nil {
			t.Errorf("lastError %v", run["lastError"])
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "cancelled")
		r = f.e.do("POST", "/api/data_sync/runs/"+id+"/cancel", f.key, nil).expect(409).JSON()
		if r["error"] != "Only pending or running runs can be cancelled" {
			t.Errorf("second cancel body %v", r)
		}

		// Retried: from the cursor, with the batch size of the old run.
		src.reset()
		retry := f.e.do("POST", "/api/data_sync/runs/"+id+"/retry", f.key, nil).expect(201).JSON()
		if got := recKeys(retry); !slices.Equal(got, []string{"id", "progressJobId"}) || retry["id"] == id || retry["progressJobId"] == run["progressJobId"] {
			t.Fatalf("retry answer %v", retry)
		}
		done := f.wait(retry["id"].(string))
		expectRun(t, "the retry", done, "completed", 800, 0, 0, 0, 16)
		if got, want := src.cursors(), pageCursors(200, 1000, 50); !slices.Equal(got, want) {
			t.Errorf("retry requests %v, want %v", got, want)
		}
		if got := f.records(); got != 1000 {
			t.Errorf("%d records after the retry, want 1000", got)
		}
		expectRun(t, "the cancelled run after the retry", f.detail(id), "cancelled", 200, 0, 0, 0, 4)
		f.e.do("POST", "/api/data_sync/runs/"+retry["id"].(string)+"/cancel", f.key, nil).expect(409)
		r = f.e.do("POST", "/api/data_sync/runs/"+retry["id"].(string)+"/retry", f.key, nil).expect(409).JSON()
		if r["error"] != "Only failed or cancelled runs can be retried" {
			t.Errorf("retry of a completed run: %v", r)
		}
		expectEvents(t, f.e, f.tf.ID, retry["id"].(string), "started", "completed")
	})
}

// 3: a cancel that lands while the worker's batch transaction is open
// (here held open by a lock on the records table on PostgreSQL, so the
// interleaving is certain) must not be lost: the run ends cancelled
// after that batch, and its counters match the records.
func TestDataSyncCancelDuringBatchCommit(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		src := dsNewSource(t, 1000)
		f.credentials(src.URL, "")
		gate := src.hold("200") // the second page of 200

		id := f.start(f.body("import", "batchSize", 200))
		src.awaitArrival(t, "200")
		ctx := t.Context()
		var release func() error
		if db.Dialect().Name() == "postgres" {
			// Hold the second batch's transaction open at its insert.
			release = holdInTx(t, db, `LOCK TABLE custom_entity_records IN SHARE MODE`)
		}
		gate.open()
		// waitFor polls query (one count) until it is positive.
		waitFor := func(what, query string, args ...any) {
			deadline := time.Now().Add(30 * time.Second)
			for {
				var n int
				if err := db.QueryRow(ctx, query, args...).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n > 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal(what) // the test's end releases the lock
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		var worker int // the backend of the batch held at its insert
		if release != nil {
			waitFor("the worker never waited on the records table", `SELECT count(*) FROM pg_locks WHERE NOT granted
				AND relation = 'custom_entity_records'::regclass`)
			if err := db.QueryRow(ctx, `SELECT pid FROM pg_locks WHERE NOT granted
				AND relation = 'custom_entity_records'::regclass LIMIT 1`).Scan(&worker); err != nil {
				t.Fatal(err)
			}
		}
		// The cancel waits for the batch holding the run's row (it locks
		// it), so it runs beside the test's lock and lands after the batch
		// commits: no write of either is lost.
		cancelled := make(chan *response, 1)
		go func() { cancelled <- f.e.do("POST", "/api/data_sync/runs/"+id+"/cancel", f.key, nil) }()
		if release != nil {
			// The cancel waits on the run's row, which the held batch locks.
			waitFor("the cancel never waited on the held batch", `SELECT count(*) FROM pg_stat_activity
				WHERE $1 = ANY(pg_blocking_pids(pid))`, worker)
			if err := release(); err != nil {
				t.Fatal(err)
			}
		}
		expectBody(t, <-cancelled, 200, map[string]any{"ok": true})
		run := f.wait(id)
		if run["status"] != "cancelled" {
			t.Errorf("run %v after a cancel answered 200 during its batch; want cancelled", run["status"])
		}
		records := f.records()
		if run["createdCount"] != float64(records) || run["batchesCompleted"] != float64(records/200) {
			t.Errorf("counters %v created, %v batches; %d records", run["createdCount"], run["batchesCompleted"], records)
		}
		// The cancel waited for the batch that held the run's row; that
		// batch committed, and so may the one whose page was being read
		// when the cancel landed (the batch in progress completes). When
		// the held batch commits, the next batch's transaction may take the
		// run's row before the waiting cancel does (PostgreSQL wakes both):
		// the cancel then lands after that batch, while the page after it is
		// being read, which completes too (seen under CI's load). Never
		// more: the source's fifth and last page (records 801 to 1,000) is never written.
		if db.Dialect().Name() == "postgres" && records != 400 && records != 600 && records != 800 {
			t.Errorf("%d records, %v batches; want 400, 600 or 800 (the batches in progress, then cancelled)", records, run["batchesCompleted"])
		}
	})
}

// 4, 13: a source failing (403) at page 3 fails the run with lastError
// and an error log line; the source fixed, a retry resumes at the cursor
// and duplicates nothing; fromBeginning updates everything.
func TestDataSyncRetryFromCursor(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		src := dsNewSource(t, 1000)
		f.credentials(src.URL, "")
		src.set(func(s *dsSource) {
			s.fail = func(cursor string, _ int) int {
				if cursor == "200" {
					return http.StatusForbidden
				}
				return 0
			}
		})
		id := f.start(f.body("import", "batchSize", 100))
		run := f.wait(id)
		expectRun(t, "the failing run", run, "failed", 200, 0, 0, 0, 2)
		lastError, _ := run["lastError"].(string)
		if !strings.Contains(lastError, "403") {
			t.Errorf("lastError %q, want the 403", lastError)
		}
		if n := src.count("200"); n != 1 {
			t.Errorf("the 403 page was asked %d times, want once (not retryable)", n)
		}
		if pj, _ := run["progressJob"].(map[string]any); pj == nil || pj["status"] != "failed" {
			t.Errorf("progress job %v", run["progressJob"])
		}
		logs := f.logs(id, "error")
		if len(logs) != 1 || logs[0]["runId"] != id || logs[0]["integrationId"] != dsIntegration || logs[0]["entityType"] != f.eid ||
			!strings.Contains(logs[0]["message"].(string), "403") {
			t.Errorf("error log of the run: %v", logs)
		}
		if all := f.logs(id, ""); len(all) != 1 {
			t.Errorf("log of the run: %v, want the one error line", all)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "failed")

		// Fixed, and retried.
		src.reset()
		src.set(func(s *dsSource) { s.fail = nil })
		retry := f.e.do("POST", "/api/data_sync/runs/"+id+"/retry", f.key, map[string]any{}).expect(201).JSON()
		rid := retry["id"].(string)
		done := f.wait(rid)
		expectRun(t, "the retry", done, "completed", 800, 0, 0, 0, 8)
		if got, want := src.cursors(), pageCursors(200, 1000, 100); !slices.Equal(got, want) {
			t.Errorf("retry requests %v, want %v", got, want)
		}
		for _, r := range src.requests() {
			if r.Limit != "100" {
				t.Errorf("retry request with limit %s, want the old run's 100", r.Limit)
				break
			}
		}
		if got := f.records(); got != 1000 {
			t.Errorf("%d records after the retry, want 1000", got)
		}
		expectRun(t, "the failed run after the retry", f.detail(id), "failed", 200, 0, 0, 0, 2)
		expectEvents(t, f.e, f.tf.ID, rid, "started", "completed")
		f.e.do("POST", "/api/data_sync/runs/"+rid+"/retry", f.key, nil).expect(409)

		// From the beginning: every item again, as updates.
		src.reset()
		again := f.e.do("POST", "/api/data_sync/runs/"+id+"/retry", f.key, map[string]any{"fromBeginning": true}).expect(201).JSON()
		done = f.wait(again["id"].(string))
		expectRun(t, "the retry from the beginning", done, "completed", 0, 1000, 0, 0, 10)
		if got, want := src.cursors(), pageCursors(0, 1000, 100); !slices.Equal(got, want) {
			t.Errorf("retry from the beginning requests %v, want %v", got, want)
		}
		if got := f.records(); got != 1000 {
			t.Errorf("%d records, want 1000", got)
		}
	})
}

// 5: retryable source errors are retried with backoff: two 503s then the
// page completes; a page always 500 is tried len(Backoff)+1 times and the
// run fails.
func TestDataSyncRetryableSourceErrors(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		src := dsNewSource(t, 300)
		f.credentials(src.URL, "")
		src.set(func(s *dsSource) {
			s.fail = func(cursor string, attempt int) int {
				if cursor == "100" && attempt <= 2 {
					return http.StatusServiceUnavailable
				}
				return 0
			}
		})
		id := f.start(f.body("import", "batchSize", 100))
		expectRun(t, "a run through two 503s", f.wait(id), "completed", 300, 0, 0, 0, 3)
		if n := src.count("100"); n != 3 {
			t.Errorf("the flaky page was asked %d times, want 3", n)
		}
		if got := f.records(); got != 300 {
			t.Errorf("%d records, want 300", got)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "completed")

		src.reset()
		src.set(func(s *dsSource) {
			s.fail = func(cursor string, _ int) int {
				if cursor == "100" {
					return http.StatusInternalServerError
				}
				return 0
			}
		})
		id = f.start(f.body("import", "batchSize", 100, "fullSync", true))
		run := f.wait(id)
		expectRun(t, "a run on a page always 500", run, "failed", 0, 100, 0, 0, 1)
		if n := src.count("100"); n != len(dsBackoff)+1 {
			t.Errorf("the failing page was asked %d times, want %d", n, len(dsBackoff)+1)
		}
		if le, _ := run["lastError"].(string); !strings.Contains(le, "500") {
			t.Errorf("lastError %q", le)
		}
		if logs := f.logs(id, "error"); len(logs) != 1 {
			t.Errorf("error log %v", logs)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "failed")
	})
}

// 6: items failing validation are counted failed with a warn log line
// each; the others are imported.
func TestDataSyncInvalidItems(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		src := dsNewSource(t, 30)
		src.set(func(s *dsSource) { s.bad = map[int]bool{7: true, 21: true} })
		f.credentials(src.URL, "")
		id := f.start(f.body("import", "batchSize", 10))
		expectRun(t, "a run with two invalid items", f.wait(id), "completed", 28, 0, 0, 2, 3)
		if got := f.records(); got != 28 {
			t.Errorf("%d records, want 28", got)
		}
		if rec := f.record("ext-7"); rec != nil {
			t.Errorf("the invalid item was written: %v", rec)
		}
		if rec := f.record("ext-8"); rec == nil || rec["qty"] != 8.0 {
			t.Errorf("ext-8: %v", rec)
		}
		warns := f.logs(id, "warn")
		if len(warns) != 2 {
			t.Fatalf("warn log %v, want 2 lines", warns)
		}
		byEntity := map[string]map[string]any{}
		for _, w := range warns {
			byEntity[fmt.Sprint(w["entityId"])] = w
		}
		for _, ext := range []string{"ext-7", "ext-21"} {
			w := byEntity[datasync.RecordID(f.tf.ID, dsIntegration, f.eid, ext)]
			if w == nil || !strings.Contains(w["message"].(string), ext) || w["runId"] != id || w["entityType"] != f.eid {
				t.Errorf("no warn line for %s: %v", ext, warns)
			}
		}
		if errs := f.logs(id, "error"); len(errs) != 0 {
			t.Errorf("error lines %v", errs)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "completed")
	})
}

// 7, 9: a 401 fails the run at once (one request), with the 401 in
// lastError and never the token; validate answers 422.
func TestDataSyncUnauthorizedSource(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		const token = "tok-S3cretValue"
		src := dsNewSource(t, 100)
		src.set(func(s *dsSource) {
			s.fail = func(string, int) int { return http.StatusUnauthorized }
			s.failBody = `{"error":"invalid token tok-S3cretValue"}`
		})
		f.credentials(src.URL, token)
		id := f.start(f.body("import", "batchSize", 10))
		run := f.wait(id)
		expectRun(t, "a run refused by the source", run, "failed", 0, 0, 0, 0, 0)
		le, _ := run["lastError"].(string)
		if !strings.Contains(le, "401") || strings.Contains(le, token) {
			t.Errorf("lastError %q: want the 401, never the token", le)
		}
		reqs := src.requests()
		if len(reqs) != 1 || reqs[0].Auth != "Bearer "+token || reqs[0].HasCursor {
			t.Errorf("requests %+v, want one first-page request with the token", reqs)
		}
		if got := f.records(); got != 0 {
			t.Errorf("%d records", got)
		}
		logs := f.logs(id, "error")
		if len(logs) != 1 || strings.Contains(logs[0]["message"].(string), token) {
			t.Errorf("error log %v", logs)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "failed")

		r := f.e.do("POST", "/api/data_sync/validate", f.key, f.body("import")).expect(422).JSON()
		if msg, _ := r["message"].(string); r["ok"] != false || !strings.Contains(msg, "401") || strings.Contains(msg, token) || len(r) != 2 {
			t.Errorf("validate against a 401 source: %v", r)
		}
	})
}

// 8: an export sends the entity's records in batches of {items: [{localId,
// data}]} and counts the target's results.
func TestDataSyncExport(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		src := dsNewSource(t, 0)
		src.set(func(s *dsSource) {
			s.result = func(data map[string]any) (string, string) {
				switch data["title"] {
				case "err":
					return "error", "rejected by the target"
				case "skip":
					return "skipped", ""
				}
				return "success", ""
			}
		})
		f.credentials(src.URL, "tok-export")
		want := map[string]string{}
		for _, title := range []string{"a1", "a2", "err", "a3", "skip", "a4", "a5"} {
			body := f.e.do("POST", recRecords, f.key, map[string]any{"entityId": f.eid, "values": map[string]any{"title": title}}).expect(200).JSON()
			want[body["item"].(map[string]any)["recordId"].(string)] = title
		}
		id := f.start(f.body("export", "batchSize", 3))
		run := f.wait(id)
		expectRun(t, "the export", run, "completed", 0, 5, 1, 1, 3)
		src.mu.Lock()
		exports := slices.Clone(src.exports)
		src.mu.Unlock()
		if len(exports) != 3 || len(exports[0]) != 3 || len(exports[1]) != 3 || len(exports[2]) != 1 {
			t.Fatalf("export bodies %v, want batches of 3, 3 and 1", exports)
		}
		var sent []string
		for _, batch := range exports {
			for _, it := range batch {
				if got := recKeys(it); !slices.Equal(got, []string{"data", "localId"}) {
					t.Errorf("exported item keys %v: %v", got, it)
				}
				lid, _ := it["localId"].(string)
				sent = append(sent, lid)
				if data, _ := it["data"].(map[string]any); len(data) != 1 || data["title"] != want[lid] {
					t.Errorf("exported item %v, want data {title: %q}", it, want[lid])
				}
			}
		}
		if !slices.IsSorted(sent) || len(sent) != 7 {
			t.Errorf("exported ids %v, want the 7 records in id order", sent)
		}
		for lid := range want {
			if !slices.Contains(sent, lid) {
				t.Errorf("record %s not exported", lid)
			}
		}
		for _, r := range src.requests() {
			if r.Method != http.MethodPost || r.Path != "/"+f.eid || r.Auth != "Bearer tok-export" {
				t.Errorf("export request %+v", r)
			}
		}
		if got := f.records(); got != 7 {
			t.Errorf("%d records after the export", got)
		}
		expectEvents(t, f.e, f.tf.ID, id, "started", "completed")
	})
}

// 9: validate's answers.
func TestDataSyncValidate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, false)
		validate := func(body map[string]any) *response {
			return f.e.do("POST", "/api/data_sync/validate", f.key, body)
		}
		// The health fields of the integration's state: null until a
		// connection check runs, then its outcome.
		health := func() (status any, checked bool) {
			t.Helper()
			st := f.e.do("GET", "/api/integrations/"+dsIntegration, f.key, nil).expect(200).JSON()["state"].(map[string]any)
			return st["lastHealthStatus"], st["lastHealthCheckedAt"] != nil && st["lastHealthLatencyMs"] != nil
		}
		expectBody(t, validate(f.body("import")), 422, map[string]any{"ok": false, "message": "Missing credentials"})
		if status, checked := health(); status != nil || checked {
			t.Errorf("health before any check: %v %v", status, checked)
		}

		src := dsNewSource(t, 5)
		f.credentials(src.URL, "")
		expectBody(t, validate(f.body("import")), 200, map[string]any{"ok": true, "message": "Connection validated"})
		if status, checked := health(); status != "healthy" || !checked {
			t.Errorf("health after a passing check: %v %v", status, checked)
		}
		if reqs := src.requests(); len(reqs) != 1 || reqs[0].Limit != "1" || reqs[0].HasCursor {
			t.Errorf("validate requests %+v, want one first page with limit 1", reqs)
		}
		expectBody(t, validate(f.body("export")), 200, map[string]any{"ok": true, "message": "Connection validated"})

		body := f.body("import")
		body["integrationId"] = "no_such_integration"
		expectBody(t, validate(body), 404, map[string]any{"ok": false, "message": "Integration or providerKey not found"})
		body["integrationId"] = "gateway_mock"
		expectBody(t, validate(body), 404, map[string]any{"ok": false, "message": "No registered sync adapter for provider"})
		body["integrationId"] = "webhooks_custom" // no provider key
		expectBody(t, validate(body), 404, map[string]any{"ok": false, "message": "Integration or providerKey not found"})

		r := validate(f.body("import", "entityType", "rec.h_none"+randomHex(3))).expect(422).JSON()
		if r["ok"] != false || r["message"] == nil {
			t.Errorf("validate of an unknown entity type: %v", r)
		}
		r = validate(map[string]any{"direction": "sideways"}).expect(422).JSON()
		details, _ := r["details"].(map[string]any)
		if r["ok"] != false || r["message"] != "Validation failed" || details["integrationId"] == nil || details["entityType"] == nil ||
			details["direction"] == nil {
			t.Errorf("validate of an empty target: %v", r)
		}

		src.set(func(s *dsSource) { s.fail = func(string, int) int { return http.StatusUnauthorized } })
		r = validate(f.body("import")).expect(422).JSON()
		if msg, _ := r["message"].(string); r["ok"] != false || !strings.Contains(msg, "401") || len(r) != 2 {
			t.Errorf("validate against a 401 source: %v", r)
		}
		if status, checked := health(); status != "unhealthy" || !checked {
			t.Errorf("health after a failing check: %v %v", status, checked)
		}
		other := dsTenant(t, f.e, "Other", "") // health is the tenant's own
		if st := other.e.do("GET", "/api/integrations/"+dsIntegration, other.key, nil).expect(200).JSON()["state"].(map[string]any); st["lastHealthStatus"] != nil {
			t.Errorf("another tenant sees health %v", st["lastHealthStatus"])
		}
	})
}

// 10, 13: refused runs; a pending run (no worker runs here) blocks
// another of its target, is cancelled at once, and a retry waits for the
// target to be free.
func TestDataSyncRunRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, false)
		src := dsNewSource(t, 10)
		f.credentials(src.URL, "")
		run := func(body map[string]any) *response { return f.e.do("POST", "/api/data_sync/run", f.key, body) }
		invalid := func(what string, body map[string]any, field string) {
			t.Helper()
			resp := run(body)
			if resp.Status != 422 {
				t.Errorf("%s: status %d, want 422; body %s", what, resp.Status, resp.Body)
				return
			}
			r := resp.JSON()
			if details, _ := r["details"].(map[string]any); details[field] == nil {
				t.Errorf("%s: 422 body %v, want details naming %s", what, r, field)
			}
		}
		invalid("a bad direction", f.body("sideways"), "direction")
		invalid("no direction", f.body(""), "direction")
		invalid("batchSize 1001", f.body("import", "batchSize", 1001), "batchSize")
		invalid("batchSize -1", f.body("import", "batchSize", -1), "batchSize")
		invalid("an unknown entity type", f.body("import", "entityType", "rec.h_none"+randomHex(3)), "entityType")
		invalid("a code entity", f.body("import", "entityType", "order"), "entityType")
		invalid("no entity type", f.body("import", "entityType", ""), "entityType")
		body := f.body("import")
		body["integrationId"] = "no_such_integration"
		if r := run(body).expect(404).JSON(); r["error"] != "Integration or providerKey not found" {
			t.Errorf("unknown integration: %v", r)
		}
		body["integrationId"] = "gateway_mock"
		if r := run(body).expect(404).JSON(); r["error"] != "No registered sync adapter for provider" {
			t.Errorf("gateway_mock: %v", r)
		}
		if list := f.list(""); list["total"] != 0.0 {
			t.Fatalf("refused runs were stored: %v", list)
		}

		f.e.do("PUT", "/api/integrations/"+dsIntegration+"/state", f.key, map[string]any{"isEnabled": false}).expect(200)
		if r := run(f.body("import")).expect(409).JSON(); r["error"] != "Integration is disabled" {
			t.Errorf("disabled: %v", r)
		}
		f.e.do("PUT", "/api/integrations/"+dsIntegration+"/state", f.key, map[string]any{"isEnabled": true}).expect(200)

		// batchSize 1 and 1000 are the bounds.
		first := f.start(f.body("import", "batchSize", 1000))
		if r := run(f.body("import", "batchSize", 1)).expect(409).JSON(); r["error"] != "A sync run is already in progress for this integration and entity direction" {
			t.Errorf("a second pending run: %v", r)
		}
		export := f.start(f.body("export", "batchSize", 1)) // another direction is another target
		if d := f.detail(first); d["status"] != "pending" {
			t.Fatalf("first run %v", d)
		}

		// Cancelling a pending run is immediate.
		expectBody(t, f.e.do("POST", "/api/data_sync/runs/"+first+"/cancel", f.key, nil), 200, map[string]any{"ok": true})
		d := f.detail(first)
		expectRun(t, "the pending run cancelled", d, "cancelled", 0, 0, 0, 0, 0)
		if pj, _ := d["progressJob"].(map[string]any); pj == nil || pj["status"] != "cancelled" {
			t.Errorf("progress job of the cancelled pending run: %v", d["progressJob"])
		}
		expectEvents(t, f.e, f.tf.ID, first, "cancelled")
		f.e.do("POST", "/api/data_sync/runs/"+first+"/cancel", f.key, nil).expect(409)

		second := f.start(f.body("import"))
		// A retry is a new run of the target: refused while one is pending.
		if r := f.e.do("POST", "/api/data_sync/runs/"+first+"/retry", f.key, nil).expect(409).JSON(); r["error"] != "A sync run is already in progress for this integration and entity direction" {
			t.Errorf("retry while a run is pending: %v", r)
		}
		expectBody(t, f.e.do("POST", "/api/data_sync/runs/"+second+"/cancel", f.key, nil), 200, map[string]any{"ok": true})
		third := f.e.do("POST", "/api/data_sync/runs/"+first+"/retry", f.key, nil).expect(201).JSON()["id"].(string)
		f.e.do("POST", "/api/data_sync/runs/"+third+"/retry", f.key, nil).expect(409) // pending: not retryable
		f.e.do("POST", "/api/data_sync/runs/"+export+"/retry", f.key, nil).expect(409)
		if d := f.detail(third); d["status"] != "pending" || d["entityType"] != f.eid || d["direction"] != "import" {
			t.Errorf("the retry run %v", d)
		}
		for _, id := range []string{first, second, third, export} {
			if evs := dsEvents(t, f.e, f.tf.ID, id); evs["started"] != 0 || evs["completed"] != 0 || evs["failed"] != 0 {
				t.Errorf("run %s events %v without a worker", id, evs)
			}
		}
		// Nothing ever reached the source: runs only start in the worker.
		if reqs := src.requests(); len(reqs) != 0 {
			t.Errorf("source requests %v", reqs)
		}

		// batchSize 0 is outside 1..1000 too (on an entity of its own, so a
		// run wrongly started does not block the target above).
		zero := recEntity()
		f.e.do("POST", "/api/entities/entities", f.key, map[string]any{"entityId": zero, "label": "Zero"}).expect(200)
		invalid("batchSize 0", f.body("import", "entityType", zero, "batchSize", 0), "batchSize")

		// Bad bodies.
		f.e.do("POST", "/api/data_sync/runs/"+first+"/retry", f.key, `{"fromBeginning": "yes"}`).expect(400)
		if r := run(f.body("import", "batchSize", "ten")); r.Status != 400 && r.Status != 422 {
			t.Errorf("a string batchSize: %d %s", r.Status, r.Body)
		}
	})
}

// 11: the runs list (filters, newest first, paging) and detail shapes.
func TestDataSyncRunsList(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, false)
		src := dsNewSource(t, 10)
		f.credentials(src.URL, "")
		other := recEntity()
		f.e.do("POST", "/api/entities/entities", f.key, map[string]any{"entityId": other, "label": "Others"}).expect(200)
		cancel := func(id string) {
			f.e.do("POST", "/api/data_sync/runs/"+id+"/cancel", f.key, nil).expect(200)
		}
		r1 := f.start(f.body("import")) // cancelled
		cancel(r1)
		r2 := f.start(f.body("import"))                      // pending
		r3 := f.start(f.body("export"))                      // pending
		r4 := f.start(f.body("import", "entityType", other)) // cancelled
		cancel(r4)
		ids := func(body map[string]any) []string {
			var out []string
			for _, it := range recItems(t, body) {
				out = append(out, it["id"].(string))
			}
			return out
		}
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"", []string{r4, r3, r2, r1}},
			{"integrationId=" + dsIntegration, []string{r4, r3, r2, r1}},
			{"integrationId=gateway_mock", nil},
			{"entityType=" + f.eid, []string{r3, r2, r1}},
			{"entityType=" + other, []string{r4}},
			{"direction=export", []string{r3}},
			{"direction=import", []string{r4, r2, r1}},
			{"status=cancelled", []string{r4, r1}},
			{"status=pending&direction=import", []string{r2}},
			{"status=completed", nil},
			{"entityType=" + f.eid + "&direction=import&status=cancelled", []string{r1}},
		} {
			body := f.list(c.query)
			if got := ids(body); !slices.Equal(got, c.want) || body["total"] != float64(len(c.want)) {
				t.Errorf("list %q: %v (total %v), want %v", c.query, got, body["total"], c.want)
			}
		}
		page := f.list("pageSize=2&page=2")
		if got := ids(page); !slices.Equal(got, []string{r2, r1}) || page["total"] != 4.0 || page["page"] != 2.0 ||
			page["pageSize"] != 2.0 || page["totalPages"] != 2.0 {
			t.Errorf("page 2 of 2: %v", page)
		}
		if got := recKeys(page); !slices.Equal(got, []string{"items", "page", "pageSize", "total", "totalPages"}) {
			t.Errorf("page keys %v", got)
		}
		if p := f.list("pageSize=2&page=3"); len(recItems(t, p)) != 0 || p["total"] != 4.0 {
			t.Errorf("page 3 of 2: %v", p)
		}
		f.list("pageSize=100")
		for _, q := range []string{"pageSize=101", "pageSize=1000", "direction=sideways", "status=done", "page=0", "pageSize=x"} {
			if r := f.e.do("GET", "/api/data_sync/runs?"+q, f.key, nil); r.Status != 400 {
				t.Errorf("list %q: %d %s, want 400", q, r.Status, r.Body)
			}
		}

		items := recItems(t, f.list("entityType="+other))
		item := items[0]
		if got := recKeys(item); !slices.Equal(got, dsRunKeys) {
			t.Errorf("list item keys %v, want %v", got, dsRunKeys)
		}
		if item["integrationId"] != dsIntegration || item["entityType"] != other || item["direction"] != "import" || item["status"] != "cancelled" ||
			item["lastError"] != nil || item["createdCount"] != 0.0 || item["batchesCompleted"] != 0.0 {
			t.Errorf("list item %v", item)
		}
		for _, k := range []string{"createdAt", "updatedAt"} {
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(item[k])); err != nil {
				t.Errorf("%s %v: %v", k, item[k], err)
			}
		}

		d := f.detail(r2)
		if got := recKeys(d); !slices.Equal(got, dsDetailKeys) {
			t.Errorf("detail keys %v", got)
		}
		pj, _ := d["progressJob"].(map[string]any)
		if got := recKeys(pj); !slices.Equal(got, dsProgressKeys) {
			t.Errorf("progressJob keys %v, want %v", got, dsProgressKeys)
		}
		if pj["id"] != d["progressJobId"] || pj["status"] != "pending" || pj["processedCount"] != 0.0 || d["status"] != "pending" {
			t.Errorf("detail of a pending run: %v", d)
		}
		// The detail's run members are the list item's.
		for _, it := range recItems(t, f.list("")) {
			if it["id"] == r2 {
				delete(d, "progressJob")
				sameJSON(t, "detail vs list item", d, it)
			}
		}
		for _, id := range []string{store.NewID(), "not-an-id"} {
			if r := f.e.do("GET", "/api/data_sync/runs/"+id, f.key, nil).expect(404).JSON(); r["error"] != "Run not found" {
				t.Errorf("unknown run: %v", r)
			}
			f.e.do("POST", "/api/data_sync/runs/"+id+"/cancel", f.key, nil).expect(404)
			f.e.do("POST", "/api/data_sync/runs/"+id+"/retry", f.key, nil).expect(404)
		}
	})
}

// 12: two tenants: runs, credentials, state and records never cross.
func TestDataSyncTenants(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		e := dsNewEnv(t, db, true)
		a := dsTenant(t, e, "Sync A", "")
		b := dsTenant(t, e, "Sync B", a.eid) // the same entity id in both tenants
		srcA, srcB := dsNewSource(t, 120), dsNewSource(t, 30)
		a.credentials(srcA.URL, "token-a")

		ra := a.start(a.body("import", "batchSize", 50))
		runA := a.wait(ra)
		expectRun(t, "tenant A's run", runA, "completed", 120, 0, 0, 0, 3)

		// B sees none of it, and cannot touch A's run.
		if l := b.list(""); l["total"] != 0.0 || len(recItems(t, l)) != 0 {
			t.Errorf("B's list: %v", l)
		}
		b.e.do("GET", "/api/data_sync/runs/"+ra, b.key, nil).expect(404)
		b.e.do("POST", "/api/data_sync/runs/"+ra+"/cancel", b.key, nil).expect(404)
		b.e.do("POST", "/api/data_sync/runs/"+ra+"/retry", b.key, nil).expect(404)
		// A's credentials are not B's.
		expectBody(t, b.e.do("POST", "/api/data_sync/validate", b.key, b.body("import")), 422, map[string]any{"ok": false, "message": "Missing credentials"})
		if r := b.e.do("POST", "/api/data_sync/run", b.key, b.body("import")).expect(422).JSON(); r["error"] != "Missing credentials" {
			t.Errorf("B's run without credentials: %v", r)
		}
		if got := b.records(); got != 0 {
			t.Errorf("B has %d records", got)
		}
		if got := a.records(); got != 120 {
			t.Errorf("A has %d records", got)
		}
		active := b.e.do("GET", "/api/progress/active", b.key, nil).expect(200).JSON()
		if fmt.Sprint(active["active"], active["recentlyCompleted"]) != "[] []" {
			t.Errorf("B's progress: %v", active)
		}

		// B's own credentials and run.
		b.credentials(srcB.URL, "token-b")
		srcA.reset()
		// A's state is not B's: A disabled, B still runs.
		a.e.do("PUT", "/api/integrations/"+dsIntegration+"/state", a.key, map[string]any{"isEnabled": false}).expect(200)
		a.e.do("POST", "/api/data_sync/run", a.key, a.body("import")).expect(409)
		rb := b.start(b.body("import", "batchSize", 50, "fullSync", true))
		expectRun(t, "tenant B's run", b.wait(rb), "completed", 30, 0, 0, 0, 1)
		if reqs := srcA.requests(); len(reqs) != 0 {
			t.Errorf("B's run reached A's source: %+v", reqs)
		}
		for _, r := range srcB.requests() {
			if r.Auth != "Bearer token-b" {
				t.Errorf("B's source got %q", r.Auth)
			}
		}
		if got := b.records(); got != 30 {
			t.Errorf("B has %d records, want 30", got)
		}
		if got := a.records(); got != 120 {
			t.Errorf("A has %d records after B's run, want 120", got)
		}
		if rec := a.record("ext-5"); rec == nil || rec["title"] != "Item 5" {
			t.Errorf("A's ext-5: %v", rec)
		}
		if rec := b.record("ext-5"); rec == nil {
			t.Errorf("B's ext-5 missing")
		}
		// Each lists only its own run; A cannot reach B's.
		if got := recItems(t, a.list("")); len(got) != 1 || got[0]["id"] != ra {
			t.Errorf("A's list: %v", got)
		}
		if got := recItems(t, b.list("")); len(got) != 1 || got[0]["id"] != rb {
			t.Errorf("B's list: %v", got)
		}
		a.e.do("GET", "/api/data_sync/runs/"+rb, a.key, nil).expect(404)
		a.e.do("POST", "/api/data_sync/runs/"+rb+"/cancel", a.key, nil).expect(404)
		if logs := b.logs(ra, ""); len(logs) != 0 {
			t.Errorf("B reads A's run log: %v", logs)
		}
		// Events stay with their tenant.
		expectEvents(t, e, a.tf.ID, ra, "started", "completed")
		expectEvents(t, e, b.tf.ID, rb, "started", "completed")
		expectEvents(t, e, b.tf.ID, ra)
		expectEvents(t, e, a.tf.ID, rb)
	})
}

// 14: every route needs its feature, and a credential.
func TestDataSyncPermissions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, false)
		src := dsNewSource(t, 10)
		f.credentials(src.URL, "")
		id := f.start(f.body("import"))
		// also: what the request needs beside the route's feature (an
		// export reads the entity's records).
		routes := []struct {
			method, path, feature string
			body                  any
			also                  []string
		}{
			{"POST", "/api/data_sync/validate", datasyncapi.FeatureSyncConfigure, f.body("import"), nil},
			{"POST", "/api/data_sync/run", datasyncapi.FeatureSyncRun, f.body("export"), []string{entitiesapi.FeatureEntitiesRecordsView}},
			{"GET", "/api/data_sync/runs", datasyncapi.FeatureSyncView, nil, nil},
			{"GET", "/api/data_sync/runs/" + id, datasyncapi.FeatureSyncView, nil, nil},
			{"POST", "/api/data_sync/runs/" + id + "/cancel", datasyncapi.FeatureSyncRun, nil, nil},
			{"POST", "/api/data_sync/runs/" + id + "/retry", datasyncapi.FeatureSyncRun, nil, nil},
		}
		for _, rt := range routes {
			var others []string
			for _, ft := range dsFeatures {
				if ft != rt.feature {
					others = append(others, ft)
				}
			}
			key := f.e.newKey(f.tf, others...)
			expectForbidden(t, f.e.do(rt.method, rt.path, key, rt.body), rt.feature)
			unauthorized(t, rt.method+" "+rt.path, f.e.do(rt.method, rt.path, "", rt.body))
			// The feature alone (with what the request also needs) is enough.
			only := f.e.newKey(f.tf, append([]string{rt.feature}, rt.also...)...)
			if r := f.e.do(rt.method, rt.path, only, rt.body); r.Status >= 300 {
				t.Errorf("%s %s with %s alone: %d %s", rt.method, rt.path, rt.feature, r.Status, r.Body)
			}
		}
		// Only the allowed requests changed anything: the run cancelled and
		// retried once, one export started.
		if d := f.detail(id); d["status"] != "cancelled" {
			t.Errorf("the run %v", d)
		}
		if l := f.list("direction=export"); l["total"] != 1.0 {
			t.Errorf("%v export runs, want 1", l["total"])
		}
		if l := f.list("direction=import"); l["total"] != 2.0 {
			t.Errorf("%v import runs, want 2 (the run and its retry)", l["total"])
		}
	})
}

// 10: starts racing for one target: exactly one wins, the others are 409
// (the unique index, not a check before the insert).
func TestDataSyncConcurrentStarts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, false)
		src := dsNewSource(t, 10)
		f.credentials(src.URL, "")
		const n = 6
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				statuses[i] = f.e.do("POST", "/api/data_sync/run", f.key, f.body("import")).Status
			})
		}
		wg.Wait()
		slices.Sort(statuses)
		if want := []int{201, 409, 409, 409, 409, 409}; !slices.Equal(statuses, want) {
			t.Errorf("concurrent starts answered %v, want %v", statuses, want)
		}
		if l := f.list(""); l["total"] != 1.0 {
			t.Errorf("%v runs stored, want 1", l["total"])
		}
	})
}

// 10: a retry starts a run like POST /run does: not on a disabled
// integration.
func TestDataSyncRetryDisabledIntegration(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, false)
		src := dsNewSource(t, 10)
		f.credentials(src.URL, "")
		id := f.start(f.body("import"))
		f.e.do("POST", "/api/data_sync/runs/"+id+"/cancel", f.key, nil).expect(200)
		f.e.do("PUT", "/api/integrations/"+dsIntegration+"/state", f.key, map[string]any{"isEnabled": false}).expect(200)
		r := f.e.do("POST", "/api/data_sync/runs/"+id+"/retry", f.key, nil)
		if r.Status != 409 || !strings.Contains(string(r.Body), "Integration is disabled") {
			t.Errorf("retry on a disabled integration: %d %s, want 409 Integration is disabled", r.Status, r.Body)
		}
		if l := f.list("status=pending"); l["total"] != 0.0 {
			t.Errorf("a run was started on the disabled integration: %v", l)
		}
	})
}
