package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// The permission matrix: checks generated from the route table
// ((*api).routes) and the feature list built from it, so that a new route
// is covered as soon as it is declared.
//
//   - features: for every route with Features, a key holding every other
//     feature of the table gets 403 naming the missing ones; a key holding
//     only the route's features gets past authorization.
//   - superadmin: every SuperAdmin route refuses a "*" key that is not
//     super admin (403) and lets the super-admin key through.
//   - authonly: every route that is neither public, nor super-admin, nor
//     guarded by features answers 401 without a credential and lets a key
//     with no feature at all through.
//   - unauthenticated: every non-public route answers 401 without a
//     credential and with a garbage one.
//   - orgscope: objects created in org2 are invisible to a "*" key
//     restricted to org1: every route taking such an object's id answers
//     404, and the lists leave it out.
//   - tenantwide: every TenantWide route refuses a "*" key restricted to
//     one organization (403, requiredScope "tenant") and lets a key of the
//     whole tenant holding only the route's features through.
//
// "Through" means any status but 401, 403 and 5xx: a made-up path id
// gives 404, the {} body of a write a 400, and that is fine. One
// environment per engine serves every part (nothing starts the Kit's
// workers, so storetest.Each is enough).

// permKnownBugs are checks that fail because of a product bug, by check
// name ("<part> <METHOD> <path>", as in the subtest names): the check is
// skipped with "BUG: …" so the suite stays green and the bug stays
// visible. Remove an entry once its bug is fixed.
var permKnownBugs = map[string]string{}

// permIdentityPrefixes are the identity areas, left out of the org-scope
// part (their organization behaviour is being changed elsewhere).
var permIdentityPrefixes = []string{"/directory", "/auth", "/api_keys"}

// permOrgKinds maps a path prefix (up to the wildcard) to the kind of
// organization-scoped object whose id the wildcard takes; the longest
// prefix wins.
var permOrgKinds = []struct{ prefix, kind string }{
	{"/webhooks/deliveries/{", "delivery"},
	{"/webhooks/{", "webhook"},
	{"/business_rules/rules/{", "rule"},
	{"/business_rules/logs/{", "log"},
	{"/attachments/library/{", "attachment"},
	{"/attachments/file/{", "attachment"},
	{"/attachments/image/{", "attachment"},
	{"/payment_gateways/transactions/{", "payment"},
}

// permWriteScopes classify every write route (by path prefix, the longest
// wins): tenantWide ones must be marked TenantWide, the others must not.
// A write route under no prefix fails the matrix, so that a new route
// cannot be added without deciding who may call it.
var permWriteScopes = []struct {
	prefix     string
	tenantWide bool
	why        string
}{
	{"/attachments/partitions", true, "a partition decides for every organization's files (public or not, limits)"},
	{"/integrations/", true, "an integration's state, version and credentials serve every organization (payment secrets, sync sources)"},
	{"/business_rules/sets", true, "rule sets and their members belong to the tenant"},
	{"/dashboards/roles/widgets", true, "roles belong to the tenant"},

	{"/auth/", false, "identity writes follow the grant rules (identity.CheckGrant) and act only on the caller's organizations"},
	{"/api_keys/", false, "a key belongs to an organization the caller manages (identity grant rules)"},
	{"/directory/organizations", false, "organizations are managed within the caller's scope (identity grant rules)"},
	{"/business_rules/rules", false, "rules belong to an organization"},
	{"/business_rules/execute", false, "executes the rules the caller may read; changes no setting"},
	{"/business_rules/sets/{setId}/execute", false, "executes the set's rules the caller may read; changes no setting"},
	{"/webhooks", false, "webhooks and their deliveries belong to an organization"},
	{"/entities/", false, "entities, fields and records belong to an organization"},
	{"/attachments", false, "files belong to an organization"},
	{"/payment_gateways/", false, "payments belong to an organization; provider webhooks are verified by the tenant's secret"},
	{"/dashboards/layout", false, "the caller's own layout"},
	{"/dashboards/users/widgets", false, "a user of the caller's organizations (others answer 404)"},
	{"/data_sync/", false, "a run reads and writes only the organizations of the caller who started it"},
	{"/notifications", false, "a user's own inbox"},
	{"/login", false, "public sign-in"},
	{"/logout", false, "ends the caller's own session"},
	{"/reset", false, "public password reset"},
}

// permTenantLevel are areas whose id routes are not organization scoped,
// with the reason; the org-scope part skips them.
var permTenantLevel = []struct{ prefix, why string }{
	{"/business_rules/sets/", "rule sets and their members belong to the tenant (rules/doc.go, Scope)"},
	{"/feature_toggles/", "toggles are global definitions with per-tenant overrides, super-admin routes"},
	{"/integrations/", "an integration's state, version and credentials belong to the tenant (integrations/doc.go)"},
	{"/data_sync/", "sync runs belong to the tenant, like the integration state they run under (datasync/doc.go)"},
	{"/dashboards/", "a layout belongs to its owner (user or API key) in the tenant, widget definitions are global, visibility records belong to the tenant's roles and users"},
	{"/notifications/", "a notification belongs to its recipient (a user or an API key) in the tenant, whatever the organization; TestNotificationRoutes checks that another user's and another tenant's id answer 404"},
	{"/progress/", "jobs are organization scoped, but only the Go API (Kit.Progress) creates them, so this matrix cannot make one in org2; TestProgressRoutes checks their organization scope over HTTP"},
}

func TestPermissionMatrix(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := permNewEnv(t, db)
		routes := (&api{kit: e.kit.Kit, opts: Options{Auth: e.auth}}).routes()
		words := permWords(routes)
		features := permFeatures(routes)
		if len(features) == 0 {
			t.Fatal("the route table declares no feature")
		}
		t.Logf("%d routes, %d features: %v", len(routes), len(features), features)

		t.Run("features", func(t *testing.T) {
			e := e.with(t)
			tf := e.newTenant("Perm " + randomHex(3))
			keys := map[string]string{}
			keyFor := func(e *testEnv, fs []string) string { // one key per feature set, made by the subtest that first needs it
				k := strings.Join(fs, ",")
				if _, ok := keys[k]; !ok {
					keys[k] = e.newKey(tf, fs...)
				}
				return keys[k]
			}
			permEachRoute(t, routes, words, "routes with features", func(rt apikit.Route) bool { return len(rt.Access.Features) > 0 },
				func(t *testing.T, rt apikit.Route, path, name string) {
					others := slices.DeleteFunc(slices.Clone(features), func(f string) bool { return slices.Contains(rt.Access.Features, f) })
					e := e.with(t)
					r := e.do(rt.Method, path, keyFor(e, others), permBody(rt.Method))
					permCheck(t, "features/"+name+" without", permForbidden(r, rt.Access.Features, false))
					r = e.do(rt.Method, path, keyFor(e, rt.Access.Features), permBody(rt.Method))
					permCheck(t, "features/"+name+" only", permThrough(r))
				})
		})

		t.Run("superadmin", func(t *testing.T) {
			e := e.with(t)
			star := e.newKey(e.newTenant("Perm "+randomHex(3)), "*")
			permEachRoute(t, routes, words, "super-admin routes", func(rt apikit.Route) bool { return rt.Access.SuperAdmin },
				func(t *testing.T, rt apikit.Route, path, name string) {
					e := e.with(t)
					r := e.do(rt.Method, path, star, permBody(rt.Method))
					permCheck(t, "superadmin/"+name+" star", permForbidden(r, rt.Access.Features, true))
					r = e.do(rt.Method, path, e.superKey, permBody(rt.Method))
					permCheck(t, "superadmin/"+name+" super", permThrough(r))
				})
		})

		t.Run("authonly", func(t *testing.T) {
			e := e.with(t)
			none := e.newKey(e.newTenant("Perm " + randomHex(3))) // a role with no feature at all
			permEachRoute(t, routes, words, "authentication-only routes",
				func(rt apikit.Route) bool {
					return !rt.Access.Public && !rt.Access.SuperAdmin && len(rt.Access.Features) == 0
				},
				func(t *testing.T, rt apikit.Route, path, name string) {
					e := e.with(t)
					r := e.do(rt.Method, path, "", permBody(rt.Method))
					permCheck(t, "authonly/"+name+" anonymous", permStatus(r, http.StatusUnauthorized))
					r = e.do(rt.Method, path, none, permBody(rt.Method))
					permCheck(t, "authonly/"+name+" key", permThrough(r))
				})
		})

		t.Run("unauthenticated", func(t *testing.T) {
			garbage := "tk_" + randomHex(24)
			permEachRoute(t, routes, words, "non-public routes", func(rt apikit.Route) bool { return !rt.Access.Public },
				func(t *testing.T, rt apikit.Route, path, name string) {
					e := e.with(t)
					name = "unauthenticated/" + name
					permCheck(t, name+" none", permStatus(e.do(rt.Method, path, "", permBody(rt.Method)), http.StatusUnauthorized))
					permCheck(t, name+" garbage key", permStatus(e.do(rt.Method, path, garbage, permBody(rt.Method)), http.StatusUnauthorized))
					bearer := e.send(rt.Method, path, permBody(rt.Method), func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+garbage) })
					permCheck(t, name+" garbage bearer", permStatus(bearer, http.StatusUnauthorized))
				})
		})

		t.Run("orgscope", func(t *testing.T) {
			permOrgScope(t, e.with(t), routes, words)
		})

		t.Run("tenantwide", func(t *testing.T) {
			e := e.with(t)
			tf := e.newTenant("Perm tenant-wide " + randomHex(3))
			org1 := e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": "Org1 " + randomHex(3), "tenantId": tf.ID}).expect(201).JSON()["id"].(string)
			limited := permOrgKey(e, tf.ID, org1, "*")
			for _, rt := range routes {
				if rt.Method == "GET" || rt.Access.SuperAdmin || rt.Doc.Area == "Custom" {
					continue
				}
				scope := -1
				for i, w := range permWriteScopes {
					if strings.HasPrefix(rt.Path, w.prefix) && (scope < 0 || len(w.prefix) > len(permWriteScopes[scope].prefix)) {
						scope = i
					}
				}
				switch {
				case scope < 0:
					t.Errorf("%s %s writes and is in no permWriteScopes prefix: decide whether it changes a tenant-wide setting", rt.Method, rt.Path)
				case permWriteScopes[scope].tenantWide != rt.Access.TenantWide:
					t.Errorf("%s %s: TenantWide is %v, want %v (%s)", rt.Method, rt.Path, rt.Access.TenantWide, permWriteScopes[scope].tenantWide, permWriteScopes[scope].why)
				}
			}
			keys := map[string]string{}
			permEachRoute(t, routes, words, "tenant-wide routes", func(rt apikit.Route) bool { return rt.Access.TenantWide },
				func(t *testing.T, rt apikit.Route, path, name string) {
					e := e.with(t)
					permCheck(t, "tenantwide/"+name+" org-limited", permTenantScope(e.do(rt.Method, path, limited, permBody(rt.Method))))
					k := strings.Join(rt.Access.Features, ",")
					if _, ok := keys[k]; !ok {
						keys[k] = e.newKey(tf, rt.Access.Features...)
					}
					permCheck(t, "tenantwide/"+name+" whole tenant", permThrough(e.do(rt.Method, path, keys[k], permBody(rt.Method))))
				})
		})
	})
}

// permEachRoute runs check as a subtest for every route selects picks,
// with a path that reaches it, and fails unless it checked every one
// (kind names them in the messages), so the matrix cannot pass empty. A
// public route that declares features is an error of the table itself.
func permEachRoute(t *testing.T, routes []apikit.Route, words []string, kind string, selects func(apikit.Route) bool,
	check func(t *testing.T, rt apikit.Route, path, name string)) {
	t.Helper()
	want, checked := 0, 0
	for i, rt := range routes {
		if !selects(rt) {
			continue
		}
		want++
		if rt.Access.Public && len(rt.Access.Features) > 0 {
			t.Errorf("%s %s is public and declares features %v", rt.Method, rt.Path, rt.Access.Features)
			continue
		}
		path, shown, ok := permPath(routes, i, nil, words)
		if !ok {
			t.Errorf("%s %s (%s): no path reaches it", rt.Method, rt.Path, rt.Doc.Summary)
			continue
		}
		checked++
		name := permName(rt, shown)
		t.Run(name, func(t *testing.T) { check(t, rt, path, name) })
	}
	t.Logf("checked %d %s (of %d)", checked, kind, want)
	if checked == 0 || checked != want {
		t.Fatalf("checked %d %s, the table has %d", checked, kind, want)
	}
}

// permOrgScope is the scope part of the matrix: a tenant with two
// organizations, one object of each organization-scoped kind created in
// org2, and a "*" key restricted to org1 and another tenant's "*" key,
// neither of which may reach any of them (404 on every id route, absent
// from every list).
func permOrgScope(t *testing.T, e *testEnv, routes []apikit.Route, words []string) {
	tf := e.newTenant("Perm orgs " + randomHex(3))
	newOrg := func(name string) string {
		return e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": name, "tenantId": tf.ID}).expect(201).JSON()["id"].(string)
	}
	org1, org2 := newOrg("Org1 "+randomHex(3)), newOrg("Org2 "+randomHex(3))
	key1 := permOrgKey(e, tf.ID, org1, "*")
	key2 := permOrgKey(e, tf.ID, org2, "*")
	// keyB is another tenant's key with every feature: it must reach none
	// of the tenant's objects either.
	keyB := e.newKey(e.newTenant("Perm other "+randomHex(3)), "*")
	me := e.do("GET", "/api/auth/me", key1, nil).expect(200).JSON()
	if me["organizationId"] != org1 || me["isSuperAdmin"] != false {
		t.Fatalf("the org1 key acts as %v", me)
	}

	// The objects, created in org2.
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	t.Cleanup(target.Close)
	suffix := randomHex(4)
	webhookID := e.do("POST", "/api/webhooks", key2, map[string]any{"name": "org2-hook-" + suffix, "url": target.URL + "/hook",
		"subscribedEvents": []string{"business_rules.*"}}).expect(201).JSON()["id"].(string)
	delivery := e.do("POST", "/api/webhooks/"+webhookID+"/test", key2, nil).expect(200).JSON()
	deliveryID := delivery["id"].(string)
	if delivery["status"] != webhooks.StatusFailed {
		t.Fatalf("the org2 test delivery is %v, want failed (retryable)", delivery["status"])
	}
	const entityType, eventType = "perm_order", "beforeCreate"
	ruleKey := "ORG2-" + strings.ToUpper(suffix)
	rule := map[string]any{"ruleId": ruleKey, "ruleName": "Org2 rule", "ruleType": "GUARD", "entityType": entityType,
		"eventType": eventType, "conditionExpression": map[string]any{"field": "total", "operator": ">", "value": 100},
		"successActions": []any{}, "failureActions": []any{}, "enabled": true, "priority": 100, "version": 1}
	ruleID := e.do("POST", "/api/business_rules/rules", key2, rule).expect(201).JSON()["id"].(string)
	input := func(dry bool) map[string]any {
		return map[string]any{"entityType": entityType, "entityId": "o-1", "eventType": eventType, "data": map[string]any{"total": 5}, "dryRun": dry}
	}
	e.do("POST", "/api/business_rules/rules/"+ruleID+"/execute", key2, input(false)).expect(200)
	logs := e.do("GET", "/api/business_rules/logs", key2, nil).expect(200).JSON()["data"].([]any)
	if len(logs) != 1 {
		t.Fatalf("org2 sees %d log rows, want 1", len(logs))
	}
	logID := logs[0].(map[string]any)["id"].(string)
	entityID := "perm.o2_" + suffix
	const fieldKey = "perm_org2_field"
	e.do("POST", "/api/entities/entities", key2, map[string]any{"entityId": entityID, "label": "Org2 entity"}).expect(200)
	e.do("POST", "/api/entities/definitions.batch", key2, map[string]any{"entityId": entityID,
		"definitions": []any{map[string]any{"key": fieldKey, "kind": "text"}}}).expect(200)
	recordID := e.do("POST", "/api/entities/records", key2, map[string]any{"entityId": entityID,
		"values": map[string]any{fieldKey: "org2 value"}}).expect(200).JSON()["item"].(map[string]any)["recordId"].(string)
	attachmentID := permUpload(e, key2, entityID, recordID, "org2-"+suffix+".png", permPNG)
	paymentID := e.do("POST", "/api/payment_gateways/sessions", key2, map[string]any{"providerKey": "mock", "amount": 10,
		"currencyCode": "USD", "captureMethod": "manual"}).expect(201).JSON()["transactionId"].(string)
	ids := map[string]string{"webhook": webhookID, "delivery": deliveryID, "rule": ruleID, "log": logID, "attachment": attachmentID,
		"payment": paymentID}
	t.Logf("org2 objects: webhook %s, delivery %s, rule %s, log %s, entity %s, record %s, attachment %s, payment %s", webhookID, deliveryID,
		ruleID, logID, entityID, recordID, attachmentID, paymentID)

	// The lists: org2 sees each object (so the check is not vacuous),
	// org1 does not.
	lists := []struct{ path, id string }{
		{"/api/webhooks", webhookID},
		{"/api/webhooks/deliveries", deliveryID},
		{"/api/webhooks/deliveries?webhookId=" + webhookID, deliveryID},
		{"/api/business_rules/rules", ruleID},
		{"/api/business_rules/logs", logID},
		{"/api/business_rules/logs?ruleId=" + url.QueryEscape(ruleKey), logID},
		{"/api/entities/entities", entityID},
		{"/api/entities/definitions?entityId=" + entityID, fieldKey},
		{"/api/entities/definitions.manage?entityId=" + entityID, fieldKey},
		{"/api/entities/records?entityId=" + entityID, recordID},
		{"/api/entities/records?entityId=" + entityID + "&id=" + recordID, recordID},
		{"/api/entities/records?entityId=" + entityID + "&format=csv", recordID},
		{"/api/entities/relations/options?entityId=" + entityID, recordID},
		{"/api/attachments?entityId=" + entityID + "&recordId=" + recordID, attachmentID},
		{"/api/attachments/library", attachmentID},
		{"/api/attachments/library?search=org2-" + suffix, attachmentID},
		{"/api/payment_gateways/transactions", paymentID},
	}
	// Check names show the ids as placeholders, so they stay the same
	// from run to run.
	placeholders := strings.NewReplacer("/api", "", webhookID, "{webhookId}", ruleID, "{id}", ruleKey, "{ruleId}", entityID, "{entityId}", recordID, "{recordId}")
	t.Run("lists", func(t *testing.T) {
		for _, l := range lists {
			name := "GET " + placeholders.Replace(l.path)
			t.Run(name, func(t *testing.T) {
				e := e.with(t)
				if r := e.do("GET", l.path, key2, nil); r.Status != 200 || !strings.Contains(string(r.Body), l.id) {
					t.Fatalf("org2's own list: status %d, want 200 holding %s; body: %s", r.Status, l.id, r.Body)
				}
				for _, caller := range []struct{ who, key string }{{"the org1 caller", key1}, {"another tenant", keyB}} {
					r := e.do("GET", l.path, caller.key, nil)
					var problem string
					switch {
					case r.Status != 200 && r.Status != 404:
						problem = fmt.Sprintf("%s: status %d, want 200 (or 404); body: %s", caller.who, r.Status, r.Body)
					case strings.Contains(string(r.Body), l.id):
						problem = fmt.Sprintf("%s's list holds org2's %s; body: %s", caller.who, l.id, r.Body)
					}
					permCheck(t, "orgscope/list "+name, problem)
				}
			})
		}
	})

	// The routes taking an id: every one under an organization-scoped
	// prefix, from the table, with the org2 object's id in the path; then
	// the routes that take the id in the query or body, by hand. Deletes
	// go last, so that a delete that wrongly succeeds cannot hide another
	// route's answer.
	type idCase struct {
		name, method, path string
		body               any
	}
	var cases []idCase
	want := 0
	for i, rt := range routes {
		if rt.Access.Public || rt.Access.SuperAdmin || !strings.Contains(rt.Path, "{") || permHasPrefix(rt.Path, permIdentityPrefixes) {
			continue
		}
		if why := permTenantLevelWhy(rt.Path); why != "" {
			t.Logf("skip %s %s: %s", rt.Method, rt.Path, why)
			continue
		}
		want++
		kind, wildcard := permOrgKind(rt.Path)
		if kind == "" {
			t.Errorf("%s %s takes an id and has no org-scope case: add its prefix to permOrgKinds or permTenantLevel", rt.Method, rt.Path)
			continue
		}
		path, shown, ok := permPath(routes, i, map[string]string{wildcard: ids[kind]}, words)
		if !ok {
			t.Errorf("%s %s (%s): no path reaches it", rt.Method, rt.Path, rt.Doc.Summary)
			continue
		}
		var body any = permBody(rt.Method)
		if strings.HasSuffix(rt.Path, "/execute") {
			body = input(true)
		}
		cases = append(cases, idCase{permName(rt, shown), rt.Method, path, body})
	}
	if len(cases) == 0 || len(cases) != want {
		t.Fatalf("%d organization-scoped id routes checked, the table has %d", len(cases), want)
	}
	t.Logf("checked %d organization-scoped routes with an id in the path", len(cases))
	ruleUpdate := permMerge(rule, map[string]any{"id": ruleID})
	cases = append(cases,
		idCase{"PUT /business_rules/rules (id in the body)", "PUT", "/api/business_rules/rules", ruleUpdate},
		idCase{"PUT /entities/records (recordId in the body)", "PUT", "/api/entities/records", map[string]any{"entityId": entityID, "recordId": recordID, "values": map[string]any{}}},
		idCase{"DELETE /business_rules/rules?id=", "DELETE", "/api/business_rules/rules?id=" + ruleID, nil},
		idCase{"DELETE /entities/records?entityId&recordId", "DELETE", "/api/entities/records?entityId=" + entityID + "&recordId=" + recordID, nil},
		idCase{"DELETE /entities/records (JSON body)", "DELETE", "/api/entities/records", map[string]any{"entityId": entityID, "recordId": recordID}},
		idCase{"DELETE /entities/entities (org2's custom entity)", "DELETE", "/api/entities/entities", map[string]any{"entityId": entityID}},
		idCase{"POST /attachments/transfer (org2's attachment)", "POST", "/api/attachments/transfer",
			map[string]any{"entityId": entityID, "attachmentIds": []string{attachmentID}, "toRecordId": "elsewhere"}},
		idCase{"DELETE /attachments?id=", "DELETE", "/api/attachments?id=" + attachmentID, nil},
		idCase{"GET /payment_gateways/status?transactionId=", "GET", "/api/payment_gateways/status?transactionId=" + paymentID, nil},
		idCase{"POST /payment_gateways/capture (org2's payment)", "POST", "/api/payment_gateways/capture", map[string]any{"transactionId": paymentID}},
		idCase{"POST /payment_gateways/refund (org2's payment)", "POST", "/api/payment_gateways/refund", map[string]any{"transactionId": paymentID}},
		idCase{"POST /payment_gateways/cancel (org2's payment)", "POST", "/api/payment_gateways/cancel", map[string]any{"transactionId": paymentID}},
		idCase{"POST /payment_gateways/status (org2's payment)", "POST", "/api/payment_gateways/status", map[string]any{"transactionId": paymentID}},
	)
	slices.SortStableFunc(cases, func(a, b idCase) int {
		return permBoolCmp(a.method == "DELETE", b.method == "DELETE")
	})
	t.Run("ids", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if c.method == "GET" { // the path does reach the object: org2 reads it
					e.with(t).do(c.method, c.path, key2, c.body).expect(200)
				}
				r := e.with(t).do(c.method, c.path, keyB, c.body)
				if problem := permStatus(r, http.StatusNotFound); problem != "" {
					permCheck(t, "orgscope/"+c.name, "another tenant's key: "+problem)
				}
				r = e.with(t).do(c.method, c.path, key1, c.body)
				permCheck(t, "orgscope/"+c.name, permStatus(r, http.StatusNotFound))
			})
		}
	})

	// Executing by entity type and event runs only the rules the caller
	// may read: org2's rule is not among them.
	t.Run("execute", func(t *testing.T) {
		r := e.with(t).do("POST", "/api/business_rules/execute", key1, input(true))
		problem := permStatus(r, http.StatusOK)
		if problem == "" && (strings.Contains(string(r.Body), ruleID) || strings.Contains(string(r.Body), ruleKey)) {
			problem = "org1's execution ran org2's rule; body: " + string(r.Body)
		}
		permCheck(t, "orgscope/POST /business_rules/execute", problem)
	})

	// Rule sets belong to the tenant, so only a caller of the whole
	// tenant changes them (org1's key cannot even add a rule of its own);
	// their members are rules, which do not: executing a tenant set that
	// holds org2's rule does not run it for org1.
	t.Run("sets", func(t *testing.T) {
		e := e.with(t)
		whole := e.newKey(tf, "*")
		// Set ids are uppercase letters and underscores.
		letters := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return 'G' + (r - '0')
			}
			return r
		}, strings.ToUpper(suffix))
		setID := "PERM_SECOND_" + letters
		e.do("POST", "/api/business_rules/sets", whole, map[string]any{"id": setID, "name": "Org2 set"}).expect(201)
		e.do("POST", "/api/business_rules/sets/"+setID+"/members", whole, map[string]any{"ruleId": ruleKey, "sequence": 1}).expect(201)
		own := "PERM_FIRST_" + letters
		e.do("POST", "/api/business_rules/sets", whole, map[string]any{"id": own, "name": "Org1 set"}).expect(201)

		// Not asserted (members belong to the tenant), reported: whether
		// org1 reads org2's rule through the set.
		if r := e.do("GET", "/api/business_rules/sets/"+setID, key1, nil); strings.Contains(string(r.Body), ruleKey) {
			t.Logf("note: org1 reads org2's rule %s among the members of the tenant set: %s", ruleKey, r.Body)
		}
		t.Run("POST /business_rules/sets/{setId}/members with org2's rule", func(t *testing.T) {
			r := e.with(t).do("POST", "/api/business_rules/sets/"+own+"/members", key1, map[string]any{"ruleId": ruleKey, "sequence": 1})
			permCheck(t, "orgscope/POST /business_rules/sets/{setId}/members with org2's rule", permTenantScope(r))
		})
		t.Run("POST /business_rules/sets/{setId}/execute holding org2's rule", func(t *testing.T) {
			r := e.with(t).do("POST", "/api/business_rules/sets/"+setID+"/execute", key1, input(true))
			problem := permStatus(r, http.StatusOK)
			if problem == "" {
				var body struct {
					ExecutedRules []map[string]any `json:"executedRules"`
				}
				if err := json.Unmarshal(r.Body, &body); err != nil {
					t.Fatalf("execution body: %v: %s", err, r.Body)
				}
				for _, en := range body.ExecutedRules {
					if en["ruleId"] == ruleKey && en["result"] != "SKIPPED" {
						problem = fmt.Sprintf("org1's execution ran org2's rule %s (result %v); body: %s", ruleKey, en["result"], r.Body)
					}
				}
			}
			permCheck(t, "orgscope/POST /business_rules/sets/{setId}/execute", problem)
		})
	})

	// Org2 still has every object as it was.
	t.Run("intact", func(t *testing.T) {
		e := e.with(t)
		e.do("GET", "/api/webhooks/"+webhookID, key2, nil).expect(200)
		if d := e.do("GET", "/api/webhooks/deliveries/"+deliveryID, key2, nil).expect(200).JSON(); d["status"] != webhooks.StatusFailed {
			t.Errorf("org2's delivery is %v after org1's requests, want failed", d["status"])
		}
		e.do("GET", "/api/business_rules/rules/"+ruleID, key2, nil).expect(200)
		e.do("GET", "/api/business_rules/logs/"+logID, key2, nil).expect(200)
		if r := e.do("GET", "/api/entities/records?entityId="+entityID+"&id="+recordID, key2, nil).expect(200); !strings.Contains(string(r.Body), "org2 value") {
			t.Errorf("org2's record changed: %s", r.Body)
		}
		if r := e.do("GET", "/api/entities/entities", key2, nil).expect(200); !strings.Contains(string(r.Body), entityID) {
			t.Errorf("org2's entity is gone: %s", r.Body)
		}
		if r := e.do("GET", "/api/attachments?entityId="+entityID+"&recordId="+recordID, key2, nil).expect(200); !strings.Contains(string(r.Body), attachmentID) {
			t.Errorf("org2's attachment moved or is gone: %s", r.Body)
		}
		if st := e.do("GET", "/api/payment_gateways/status?transactionId="+paymentID, key2, nil).expect(200).JSON()["status"]; st != "authorized" {
			t.Errorf("org2's payment is %v after org1's requests, want authorized", st)
		}
	})
}

// permPNG is a 1×1 PNG.
var permPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// permUpload uploads a file to a record with key and returns the
// attachment's id.
func permUpload(e *testEnv, key, entityID, recordID, name string, data []byte) string {
	e.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	_ = mw.WriteField("entityId", entityID)
	_ = mw.WriteField("recordId", recordID)
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(data)
	_ = mw.Close()
	r := e.send("POST", "/api/attachments", buf.Bytes(), func(req *http.Request) {
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("X-Api-Key", key)
	}).expect(200)
	return r.JSON()["item"].(map[string]any)["id"].(string)
}

// permNewEnv is newTestEnv with webhooks that may target loopback
// addresses (the org-scope part sends a test delivery to a local server).
// It starts no workers.
func permNewEnv(t *testing.T, db *store.DB) *testEnv {
	t.Helper()
	return newTestEnvConfig(t, db, full.Config{Webhooks: webhooks.Options{AllowPrivateURLs: true}})
}

// permOrgKey creates, as the super admin, a role of the tenant holding
// features and restricted to org, and a key with it acting in org.
func permOrgKey(e *testEnv, tenantID, org string, features ...string) string {
	e.t.Helper()
	roleID := e.do("POST", "/api/auth/roles", e.superKey, map[string]string{"name": "role-" + randomHex(4), "tenantId": tenantID}).expect(201).JSON()["id"].(string)
	e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": roleID, "features": features, "organizations": []string{org}}).expect(200)
	body := map[string]any{"name": "key", "tenantId": tenantID, "organizationId": org, "roles": []string{roleID}}
	return e.do("POST", "/api/api_keys/keys", e.superKey, body).expect(201).JSON()["secret"].(string)
}

// permFeatures is the union of every route's features, sorted.
func permFeatures(routes []apikit.Route) []string {
	var out []string
	for _, rt := range routes {
		for _, f := range rt.Access.Features {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	return out
}

var (
	permWildcard = regexp.MustCompile(`\{([^}]+)\}`)
	permWord     = regexp.MustCompile(`[A-Za-z][A-Za-z0-9_-]*`)
)

// permWords are the words of the table's paths and summaries: the
// candidates for a wildcard that a route's Match tells apart
// ("rotate-secret", "test", "inbound").
func permWords(routes []apikit.Route) []string {
	var out []string
	for _, rt := range routes {
		for _, w := range permWord.FindAllString(rt.Path+" "+rt.Doc.Summary, -1) {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// permPath returns a request path ("/api/…") that reaches routes[i]: the
// wildcards named in fixed take those values, the others a made-up id;
// for routes that share their pattern (Match), the others try the made-up
// id and then every word of the table until dispatch picks routes[i].
// shown is the pattern with the words chosen that way filled in
// ("/webhooks/{id}/rotate-secret"): stable, for check names.
func permPath(routes []apikit.Route, i int, fixed map[string]string, words []string) (path, shown string, ok bool) {
	rt := routes[i]
	var names []string
	for _, m := range permWildcard.FindAllStringSubmatch(rt.Path, -1) {
		names = append(names, strings.TrimSuffix(m[1], "..."))
	}
	filler := store.NewID()
	vals := map[string]string{}
	fill := func(word bool) string {
		return permWildcard.ReplaceAllStringFunc(rt.Path, func(m string) string {
			name := strings.TrimSuffix(m[1:len(m)-1], "...")
			if _, isFixed := fixed[name]; word && (isFixed || vals[name] == filler) {
				return m
			}
			return vals[name]
		})
	}
	var try func(n int) bool
	try = func(n int) bool {
		if n == len(names) {
			return rt.Match == nil || permDispatches(routes, i, vals)
		}
		candidates := []string{filler}
		if v, ok := fixed[names[n]]; ok {
			candidates = []string{v}
		} else if rt.Match != nil {
			candidates = append(candidates, words...)
		}
		for _, v := range candidates {
			vals[names[n]] = v
			if try(n + 1) {
				return true
			}
		}
		return false
	}
	if !try(0) {
		return "", "", false
	}
	return "/api" + fill(false), fill(true), true
}

// permDispatches reports whether a request with these path values goes to
// routes[i] among the routes of its pattern (the first whose Match
// accepts it).
func permDispatches(routes []apikit.Route, i int, vals map[string]string) bool {
	req := httptest.NewRequest(routes[i].Method, "/", nil)
	for k, v := range vals {
		req.SetPathValue(k, v)
	}
	for j, other := range routes {
		if other.Method != routes[i].Method || other.Path != routes[i].Path {
			continue
		}
		if other.Match == nil || other.Match(req) {
			return j == i
		}
	}
	return false
}

// permName names a route's check: "METHOD path", with the words that
// select the route when the pattern is shared (shown, from permPath).
func permName(rt apikit.Route, shown string) string {
	if rt.Match != nil {
		return rt.Method + " " + rt.Path + " as " + shown
	}
	return rt.Method + " " + rt.Path
}

// permBody is {} for writes (with Content-Type application/json), nothing
// for reads.
func permBody(method string) any {
	if method == "GET" || method == "HEAD" {
		return nil
	}
	return "{}"
}

// permCheck reports problem (nothing when it is ""), as a skipped known
// bug when name is in permKnownBugs.
func permCheck(t *testing.T, name, problem string) {
	t.Helper()
	if problem == "" {
		return
	}
	if bug, ok := permKnownBugs[name]; ok {
		t.Skipf("BUG: %s: %s (got: %s)", name, bug, problem)
	}
	t.Errorf("%s: %s", name, problem)
}

// permThrough is "" when the request got past authentication and
// authorization without a server error.
func permThrough(r *response) string {
	if r.Status == 401 || r.Status == 403 || r.Status >= 500 {
		return fmt.Sprintf("status %d, want anything but 401, 403 and 5xx; body: %s", r.Status, r.Body)
	}
	return ""
}

// permStatus is "" when the status is want.
func permStatus(r *response, want int) string {
	if r.Status != want {
		return fmt.Sprintf("status %d, want %d; body: %s", r.Status, want, r.Body)
	}
	return ""
}

// permTenantScope is "" when r is the 403 of a tenant-wide route refused
// to a caller limited to some organizations: requiredScope "tenant", in
// whichever error format the route's area uses.
func permTenantScope(r *response) string {
	if r.Status != 403 {
		return fmt.Sprintf("status %d, want 403; body: %s", r.Status, r.Body)
	}
	var body struct {
		Error         string `json:"error"`
		RequiredScope string `json:"requiredScope"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return fmt.Sprintf("403 body is not a JSON object: %v: %s", err, r.Body)
	}
	if body.RequiredScope != requiredScopeTenant || body.Error != apikit.TenantScopeMessage {
		return fmt.Sprintf("403 body %s, want requiredScope %q and error %q", r.Body, requiredScopeTenant, apikit.TenantScopeMessage)
	}
	return ""
}

// permForbidden is "" when r is the 403 of a caller lacking features (and,
// for super-admin routes, the super-admin role).
func permForbidden(r *response, features []string, superAdmin bool) string {
	if r.Status != 403 {
		return fmt.Sprintf("status %d, want 403; body: %s", r.Status, r.Body)
	}
	var body struct {
		Error            string   `json:"error"`
		Required         []string `json:"required"`
		RequiredFeatures []string `json:"requiredFeatures"`
		RequiredRoles    []string `json:"requiredRoles"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return fmt.Sprintf("403 body is not a JSON object: %v: %s", err, r.Body)
	}
	want := slices.Sorted(slices.Values(features))
	switch {
	case body.Error != "Forbidden":
		return fmt.Sprintf("403 error %q, want Forbidden; body: %s", body.Error, r.Body)
	case !slices.Equal(slices.Sorted(slices.Values(body.RequiredFeatures)), want):
		return fmt.Sprintf("403 requiredFeatures %v, want %v; body: %s", body.RequiredFeatures, want, r.Body)
	case !slices.Equal(slices.Sorted(slices.Values(body.Required)), want):
		return fmt.Sprintf("403 required %v, want %v; body: %s", body.Required, want, r.Body)
	case superAdmin && !slices.Contains(body.RequiredRoles, identity.SuperAdminRole):
		return fmt.Sprintf("403 requiredRoles %v, want %s; body: %s", body.RequiredRoles, identity.SuperAdminRole, r.Body)
	}
	return ""
}

func permHasPrefix(path string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return path == p || strings.HasPrefix(path, p+"/") })
}

func permTenantLevelWhy(path string) string {
	for _, tl := range permTenantLevel {
		if strings.HasPrefix(path, tl.prefix) {
			return tl.why
		}
	}
	return ""
}

// permOrgKind returns the kind of object whose id the path takes, and the
// wildcard that takes it ("" when no prefix of permOrgKinds matches).
func permOrgKind(path string) (kind, wildcard string) {
	best := -1
	for i, k := range permOrgKinds {
		if strings.HasPrefix(path, k.prefix) && (best < 0 || len(k.prefix) > len(permOrgKinds[best].prefix)) {
			best = i
		}
	}
	if best < 0 {
		return "", ""
	}
	rest := path[len(permOrgKinds[best].prefix)-1:]
	m := permWildcard.FindStringSubmatch(rest)
	return permOrgKinds[best].kind, strings.TrimSuffix(m[1], "...")
}

// permMerge returns a new map holding a's entries, then b's.
func permMerge(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func permBoolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
