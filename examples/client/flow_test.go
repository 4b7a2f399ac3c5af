package client_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantkit/tenantkit/examples/client"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// wait bounds every wait for background work (a webhook delivery, a data
// sync run).
const wait = 30 * time.Second

// TestClientFlow walks the API through the generated client, against a
// live server (httptest over tenantkit.Open, identity and httpapi.New,
// workers started), on SQLite and on PostgreSQL: a custom entity and its
// records with a cf_ filter and a JSON export, a rule set executed, a
// toggle checked, a signed webhook delivery, an attachment uploaded and
// downloaded, a mock payment session captured, and a data sync import.
// Every call but the upload is a typed method of ClientWithResponses,
// and every answer is decoded into the generated types.
func TestClientFlow(t *testing.T) {
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		hooks := newReceiver(t) // before the Kit, so the Kit's drains stop first
		c := newAPI(t, db)
		ctx := t.Context()

		t.Run("entities and records", func(t *testing.T) { entitiesAndRecords(ctx, t, c) })
		t.Run("rule set", func(t *testing.T) { ruleSet(ctx, t, c) })
		t.Run("toggle", func(t *testing.T) { toggle(ctx, t, c) })
		t.Run("webhook", func(t *testing.T) { webhook(ctx, t, c, hooks) })
		t.Run("attachment", func(t *testing.T) { attachment(ctx, t, c) })
		t.Run("payment", func(t *testing.T) { payment(ctx, t, c) })
		t.Run("data sync", func(t *testing.T) { dataSync(ctx, t, c) })
	})
}

// newAPI serves the API over db on a local port, with its workers
// started and the bootstrap super-admin key of the default tenant, and
// returns a generated client sending that key. Webhooks, rule calls and
// data sync sources may be private addresses (the test's own servers).
func newAPI(t *testing.T, db *store.DB) *client.ClientWithResponses {
	t.Helper()
	ctx := t.Context()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	kit, err := full.OpenPlain(ctx, full.Config{DB: db, SecretKey: key,
		Webhooks: webhooks.Options{AllowPrivateURLs: true}, Rules: rules.Options{AllowPrivateURLs: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close(context.Background()) })
	auth := kit.Identity
	apiKey := "tk_" + randomHex(24)
	if _, err := auth.Bootstrap(ctx, identity.BootstrapInput{APIKey: apiKey}); err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(must(httpapi.New(kit.Kit, httpapi.Options{})))
	t.Cleanup(srv.Close)
	c, err := client.NewClientWithResponses(srv.URL+"/api", client.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("X-Api-Key", apiKey)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func entitiesAndRecords(ctx context.Context, t *testing.T, c *client.ClientWithResponses) {
	eid := "shop.product_" + randomHex(4)
	ent, err := c.PostEntitiesEntitiesWithResponse(ctx, client.EntitiesEntityInput{EntityId: eid, Label: "Products"})
	expect(t, "create entity", ent, err, 200)
	defs, err := c.PostEntitiesDefinitionsBatchWithResponse(ctx, client.EntitiesBatchInput{EntityId: eid, Definitions: &[]client.EntitiesDefinitionInput{
		{Key: "title", Kind: "text"}, {Key: "color", Kind: "text"}, {Key: "qty", Kind: "integer"}}})
	expect(t, "define fields", defs, err, 200)

	for i, color := range []string{"red", "blue", "red"} {
		rec, err := c.PostEntitiesRecordsWithResponse(ctx, client.RecordCreateInput{EntityId: eid,
			Values: &map[string]any{"title": fmt.Sprintf("Item %d", i), "color": color, "qty": i + 1}})
		expect(t, "create record", rec, err, 200)
		if rec.JSON200 == nil || !rec.JSON200.Ok || rec.JSON200.Item.RecordId == "" {
			t.Fatalf("create record: %s", rec.Body)
		}
	}

	// cf_<key> filters are named after the entity's fields, so the
	// document cannot list them as parameters: a request editor adds them.
	red, err := c.GetEntitiesRecordsWithResponse(ctx, &client.GetEntitiesRecordsParams{EntityId: eid, SortField: ptr("qty")},
		withQuery("cf_color", "red"))
	expect(t, "list red records", red, err, 200)
	page := red.JSON200
	if page == nil || page.Total != 2 || len(page.Items) != 2 {
		t.Fatalf("cf_color=red: %s, want 2 records", red.Body)
	}
	for i, want := range []string{"Item 0", "Item 2"} {
		if got := page.Items[i].AdditionalProperties["title"]; got != want {
			t.Errorf("record %d: title %v, want %s", i, got, want)
		}
	}
	few, err := c.GetEntitiesRecordsWithResponse(ctx, &client.GetEntitiesRecordsParams{EntityId: eid}, withQuery("cf_qtyLte", "2"))
	expect(t, "list records with qty <= 2", few, err, 200)
	if few.JSON200 == nil || few.JSON200.Total != 2 {
		t.Fatalf("cf_qtyLte=2: %s, want 2 records", few.Body)
	}

	// format=json: the whole result set as a file, under its own media type.
	export, err := c.GetEntitiesRecordsWithResponse(ctx, &client.GetEntitiesRecordsParams{EntityId: eid, Format: ptr("json")})
	expect(t, "export records", export, err, 200)
	if export.JSON200 != nil || export.ApplicationvndTenantkitExportJSON200 == nil || len(*export.ApplicationvndTenantkitExportJSON200) != 3 {
		t.Fatalf("export: Content-Type %s, body %s: want 3 rows as application/vnd.tenantkit.export+json",
			export.HTTPResponse.Header.Get("Content-Type"), export.Body)
	}
}

func ruleSet(ctx context.Context, t *testing.T, c *client.ClientWithResponses) {
	rule, err := c.PostBusinessRulesRulesWithResponse(ctx, client.RulesRuleInput{
		RuleId: "MIN-TOTAL", RuleName: "Minimum total", RuleType: "GUARD", EntityType: "order", EventType: ptr("beforeCreate"),
		ConditionExpression: map[string]any{"field": "total", "operator": ">=", "value": 100},
		FailureActions:      []any{map[string]any{"type": "BLOCK_TRANSITION", "config": map[string]any{"message": "Order {{orderId}} is too small"}}},
		Enabled:             ptr(true), Priority: ptr(100), Version: ptr(1)})
	expect(t, "create rule", rule, err, 201)
	set, err := c.PostBusinessRulesSetsWithResponse(ctx, client.RulesSetInput{Id: "ORDERS", Name: "Orders", Enabled: ptr(true)})
	expect(t, "create rule set", set, err, 201)
	member, err := c.PostBusinessRulesSetsBySetIdMembersWithResponse(ctx, "ORDERS", client.RulesMemberInput{RuleId: "MIN-TOTAL", Sequence: ptr(10)})
	expect(t, "add the rule to the set", member, err, 201)

	for _, tc := range []struct {
		total   int
		allowed bool
	}{{150, true}, {50, false}} {
		res, err := c.PostBusinessRulesSetsBySetIdExecuteWithResponse(ctx, "ORDERS", client.ExecuteSetInput{
			EntityType: "order", EventType: "beforeCreate", EntityId: "o-1", Data: map[string]any{"orderId": "o-1", "total": tc.total}})
		expect(t, "execute the set", res, err, 200)
		if res.JSON200 == nil || res.JSON200.Allowed != tc.allowed || len(res.JSON200.ExecutedRules) != 1 {
			t.Errorf("total %d: %s, want allowed %v after one rule", tc.total, res.Body, tc.allowed)
		}
	}
}

func toggle(ctx context.Context, t *testing.T, c *client.ClientWithResponses) {
	created, err := c.PostFeatureTogglesGlobalWithResponse(ctx, client.TogglesCreateInput{Identifier: "checkout.new", Name: "New checkout",
		Type: "boolean", DefaultValue: true})
	expect(t, "create toggle", created, err, 201)
	check := func(want bool, source string) {
		t.Helper()
		res, err := c.GetFeatureTogglesCheckBooleanWithResponse(ctx, &client.GetFeatureTogglesCheckBooleanParams{Identifier: "checkout.new"})
		expect(t, "check toggle", res, err, 200)
		if res.JSON200 == nil || res.JSON200.Enabled != want || string(res.JSON200.Source) != source {
			t.Errorf("check: %s, want enabled %v from %s", res.Body, want, source)
		}
	}
	check(true, "default")
	ov, err := c.PutFeatureTogglesOverridesWithResponse(ctx, client.SetOverrideInput{ToggleId: created.JSON201.Id, IsOverride: ptr(true), OverrideValue: false})
	expect(t, "override toggle", ov, err, 200)
	check(false, "override")
}

func webhook(ctx context.Context, t *testing.T, c *client.ClientWithResponses, hooks *receiver) {
	wh, err := c.PostWebhooksWithResponse(ctx, client.WebhooksInput{Name: "Rules", Url: hooks.URL + "/rules",
		SubscribedEvents: []string{"business_rules.rule.*"}})
	expect(t, "create webhook", wh, err, 201)
	rule, err := c.PostBusinessRulesRulesWithResponse(ctx, client.RulesRuleInput{
		RuleId: "HOOKED", RuleName: "Hooked", RuleType: "VALIDATION", EntityType: "order",
		ConditionExpression: map[string]any{"field": "total", "operator": ">", "value": 0},
		Enabled:             ptr(true), Priority: ptr(1), Version: ptr(1)})
	expect(t, "create rule", rule, err, 201)

	got := hooks.first(t, "/rules")
	verifier, err := standardwebhooks.NewWebhook(wh.JSON201.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifier.Verify(got.body, got.header); err != nil {
		t.Errorf("the delivery's signature does not verify with the webhook's secret: %v", err)
	}
	other, _ := standardwebhooks.NewWebhook(webhooks.NewSecret())
	if other.Verify(got.body, got.header) == nil {
		t.Error("the delivery verifies with another secret")
	}
	var payload struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(got.body, &payload); err != nil || payload.Data["ruleId"] != "HOOKED" {
		t.Errorf("delivery body %s (%v): want the rule HOOKED's event", got.body, err)
	}

	// The delivery log shows it delivered.
	deadline := time.Now().Add(wait)
	for {
		list, err := c.GetWebhooksDeliveriesWithResponse(ctx, &client.GetWebhooksDeliveriesParams{WebhookId: &wh.JSON201.Id, Status: ptr(client.GetWebhooksDeliveriesParamsStatus("delivered"))})
		expect(t, "list deliveries", list, err, 200)
		if list.JSON200 != nil && len(list.JSON200.Items) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delivered delivery after %s: %s", wait, list.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func attachment(ctx context.Context, t *testing.T, c *client.ClientWithResponses) {
	content := []byte("hello from the generated client\n")
	// The upload is multipart/form-data, for which oapi-codegen generates
	// no typed body: the raw-body method takes the form as built here.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("entityId", "catalog:product")
	_ = mw.WriteField("recordId", "p-1")
	fw, _ := mw.CreateFormFile("file", "hello.txt")
	_, _ = fw.Write(content)
	_ = mw.Close()
	up, err := c.PostAttachmentsWithBodyWithResponse(ctx, mw.FormDataContentType(), &form)
	expect(t, "upload", up, err, 200)
	if up.JSON200 == nil || up.JSON200.Item.Id == "" {
		t.Fatalf("upload: %s", up.Body)
	}

	down, err := c.GetAttachmentsFileByIdWithResponse(ctx, up.JSON200.Item.Id, &client.GetAttachmentsFileByIdParams{Download: ptr("1")})
	expect(t, "download", down, err, 200)
	if !bytes.Equal(down.Body, content) {
		t.Errorf("downloaded %q, uploaded %q", down.Body, content)
	}
}

func payment(ctx context.Context, t *testing.T, c *client.ClientWithResponses) {
	manual := client.PaymentsSessionRequestCaptureMethod("manual")
	s, err := c.PostPaymentGatewaysSessionsWithResponse(ctx, client.PaymentsSessionRequest{ProviderKey: "mock", Amount: 19.99,
		CurrencyCode: "USD", CaptureMethod: &manual})
	expect(t, "create session", s, err, 201)
	if s.JSON201 == nil || s.JSON201.Status != "authorized" || s.JSON201.TransactionId == "" {
		t.Fatalf("session: %s, want an authorized transaction", s.Body)
	}
	tx, err := uuid.Parse(s.JSON201.TransactionId)
	if err != nil {
		t.Fatalf("transactionId %q: %v", s.JSON201.TransactionId, err)
	}
	for _, step := range []struct {
		amount float32
		status string
	}{{15, "partially_captured"}, {4.99, "captured"}} {
		capture, err := c.PostPaymentGatewaysCaptureWithResponse(ctx, client.PostPaymentGatewaysCaptureJSONRequestBody{
			TransactionId: tx, Amount: &step.amount})
		expect(t, "capture", capture, err, 200)
		status, err := c.GetPaymentGatewaysStatusWithResponse(ctx, &client.GetPaymentGatewaysStatusParams{TransactionId: s.JSON201.TransactionId})
		expect(t, "status", status, err, 200)
		if status.JSON200 == nil || string(status.JSON200.Status) != step.status {
			t.Errorf("status after capturing %v: %s, want %s", step.amount, status.Body, step.status)
		}
	}
}

func dataSync(ctx context.Context, t *testing.T, c *client.ClientWithResponses) {
	eid := "shop.synced_" + randomHex(4)
	ent, err := c.PostEntitiesEntitiesWithResponse(ctx, client.EntitiesEntityInput{EntityId: eid, Label: "Synced"})
	expect(t, "create entity", ent, err, 200)
	defs, err := c.PostEntitiesDefinitionsBatchWithResponse(ctx, client.EntitiesBatchInput{EntityId: eid, Definitions: &[]client.EntitiesDefinitionInput{
		{Key: "title", Kind: "text"}}})
	expect(t, "define fields", defs, err, 200)
	src := syncSource(t, 25)
	cred, err := c.PutIntegrationsByIdCredentialsWithResponse(ctx, "sync_http_json", client.IntegrationCredentialsInput{
		Credentials: map[string]any{"baseUrl": src.URL}})
	expect(t, "set the source", cred, err, 200)

	run, err := c.PostDataSyncRunWithResponse(ctx, client.DatasyncRunInput{IntegrationId: "sync_http_json", EntityType: eid,
		Direction: "import", BatchSize: ptr(10)})
	expect(t, "start the run", run, err, 201)
	deadline := time.Now().Add(wait)
	var detail *client.SyncRunDetail
	for {
		got, err := c.GetDataSyncRunsByIdWithResponse(ctx, run.JSON201.Id)
		expect(t, "get the run", got, err, 200)
		detail = got.JSON200
		if s := detail.Status; s == "completed" || s == "failed" || s == "cancelled" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still %s after %s", detail.Status, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if detail.Status != "completed" || detail.CreatedCount != 25 || detail.BatchesCompleted != 3 {
		t.Fatalf("run: %+v, want completed with 25 records in 3 batches", *detail)
	}
	list, err := c.GetEntitiesRecordsWithResponse(ctx, &client.GetEntitiesRecordsParams{EntityId: eid})
	expect(t, "list the imported records", list, err, 200)
	if list.JSON200 == nil || list.JSON200.Total != 25 {
		t.Errorf("imported records: %s, want 25", list.Body)
	}
}

// response is what every generated ...WithResponse answer has.
type response interface{ StatusCode() int }

// expect fails the test when the call failed or answered another status.
func expect(t *testing.T, what string, r response, err error, status int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if r.StatusCode() != status {
		// Every generated answer has the raw body in its Body field.
		body := reflect.ValueOf(r).Elem().FieldByName("Body").Bytes()
		t.Fatalf("%s: status %d, want %d %s", what, r.StatusCode(), status, body)
	}
}

// withQuery adds a query parameter the document does not list.
func withQuery(name, value string) client.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		q := req.URL.Query()
		q.Set(name, value)
		req.URL.RawQuery = q.Encode()
		return nil
	}
}

func ptr[T any](v T) *T { return &v }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// delivery is a request the receiver got.
type delivery struct {
	path   string
	header http.Header
	body   []byte
}

// receiver is a local webhook target recording what it gets.
type receiver struct {
	URL string
	mu  sync.Mutex
	got []delivery
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{path: req.URL.Path, header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// first waits for the first request on path.
func (r *receiver) first(t *testing.T, path string) delivery {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		r.mu.Lock()
		for _, d := range r.got {
			if d.path == path {
				r.mu.Unlock()
				return d
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no delivery on %s after %s", path, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncSource is a sync_http_json source of n items: GET
// /{entityType}?cursor=&limit= pages them, the cursor being the next index.
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
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items, "nextCursor": next, "totalEstimate": n})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// must returns h, failing on err (the handler's options are fixed here).
func must(h *httpapi.Handler, err error) *httpapi.Handler {
	if err != nil {
		panic(err)
	}
	return h
}
