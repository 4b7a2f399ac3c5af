package httpapi

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Spec audit of the Entities area: the rows and rules of the spec's
// "Custom entity", "Custom field definition", "Record", the definition
// state table, the Entities endpoint table and the shared list, export and
// custom-field conventions (and issue 6) that entities_test.go and
// entities_records_test.go do not already assert over HTTP. Every test
// makes its own tenants and entity ids, so on PostgreSQL (one schema for
// the package) nothing another test writes shows up.

// specKey creates, as the super admin, a role in tenantID holding features
// and readable organizations orgs (nil: every organization), and an API
// key with it acting in orgID ("" for none); it returns the key's secret.
func (e *testEnv) specKey(tenantID, orgID string, orgs []string, features ...string) string {
	e.t.Helper()
	roleID := e.do("POST", "/api/auth/roles", e.superKey, map[string]string{"name": "role-" + randomHex(4), "tenantId": tenantID}).expect(201).JSON()["id"].(string)
	if features == nil {
		features = []string{}
	}
	acl := map[string]any{"roleId": roleID, "features": features}
	if orgs != nil {
		acl["organizations"] = orgs
	}
	e.do("PUT", "/api/auth/roles/acl", e.superKey, acl).expect(200)
	body := map[string]any{"name": "key", "tenantId": tenantID, "roles": []string{roleID}}
	if orgID != "" {
		body["organizationId"] = orgID
	}
	return e.do("POST", "/api/api_keys/keys", e.superKey, body).expect(201).JSON()["secret"].(string)
}

// specList gets the records list of eid with key and query, checks that
// the page holds every match (total equals the items when the page is not
// cut) and returns the body.
func (e *testEnv) specList(key, eid, query string) map[string]any {
	e.t.Helper()
	body := e.do("GET", recRecords+"?entityId="+url.QueryEscape(eid)+"&"+query, key, nil).expect(200).JSON()
	items := recItems(e.t, body)
	total, _ := body["total"].(float64)
	size, _ := body["pageSize"].(float64)
	if len(items) < int(size) && body["page"] == 1.0 && int(total) != len(items) {
		e.t.Errorf("list ?%s: total %v but the first page holds all %d matches", query, total, len(items))
	}
	return body
}

// specIDs returns the ids of a list body's items, in order.
func specIDs(t testing.TB, body map[string]any) []string {
	t.Helper()
	var out []string
	for _, it := range recItems(t, body) {
		out = append(out, it["id"].(string))
	}
	return out
}

// specByID maps each item of a list body to its id.
func specByID(t testing.TB, body map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, it := range recItems(t, body) {
		out[it["id"].(string)] = it
	}
	return out
}

// specCreate posts a record of eid with key and returns its id.
func (e *testEnv) specCreate(key, eid string, values map[string]any) string {
	e.t.Helper()
	body := e.do("POST", recRecords, key, map[string]any{"entityId": eid, "values": values}).expect(200).JSON()
	return body["item"].(map[string]any)["recordId"].(string)
}

// specRecordEvents returns the tenant's entities.record.* events about
// the records of eid, oldest first, with their data decoded.
func (e *testEnv) specRecordEvents(tenantID, eid string) ([]store.Event, []map[string]any) {
	e.t.Helper()
	var evs []store.Event
	var data []map[string]any
	for _, ev := range e.entityEvents(tenantID) {
		if !strings.HasPrefix(ev.Type, "entities.record.") {
			continue
		}
		var d map[string]any
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			e.t.Fatal(err)
		}
		if d["entityId"] != eid {
			continue
		}
		evs, data = append(evs, ev), append(data, d)
	}
	return evs, data
}

// The Entities endpoint table, row by row: method, path and feature
// (auth-only rows need a credential and no feature), and nothing else
// under /entities: "There is no public route for the definitions cache."
func TestEntitiesSpecRouteTable(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		type row struct {
			Method, Path, Feature string
			Public, SuperAdmin    bool
		}
		want := []row{
			{"GET", "/entities/entities", "", false, false},
			{"POST", "/entities/entities", "entities.definitions.manage", false, false},
			{"DELETE", "/entities/entities", "entities.definitions.manage", false, false},
			{"GET", "/entities/sidebar-entities", "", false, false},
			{"GET", "/entities/definitions", "", false, false},
			{"GET", "/entities/definitions.manage", "entities.definitions.manage", false, false},
			{"POST", "/entities/definitions", "entities.definitions.manage", false, false},
			{"POST", "/entities/definitions.batch", "entities.definitions.manage", false, false},
			{"DELETE", "/entities/definitions", "entities.definitions.manage", false, false},
			{"POST", "/entities/definitions.restore", "entities.definitions.manage", false, false},
			{"GET", "/entities/records", "entities.records.view", false, false},
			{"POST", "/entities/records", "entities.records.manage", false, false},
			{"PUT", "/entities/records", "entities.records.manage", false, false},
			{"DELETE", "/entities/records", "entities.records.manage", false, false},
			{"GET", "/entities/relations/options", "entities.definitions.view", false, false},
		}
		var got []row
		for _, rt := range (&api{kit: e.kit.Kit}).routes() {
			if !strings.HasPrefix(rt.Path, "/entities") {
				continue
			}
			if len(rt.Access.Features) > 1 {
				t.Errorf("%s %s needs %v, want one feature at most", rt.Method, rt.Path, rt.Access.Features)
			}
			got = append(got, row{rt.Method, rt.Path, strings.Join(rt.Access.Features, ","), rt.Access.Public, rt.Access.SuperAdmin})
		}
		cmp := func(a, b row) int { return strings.Compare(a.Method+" "+a.Path, b.Method+" "+b.Path) }
		slices.SortFunc(got, cmp)
		slices.SortFunc(want, cmp)
		is.Equal(got, want)

		// No cache route, whatever its spelling: 404 (405 where the path
		// exists with other methods) even for a key holding every feature.
		acme := e.newTenant("Acme")
		all := e.newKey(acme, "*")
		for _, p := range []string{"/definitions.cache", "/definitions/cache", "/cache", "/definitions.invalidate", "/definitions.cache/invalidate"} {
			for _, m := range []string{"GET", "POST", "DELETE"} {
				r := e.do(m, entBase+p, all, map[string]any{"entityId": "a.b"})
				if r.Status != 404 {
					t.Errorf("%s %s: status %d, want 404; body: %s", m, entBase+p, r.Status, r.Body)
				}
			}
		}

		// Authentication: the key in X-Api-Key (every other test) or as
		// "Authorization: ApiKey <key>".
		key := e.newKey(acme, recAllFeatures...)
		eid := recEntity()
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": eid, "key": "name", "kind": "text"}).expect(200)
		apiKey := func(r *http.Request) { r.Header.Set("Authorization", "ApiKey "+key) }
		e.send("GET", recRecords+"?entityId="+eid, nil, apiKey).expect(200)
		e.send("POST", recRecords, map[string]any{"entityId": eid, "values": map[string]any{"name": "x"}}, apiKey).expect(200)
		e.send("GET", entBase+"/definitions.manage?entityId="+eid, nil, apiKey).expect(200)
		bad := func(r *http.Request) { r.Header.Set("Authorization", "ApiKey "+key+"x") }
		expectBody(t, e.send("GET", recRecords+"?entityId="+eid, nil, bad), 401, map[string]any{"error": "Unauthorized"})

		// "Super administrators bypass feature checks": the super key (of
		// the default tenant) holds no entities feature by name.
		sid := recEntity()
		e.do("POST", entBase+"/definitions", e.superKey, map[string]any{"entityId": sid, "key": "name", "kind": "text"}).expect(200)
		e.do("GET", entBase+"/definitions.manage?entityId="+sid, e.superKey, nil).expect(200)
		rid := e.specCreate(e.superKey, sid, map[string]any{"name": "by the super admin"})
		is.Equal(specIDs(t, e.specList(e.superKey, sid, "")), []string{rid})
		e.do("GET", recOptions+"?entityId="+sid, e.superKey, nil).expect(200)
		e.do("DELETE", recRecords+"?entityId="+sid+"&recordId="+rid, e.superKey, nil).expect(200)
	})
}

// Records: "validation tests cover every kind": each kind (and the spec's
// aliases string and enum) accepts its values in their stored form and
// refuses others with 400 {error: "Validation failed", fields:
// {"cf_<key>": message}}, writing nothing.
func TestEntitiesSpecRecordKinds(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		const dict = "0190a0b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b"
		f.define(
			recField{Key: "f_text", Kind: "text"},
			recField{Key: "f_string", Kind: "string"},
			recField{Key: "f_multiline", Kind: "multiline"},
			recField{Key: "f_integer", Kind: "integer"},
			recField{Key: "f_float", Kind: "float"},
			recField{Key: "f_boolean", Kind: "boolean"},
			recField{Key: "f_select", Kind: "select", ConfigJSON: map[string]any{"options": []any{"low", "high", 3}}},
			recField{Key: "f_enum", Kind: "enum", ConfigJSON: map[string]any{"options": []any{"a", "b"}}},
			recField{Key: "f_currency", Kind: "currency"},
			recField{Key: "f_relation", Kind: "relation", ConfigJSON: map[string]any{"relatedEntityId": "other.thing"}},
			recField{Key: "f_attachment", Kind: "attachment"},
			recField{Key: "f_dictionary", Kind: "dictionary", ConfigJSON: map[string]any{"dictionaryId": dict}},
			recField{Key: "f_phone", Kind: "phone"},
			recField{Key: "f_date", Kind: "date"},
			recField{Key: "f_datetime", Kind: "datetime"},
			recField{Key: "f_tags", Kind: "text", ConfigJSON: map[string]any{"multi": true}},
			recField{Key: "f_multi_select", Kind: "select", ConfigJSON: map[string]any{"options": []any{"low", "high"}, "multi": true}},
		)
		// The aliases are stored as text and select.
		kinds := map[string]any{}
		for _, it := range entItems(t, e.entDefinitions(key, "entityId="+eid)) {
			kinds[it["key"].(string)] = it["kind"]
		}
		is.Equal(kinds["f_string"], "text")
		is.Equal(kinds["f_enum"], "select")

		good := []struct {
			key       string
			in, saved any
		}{
			{"f_text", "hello", "hello"},
			{"f_text", 42, "42"},
			{"f_string", "s", "s"},
			{"f_multiline", "a\nb", "a\nb"},
			{"f_integer", 42, 42.0},
			{"f_integer", "7", 7.0},
			{"f_integer", -3, -3.0},
			{"f_float", 1.25, 1.25},
			{"f_float", "2.5", 2.5},
			{"f_boolean", true, true},
			{"f_boolean", "false", false},
			{"f_select", "low", "low"},
			{"f_select", 3, 3.0},
			{"f_select", "3", 3.0}, // stored as the option is written
			{"f_enum", "b", "b"},
			{"f_currency", 9.99, 9.99},
			{"f_currency", "10", 10.0},
			{"f_relation", "0190a0b1-0000-7000-8000-000000000001", "0190a0b1-0000-7000-8000-000000000001"},
			{"f_attachment", []any{"a1", "a2"}, []any{"a1", "a2"}},
			{"f_attachment", "a1", []any{"a1"}},
			{"f_dictionary", "entry", "entry"},
			{"f_phone", "+1 555 0100", "+1 555 0100"},
			{"f_date", "2024-02-29", "2024-02-29"},
			{"f_date", "2024-03-01T10:00:00Z", "2024-03-01"},
			{"f_datetime", "2024-03-01T10:00:00+02:00", "2024-03-01T08:00:00.000000Z"},
			{"f_tags", []any{"a", "b"}, []any{"a", "b"}},
			{"f_tags", "solo", []any{"solo"}},
			{"f_multi_select", []any{"low", "high"}, []any{"low", "high"}},
		}
		bad := []struct {
			key, msg string
			in       any
		}{
			{"f_text", "Must be text", true},
			{"f_text", "Must be text", map[string]any{"a": 1}},
			{"f_text", "Must be a single value", []any{"x"}},
			{"f_string", "Must be text", false},
			{"f_multiline", "Must be text", false},
			{"f_multiline", "Must be a single value", []any{}},
			{"f_integer", "Must be a whole number", "abc"},
			{"f_integer", "Must be a whole number", 1.5},
			{"f_integer", "Must be a whole number", true},
			{"f_float", "Must be a number", "x"},
			{"f_float", "Must be a number", true},
			{"f_boolean", "Must be true or false", "maybe"},
			{"f_boolean", "Must be true or false", 1},
			{"f_select", "Must be one of the options", "medium"},
			{"f_select", "Must be one of the options", true},
			{"f_enum", "Must be one of the options", "c"},
			{"f_currency", "Must be a number", "ten"},
			{"f_relation", "Must be text", 5},
			{"f_attachment", "Must be text", []any{1}},
			{"f_dictionary", "Must be text", true},
			{"f_phone", "Must be text", false},
			{"f_date", "Must be a date (YYYY-MM-DD)", "2023-02-29"},
			{"f_date", "Must be a date (YYYY-MM-DD)", 20240101},
			{"f_datetime", "Must be a date and time (RFC 3339)", "yesterday"},
			{"f_tags", "Must be text", []any{"a", true}},
			{"f_multi_select", "Must be one of the options", []any{"low", "nope"}},
		}
		covered := map[string]bool{}
		for _, c := range bad {
			covered[c.key] = true
			r := e.do("POST", recRecords, key, map[string]any{"entityId": eid, "values": map[string]any{"cf_" + c.key: c.in}})
			if r.Status != 400 || !sameAsJSON(t, r.JSON(), recInvalid(map[string]string{"cf_" + c.key: c.msg})) {
				t.Errorf("%s = %v: %d %s, want 400 cf_%s: %q", c.key, c.in, r.Status, r.Body, c.key, c.msg)
			}
		}
		// Every failing field at once, with a good one: nothing written.
		all := map[string]any{"f_phone": "+44"}
		want := map[string]string{}
		for _, c := range bad {
			if _, seen := want["cf_"+c.key]; !seen {
				all[c.key], want["cf_"+c.key] = c.in, c.msg
			}
		}
		recExpect(t, e.do("POST", recRecords, key, map[string]any{"entityId": eid, "values": all}), 400, recInvalid(want))
		is.Equal(e.specList(key, eid, "withDeleted=true")["total"], 0.0)
		evs, _ := e.specRecordEvents(f.tf.ID, eid)
		is.Equal(len(evs), 0)

		// Each good value, alone: stored in its canonical form.
		ids := make([]string, len(good))
		for i, c := range good {
			covered[c.key] = true
			ids[i] = e.specCreate(key, eid, map[string]any{c.key: c.in})
		}
		byID := specByID(t, e.specList(key, eid, "pageSize=100"))
		for i, c := range good {
			item := byID[ids[i]]
			if !sameAsJSON(t, item[c.key], c.saved) {
				t.Errorf("%s = %#v: stored %#v, want %#v", c.key, c.in, item[c.key], c.saved)
			}
		}
		// Every kind of the issue is covered.
		for _, k := range entities.Kinds {
			found := false
			for key, kind := range kinds {
				if kind == k && covered[key] {
					found = true
				}
			}
			if !found {
				t.Errorf("kind %s not covered", k)
			}
		}
		// null is accepted by every kind (nothing stored).
		nulls := map[string]any{}
		for k := range kinds {
			nulls[k] = nil
		}
		id := e.specCreate(key, eid, nulls)
		item := specByID(t, e.specList(key, eid, "pageSize=100"))[id]
		for k := range kinds {
			if item[k] != nil {
				t.Errorf("%s = null stored as %#v", k, item[k])
			}
		}
	})
}

// Records: "validation tests cover every rule": required, date, integer,
// float, lt, lte, gt, gte, eq, ne and regex; a rule's own message; the
// first failing rule wins; rules other than required pass on an empty
// value; on a list every element is checked; PUT re-validates.
func TestEntitiesSpecRecordRules(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		rule := func(name string, param any, message string) map[string]any {
			r := map[string]any{"rule": name}
			if param != nil {
				r["param"] = param
			}
			if message != "" {
				r["message"] = message
			}
			return r
		}
		v := func(rules ...map[string]any) map[string]any {
			list := make([]any, len(rules))
			for i, r := range rules {
				list[i] = r
			}
			return map[string]any{"validation": list}
		}
		f.define(
			recField{Key: "r_date", Kind: "text", ConfigJSON: v(rule("date", nil, ""))},
			recField{Key: "r_integer", Kind: "text", ConfigJSON: v(rule("integer", nil, ""))},
			recField{Key: "r_float", Kind: "text", ConfigJSON: v(rule("float", nil, ""))},
			recField{Key: "r_lt", Kind: "integer", ConfigJSON: v(rule("lt", 10, ""))},
			recField{Key: "r_lte", Kind: "integer", ConfigJSON: v(rule("lte", 10, ""))},
			recField{Key: "r_gt", Kind: "float", ConfigJSON: v(rule("gt", 0, ""))},
			recField{Key: "r_gte", Kind: "currency", ConfigJSON: v(rule("gte", 0, ""))},
			recField{Key: "r_eq", Kind: "text", ConfigJSON: v(rule("eq", "yes", ""))},
			recField{Key: "r_eq_num", Kind: "integer", ConfigJSON: v(rule("eq", 5, ""))},
			recField{Key: "r_ne", Kind: "text", ConfigJSON: v(rule("ne", "no", ""))},
			recField{Key: "r_regex", Kind: "text", ConfigJSON: v(rule("regex", "^[A-Z]{3}$", ""))},
			recField{Key: "r_message", Kind: "text", ConfigJSON: v(rule("regex", `^\d+$`, "Digits only"))},
			recField{Key: "r_first", Kind: "integer", ConfigJSON: v(rule("gt", 0, "first"), rule("lt", 10, "second"))},
			recField{Key: "r_list", Kind: "text", ConfigJSON: map[string]any{"multi": true, "validation": []any{rule("regex", "^[a-z]+$", "")}}},
		)
		for _, c := range []struct {
			key string
			in  any
			msg string // "" accepted
		}{
			{"r_date", "2024-05-01", ""},
			{"r_date", "2024-13-01", "Must be a date"},
			{"r_date", "", ""}, // empty passes every rule but required
			{"r_integer", "12", ""},
			{"r_integer", "1.5", "Must be a whole number"},
			{"r_integer", "abc", "Must be a whole number"},
			{"r_float", "1.5", ""},
			{"r_float", "x", "Must be a number"},
			{"r_lt", 9, ""},
			{"r_lt", 10, "Must be less than 10"},
			{"r_lte", 10, ""},
			{"r_lte", 11, "Must be at most 10"},
			{"r_gt", 0.5, ""},
			{"r_gt", 0, "Must be greater than 0"},
			{"r_gte", 0, ""},
			{"r_gte", -0.01, "Must be at least 0"},
			{"r_eq", "yes", ""},
			{"r_eq", "no", "Must be yes"},
			{"r_eq_num", 5, ""},
			{"r_eq_num", 6, "Must be 5"},
			{"r_ne", "yes", ""},
			{"r_ne", "no", "Must not be no"},
			{"r_regex", "ABC", ""},
			{"r_regex", "ABCD", "Has an invalid format"},
			{"r_regex", "", ""},
			{"r_regex", nil, ""},
			{"r_message", "123", ""},
			{"r_message", "12a", "Digits only"},
			{"r_first", 5, ""},
			{"r_first", 0, "first"},
			{"r_first", 10, "second"},
			{"r_list", []any{"ab", "cd"}, ""},
			{"r_list", []any{"ab", "C"}, "Has an invalid format"},
			{"r_list", []any{}, ""},
		} {
			r := e.do("POST", recRecords, key, map[string]any{"entityId": eid, "values": map[string]any{c.key: c.in}})
			if c.msg == "" {
				if r.Status != 200 {
					t.Errorf("%s = %#v: status %d, want 200; body: %s", c.key, c.in, r.Status, r.Body)
				}
				continue
			}
			if r.Status != 400 || !sameAsJSON(t, r.JSON(), recInvalid(map[string]string{"cf_" + c.key: c.msg})) {
				t.Errorf("%s = %#v: %d %s, want 400 cf_%s: %q", c.key, c.in, r.Status, r.Body, c.key, c.msg)
			}
		}
		// Several failing rules in one write: every field named, nothing
		// written.
		before := e.specList(key, eid, "withDeleted=true")["total"]
		recExpect(t, e.do("POST", recRecords, key, map[string]any{"entityId": eid, "values": map[string]any{
			"r_lt": 11, "cf_r_eq": "no", "r_regex": "x", "r_float": "1.0"}}),
			400, recInvalid(map[string]string{"cf_r_lt": "Must be less than 10", "cf_r_eq": "Must be yes", "cf_r_regex": "Has an invalid format"}))
		is.Equal(e.specList(key, eid, "withDeleted=true")["total"], before)
		// PUT re-validates the values it is given.
		id := e.specCreate(key, eid, map[string]any{"r_lt": 1})
		recExpect(t, e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": id, "values": map[string]any{"r_lt": 12, "r_ne": "no"}}),
			400, recInvalid(map[string]string{"cf_r_lt": "Must be less than 10", "cf_r_ne": "Must not be no"}))
		is.Equal(specByID(t, e.specList(key, eid, "pageSize=100"))[id]["r_lt"], 1.0)

		// required: on create every required field must be given and not
		// empty; an update keeps the stored values and cannot clear one.
		req := &recFixture{e: e, tf: f.tf, key: key, eid: recEntity()}
		req.define(
			recField{Key: "need", Kind: "text", ConfigJSON: v(rule("required", nil, ""))},
			recField{Key: "need_msg", Kind: "integer", ConfigJSON: v(rule("required", nil, "Give a number"))},
			recField{Key: "need_list", Kind: "text", ConfigJSON: map[string]any{"multi": true, "validation": []any{rule("required", nil, "")}}},
			recField{Key: "other", Kind: "text"},
		)
		missing := recInvalid(map[string]string{"cf_need": "This field is required", "cf_need_msg": "Give a number", "cf_need_list": "This field is required"})
		recExpect(t, e.do("POST", recRecords, key, map[string]any{"entityId": req.eid, "values": map[string]any{}}), 400, missing)
		recExpect(t, e.do("POST", recRecords, key, map[string]any{"entityId": req.eid, "values": map[string]any{"need": "   ", "need_msg": nil, "need_list": []any{}}}), 400, missing)
		// A non-UUID recordId on PUT creates, so required applies too.
		recExpect(t, e.do("PUT", recRecords, key, map[string]any{"entityId": req.eid, "recordId": "new", "values": map[string]any{"other": "x"}}), 400, missing)
		rid := e.specCreate(key, req.eid, map[string]any{"need": "x", "need_msg": 0, "need_list": "y"})
		e.do("PUT", recRecords, key, map[string]any{"entityId": req.eid, "recordId": rid, "values": map[string]any{"other": "z"}}).expect(200)
		recExpect(t, e.do("PUT", recRecords, key, map[string]any{"entityId": req.eid, "recordId": rid, "values": map[string]any{"need": nil, "cf_need_list": []any{}}}),
			400, recInvalid(map[string]string{"cf_need": "This field is required", "cf_need_list": "This field is required"}))
		item := specByID(t, e.specList(key, req.eid, ""))[rid]
		is.Equal(item["need"], "x")
		is.Equal(item["need_list"], []any{"y"})
		is.Equal(item["other"], "z")
	})
}

// Records: the cf_ prefix is optional; reserved keys (the record's own
// columns) are dropped rather than refused; more than 128 fields in one
// record is refused under "_customFields".
func TestEntitiesSpecRecordKeys(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		f.define(recField{Key: "name", Kind: "text"}, recField{Key: "n", Kind: "integer"})
		id := e.specCreate(key, eid, map[string]any{"cf_name": "a", "n": 1, "id": store.NewID(), "createdAt": "2000-01-01T00:00:00Z",
			"created_at": "x", "updatedAt": 5, "updated_at": nil, "deletedAt": "2000-01-01T00:00:00Z", "deleted_at": true, "cf_id": "y"})
		list := e.specList(key, eid, "")
		is.Equal(specIDs(t, list), []string{id})
		item := recItems(t, list)[0]
		is.Equal(recKeys(item), []string{"createdAt", "id", "n", "name", "updatedAt"})
		is.True(time.Since(parseTime(t, "createdAt", item["createdAt"])) < time.Minute)
		// The prefixed key updates the same field.
		e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": id, "values": map[string]any{"cf_n": 2}}).expect(200)
		is.Equal(recItems(t, e.specList(key, eid, ""))[0]["n"], 2.0)

		// 128 fields pass, 129 do not.
		wide := &recFixture{e: e, tf: f.tf, key: key, eid: recEntity()}
		var defs []recField
		values := map[string]any{}
		for i := range 129 {
			k := fmt.Sprintf("k%03d", i)
			defs = append(defs, recField{Key: k, Kind: "text"})
			values[k] = "v"
		}
		wide.define(defs...)
		recExpect(t, e.do("POST", recRecords, key, map[string]any{"entityId": wide.eid, "values": values}), 400,
			recInvalid(map[string]string{"_customFields": "Too many custom fields (at most 128)"}))
		delete(values, "k128")
		e.specCreate(key, wide.eid, values)
	})
}

// POST /entities/records: "a recordId that is not a UUID causes an id to
// be generated" (so a UUID is used as the id); PUT: "a non-UUID recordId
// falls back to create behaviour".
func TestEntitiesSpecRecordIDs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		f.define(recField{Key: "name", Kind: "text"})

		// A UUID is the record's id (in lower case).
		given := store.NewID()
		recExpect(t, e.do("POST", recRecords, key, map[string]any{"entityId": eid, "recordId": strings.ToUpper(given), "values": map[string]any{"name": "given"}}),
			200, map[string]any{"ok": true, "item": map[string]any{"entityId": eid, "recordId": given}})
		is.Equal(specIDs(t, e.specList(key, eid, "")), []string{given})
		// Taken: 409, the record unchanged.
		r := e.do("POST", recRecords, key, map[string]any{"entityId": eid, "recordId": given, "values": map[string]any{"name": "again"}})
		recExpect(t, r, 409, map[string]any{"error": "A record with this id already exists"})
		// Anything else makes a new id: sentinels, other text, an empty id.
		seen := map[string]bool{given: true}
		for _, rid := range []any{"create", "new", "null", "undefined", "", "123", given + "x", "{" + given + "}", nil} {
			body := e.do("POST", recRecords, key, map[string]any{"entityId": eid, "recordId": rid, "values": map[string]any{"name": fmt.Sprint(rid)}}).expect(200).JSON()
			id := body["item"].(map[string]any)["recordId"].(string)
			if !store.IsID(id) || seen[id] {
				t.Errorf("recordId %q: got id %q, want a new UUID", rid, id)
			}
			seen[id] = true
		}
		// PUT with a non-UUID recordId creates too.
		for _, rid := range []string{"new", "create", "x1"} {
			body := e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": rid, "values": map[string]any{"name": "put " + rid}}).expect(200).JSON()
			id := body["item"].(map[string]any)["recordId"].(string)
			is.True(store.IsID(id) && !seen[id])
			seen[id] = true
		}
		list := e.specList(key, eid, "pageSize=100")
		is.Equal(list["total"], float64(len(seen)))
		is.Equal(specByID(t, list)[given]["name"], "given")
		// An upper-case UUID names the same record on PUT and DELETE.
		e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": strings.ToUpper(given), "values": map[string]any{"name": "upper"}}).expect(200)
		is.Equal(specByID(t, e.specList(key, eid, "pageSize=100"))[given]["name"], "upper")
		e.do("DELETE", recRecords+"?entityId="+eid+"&recordId="+strings.ToUpper(given), key, nil).expect(200)
		_, still := specByID(t, e.specList(key, eid, "pageSize=100"))[given]
		is.True(!still)
		// A soft-deleted record keeps its id: it cannot be created again.
		recExpect(t, e.do("POST", recRecords, key, map[string]any{"entityId": eid, "recordId": given, "values": map[string]any{"name": "back"}}),
			409, map[string]any{"error": "A record with this id already exists"})

		// Record ids are unique per tenant (entities/doc.go, "Record
		// ids"): another tenant using the id gets a record of its own,
		// answered as for a free id, and never reaches A's record.
		other := e.newTenant("Other " + randomHex(3))
		bKey := e.newKey(other, recAllFeatures...)
		e.do("POST", entBase+"/definitions", bKey, map[string]any{"entityId": eid, "key": "name", "kind": "text"}).expect(200)
		live := e.specCreate(key, eid, map[string]any{"name": "A's"})
		r = e.do("POST", recRecords, bKey, map[string]any{"entityId": eid, "recordId": live, "values": map[string]any{"name": "B's"}})
		recExpect(t, r, 200, map[string]any{"ok": true, "item": map[string]any{"entityId": eid, "recordId": live}})
		is.True(!strings.Contains(string(r.Body), "A's"))
		is.Equal(e.specList(bKey, eid, "withDeleted=true")["total"], 1.0)
		is.Equal(specByID(t, e.specList(bKey, eid, "pageSize=100"))[live]["name"], "B's")
		is.Equal(specByID(t, e.specList(key, eid, "pageSize=100"))[live]["name"], "A's")
	})
}

// specKindsFixture makes fields of the range kinds (float, currency,
// datetime) and others, filterable or not, and records n = 1..5; it
// returns the ids by n.
func specKindsFixture(f *recFixture) map[int]string {
	f.e.t.Helper()
	f.define(
		recField{Key: "n", Kind: "integer"},
		recField{Key: "price", Kind: "float", ConfigJSON: map[string]any{"filterable": true}},
		recField{Key: "amount", Kind: "currency"},
		recField{Key: "at", Kind: "datetime", ConfigJSON: map[string]any{"filterable": true}},
		recField{Key: "label", Kind: "text", ConfigJSON: map[string]any{"filterable": true}},
		recField{Key: "flag", Kind: "boolean", ConfigJSON: map[string]any{"filterable": true}},
		recField{Key: "level", Kind: "select", ConfigJSON: map[string]any{"options": []any{1, 2, 3}, "filterable": true}},
		recField{Key: "note", Kind: "text"},
	)
	ids := map[int]string{}
	for _, r := range []map[string]any{
		{"n": 1, "price": 1.5, "amount": 100, "at": "2024-01-01T10:00:00Z", "label": "pear", "flag": true, "level": 1, "note": "first"},
		{"n": 2, "price": 10, "amount": 20.25, "at": "2024-01-01T08:30:00-02:00", "label": "apple", "flag": false, "level": 2},
		{"n": 3, "price": 2.25, "amount": 3, "at": "2023-12-31T23:59:59Z", "label": "Apple", "flag": true, "level": 3},
		{"n": 4, "price": -1, "amount": 0, "at": "2024-01-02T00:00:00Z", "label": "banana", "flag": false, "level": "1"},
		{"n": 5, "amount": 5, "at": "2024-01-01T10:00:00.5Z", "label": "pear", "flag": "true", "level": 2},
	} {
		ids[int(r["n"].(int))] = f.create(r)
	}
	return ids
}

// GET /entities/records: filters "coerced by kind", cf_<key>In, and the
// range filters of float, currency and datetime fields (integer and date
// are in TestEntityRecordsListQuery); sorting by any field; the totals of
// filtered lists (filterable fields included) match their items.
func TestEntitiesSpecRecordFiltersByKind(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		ids := specKindsFixture(f)

		check := func(query string, want []int) {
			t.Helper()
			list := e.specList(key, eid, "sortField=n&"+query)
			got := recNs(t, list)
			if !slices.Equal(got, want) {
				t.Errorf("%s: n = %v, want %v", query, got, want)
			}
			if list["total"] != float64(len(want)) {
				t.Errorf("%s: total %v, want %d", query, list["total"], len(want))
			}
		}
		for _, c := range []struct {
			query string
			want  []int
		}{
			// float
			{"cf_price=10", []int{2}},
			{"cf_price=10.0", []int{2}},
			{"cf_price=-1", []int{4}},
			{"cf_priceGte=2", []int{2, 3}}, // numeric, not text, order
			{"cf_priceGt=2.25", []int{2}},
			{"cf_priceLt=1.5", []int{4}},
			{"cf_priceLte=1.5", []int{1, 4}},
			{"cf_priceIn=1.5,-1", []int{1, 4}},
			{"cf_price=1.5,2.25", []int{1, 3}},
			// currency
			{"cf_amountGte=20", []int{1, 2}},
			{"cf_amountLt=3", []int{4}},
			{"cf_amount=3", []int{3}},
			{"cf_amount=20.25", []int{2}},
			{"cf_amountIn=0,5", []int{4, 5}},
			// datetime: compared as instants, whatever the offset written
			{"cf_atGte=2024-01-01T10:00:00Z", []int{1, 2, 4, 5}},
			{"cf_atGt=2024-01-01T10:00:00Z", []int{2, 4, 5}},
			{"cf_atLt=2024-01-01T00:00:00Z", []int{3}},
			{"cf_atLte=2024-01-01", []int{3}},
			{"cf_at=" + url.QueryEscape("2024-01-01T12:30:00+02:00"), []int{2}},
			{"cf_atIn=" + url.QueryEscape("2024-01-01T10:00:00Z,2024-01-02T00:00:00Z"), []int{1, 4}},
			// text, boolean, select with numeric options
			{"cf_label=pear", []int{1, 5}},
			{"cf_label=apple", []int{2}},
			{"cf_labelIn=apple,banana", []int{2, 4}},
			{"cf_flag=true", []int{1, 3, 5}},
			{"cf_flag=false", []int{2, 4}},
			{"cf_level=2", []int{2, 5}},
			{"cf_levelIn=1,3", []int{1, 3, 4}},
			{"cf_note=first", []int{1}},
			// combinations and search
			{"cf_label=pear&cf_flag=true", []int{1, 5}},
			{"cf_flag=true&cf_priceGte=2", []int{3}},
			{"cf_label=pear&search=first", []int{1}},
			{"search=pear", []int{1, 5}},
			{"search=APPLE", []int{2, 3}},
			{"search=label", []int{}}, // keys do not match
			{"search=%25", []int{}},   // LIKE wildcards are literal
			{"search=_", []int{}},
			{"search=p_ar", []int{}},
			{"search=zzz", []int{}},
		} {
			check(c.query, c.want)
		}
		// Range filters only on range kinds.
		recExpect(t, e.do("GET", recRecords+"?entityId="+eid+"&cf_levelGt=1", key, nil), 400,
			recInvalid(map[string]string{"cf_level": "Range filters apply to integer, float, currency, date and datetime fields"}))
		recExpect(t, e.do("GET", recRecords+"?entityId="+eid+"&cf_atGte=soon", key, nil), 400,
			recInvalid(map[string]string{"cf_at": "Must be a date and time (RFC 3339)"}))
		recExpect(t, e.do("GET", recRecords+"?entityId="+eid+"&cf_amountLt=x", key, nil), 400,
			recInvalid(map[string]string{"cf_amount": "Must be a number"}))

		// Paging an equality filter: the total is of every match.
		list := e.specList(key, eid, "cf_flag=true&pageSize=1&page=2&sortField=n")
		is.Equal(recNs(t, list), []int{3})
		is.Equal(list["total"], 3.0)
		is.Equal(list["totalPages"], 3.0)
		list = e.specList(key, eid, "cf_flag=true&page=9")
		is.Equal(len(recItems(t, list)), 0)
		is.Equal(list["total"], 3.0)

		// Sorting by any field, custom ones included; records without the
		// value first ascending, last descending; ties by id.
		for _, c := range []struct {
			query string
			want  []int
		}{
			{"", []int{1, 2, 3, 4, 5}}, // default: id, so creation order
			{"sortField=id", []int{1, 2, 3, 4, 5}},
			{"sortField=id&sortDir=desc", []int{5, 4, 3, 2, 1}},
			{"sortField=price", []int{5, 4, 1, 3, 2}},
			{"sortField=cf_price&sortDir=desc", []int{2, 3, 1, 4, 5}},
			{"sortField=amount&sortDir=desc", []int{1, 2, 5, 3, 4}},
			{"sortField=at", []int{3, 1, 5, 2, 4}},
			{"sortField=label", []int{3, 2, 4, 1, 5}},
			{"sortField=flag", []int{2, 4, 1, 3, 5}},
			{"sortField=level&sortDir=DESC", []int{3, 5, 2, 4, 1}},
			{"sortField=note&sortDir=desc", []int{1, 5, 4, 3, 2}},
			{"sortField=updatedAt", []int{1, 2, 3, 4, 5}},
			{"sortField=created_at&sortDir=desc", []int{5, 4, 3, 2, 1}},
		} {
			got := recNs(t, e.specList(key, eid, c.query))
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: n = %v, want %v", c.query, got, c.want)
			}
		}

		// Updates and soft deletes move records between filters, and the
		// totals follow.
		time.Sleep(2 * time.Millisecond)
		e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": ids[1], "values": map[string]any{"label": "plum", "flag": false}}).expect(200)
		is.Equal(recNs(t, e.specList(key, eid, "sortField=updatedAt")), []int{2, 3, 4, 5, 1})
		check("cf_label=pear", []int{5})
		check("cf_label=plum", []int{1})
		check("cf_flag=true", []int{3, 5})
		check("cf_flag=false", []int{1, 2, 4})
		e.do("DELETE", recRecords+"?entityId="+eid+"&recordId="+ids[5], key, nil).expect(200)
		check("cf_label=pear", []int{})
		check("cf_flag=true", []int{3})
		check("cf_levelIn=2", []int{2})
		check("withDeleted=true&cf_label=pear", []int{5})
		check("withDeleted=true&cf_flag=true", []int{3, 5})
		check("withDeleted=true&cf_atGt=2024-01-01T10:00:00Z", []int{2, 4, 5})
		check("withDeleted=true", []int{1, 2, 3, 4, 5})
		// Clearing a value takes the record out of its filter.
		e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": ids[3], "values": map[string]any{"flag": nil, "price": nil}}).expect(200)
		check("cf_flag=true", []int{})
		check("cf_priceGte=2", []int{2})
	})
}

// Filters on multi-value fields (multi select, multi text), filterable
// or not: a record matches when its list holds one of the values; the
// totals match the items.
func TestEntitiesSpecRecordMultiFilters(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		f.define(recField{Key: "n", Kind: "integer"},
			recField{Key: "colors", Kind: "select", ConfigJSON: map[string]any{"options": []any{"red", "green", "blue"}, "multi": true, "filterable": true}},
			recField{Key: "tags", Kind: "text", ConfigJSON: map[string]any{"multi": true}})
		for i, c := range []map[string]any{
			{"colors": []any{"red", "green"}, "tags": []any{"a", "b"}},
			{"colors": []any{"blue"}, "tags": "b"},
			{"colors": "green", "tags": []any{}},
			{},
		} {
			c["n"] = i + 1
			f.create(c)
		}
		for _, c := range []struct {
			query string
			want  []int
		}{
			{"cf_colors=green", []int{1, 3}},
			{"cf_colors=blue", []int{2}},
			{"cf_colorsIn=red,blue", []int{1, 2}},
			{"cf_colors=red,blue", []int{1, 2}},
			{"cf_tags=b", []int{1, 2}},
			{"cf_tagsIn=a,z", []int{1}},
			{"cf_tags=z", []int{}},
			{"cf_colors=green&cf_tags=b", []int{1}},
		} {
			list := e.specList(key, eid, "sortField=n&"+c.query)
			if got := recNs(t, list); !slices.Equal(got, c.want) || list["total"] != float64(len(c.want)) {
				t.Errorf("%s: n = %v, total %v; want %v", c.query, got, list["total"], c.want)
			}
		}
	})
}

// A field made filterable after records exist (or no longer filterable)
// filters the same, with totals matching the items.
func TestEntitiesSpecRecordFilterableLater(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		f.define(recField{Key: "n", Kind: "integer"}, recField{Key: "color", Kind: "text"})
		for i, c := range []string{"red", "blue", "red", "green", "red"} {
			f.create(map[string]any{"n": i + 1, "color": c})
		}
		check := func(what, query string, want []int) {
			t.Helper()
			list := e.specList(key, eid, "sortField=n&"+query)
			if got := recNs(t, list); !slices.Equal(got, want) || list["total"] != float64(len(want)) {
				t.Errorf("%s, %s: n = %v, total %v; want %v", what, query, got, list["total"], want)
			}
		}
		redefine := func(cfg map[string]any) {
			t.Helper()
			e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": eid, "key": "color", "kind": "text", "configJson": cfg}).expect(200)
		}
		check("plain", "cf_color=red", []int{1, 3, 5})
		redefine(map[string]any{"filterable": true})
		check("made filterable", "cf_color=red", []int{1, 3, 5})
		check("made filterable", "cf_colorIn=blue,green", []int{2, 4})
		id := f.create(map[string]any{"n": 6, "color": "red"})
		check("after a create", "cf_color=red", []int{1, 3, 5, 6})
		redefine(map[string]any{})
		e.do("DELETE", recRecords+"?entityId="+eid+"&recordId="+id, key, nil).expect(200)
		check("no longer filterable", "cf_color=red", []int{1, 3, 5})
		redefine(map[string]any{"filterable": true})
		check("filterable again", "cf_color=red", []int{1, 3, 5})
		// Deleted and restored while filterable.
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": eid, "key": "color"}))
		check("deleted (filter ignored)", "cf_color=red", []int{1, 2, 3, 4, 5})
		f.create(map[string]any{"n": 7})
		e.do("POST", entBase+"/definitions.restore", key, map[string]any{"entityId": eid, "key": "color"}).expect(200)
		check("restored", "cf_color=red", []int{1, 3, 5})
		f.create(map[string]any{"n": 8, "color": "red"})
		check("restored, then a create", "cf_color=red", []int{1, 3, 5, 8})
	})
}

// "tenant and organization isolation hold for ... records": a caller
// whose role reads only its organization sees its organization's records
// and the tenant's (no organization), never another organization's: in
// lists (totals of filterable fields included), exports and relation
// options; it cannot update or delete them. Records are stamped with the
// caller's organization ("creates ... inject the active organization").
func TestEntitiesSpecRecordOrganizationIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		o1, o2 := acme.OrgID, e.entNewOrg(acme.ID, "Acme West")
		k1 := e.specKey(acme.ID, o1, []string{o1}, recAllFeatures...)
		k2 := e.specKey(acme.ID, o2, []string{o2}, recAllFeatures...)
		kT := e.specKey(acme.ID, "", nil, recAllFeatures...)
		eid := recEntity()
		// Tenant-wide fields (both organizations see them).
		expectEntVersion(t, e.do("POST", entBase+"/definitions.batch", kT, map[string]any{"entityId": eid, "definitions": []any{
			map[string]any{"key": "name", "kind": "text", "configJson": map[string]any{"filterable": true}},
			map[string]any{"key": "tag", "kind": "text"},
		}}))
		r1 := e.specCreate(k1, eid, map[string]any{"name": "one", "tag": "x"})
		r2 := e.specCreate(k2, colon(eid), map[string]any{"name": "two", "tag": "x"})
		rT := e.specCreate(kT, eid, map[string]any{"name": "tenant", "tag": "x"})
		sorted := func(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }
		see := func(k, query string) []string {
			t.Helper()
			return sorted(specIDs(t, e.specList(k, eid, "pageSize=100&"+query))...)
		}

		is.Equal(see(k1, ""), sorted(r1, rT))
		is.Equal(see(k2, ""), sorted(r2, rT))
		is.Equal(see(kT, ""), sorted(r1, r2, rT))
		is.Equal(see(k2, "cf_tag=x"), sorted(r2, rT))
		is.Equal(see(k2, "cf_name=one"), []string(nil))
		is.Equal(e.specList(k2, eid, "cf_name=one")["total"], 0.0)
		is.Equal(e.specList(k2, eid, "cf_nameIn=one,two,tenant")["total"], 2.0)
		is.Equal(e.specList(k1, eid, "cf_name=one")["total"], 1.0)
		is.Equal(e.specList(kT, eid, "cf_nameIn=one,two")["total"], 2.0)
		is.Equal(see(k2, "search=one"), []string(nil))

		// O2 cannot change O1's record.
		recExpect(t, e.do("PUT", recRecords, k2, map[string]any{"entityId": eid, "recordId": r1, "values": map[string]any{"name": "O2's"}}), 404, recNotFound)
		recExpect(t, e.do("DELETE", recRecords+"?entityId="+eid+"&recordId="+r1, k2, nil), 404, recNotFound)
		recExpect(t, e.do("DELETE", recRecords, k2, map[string]any{"entityId": eid, "recordId": r1}), 404, recNotFound)
		// Nor see it in an export or among relation options.
		r := e.do("GET", recRecords+"?entityId="+eid+"&format=csv&exportScope=full", k2, nil).expect(200)
		rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
		is.NoErr(err)
		var exported []string
		for _, row := range rows[1:] {
			exported = append(exported, row[0])
		}
		is.Equal(sorted(exported...), sorted(r2, rT))
		var options []string
		for _, it := range recItems(t, e.do("GET", recOptions+"?entityId="+eid, k2, nil).expect(200).JSON()) {
			options = append(options, it["value"].(string))
		}
		is.Equal(sorted(options...), sorted(r2, rT))

		// O2 may change the tenant's record; O1 then sees the change.
		e.do("PUT", recRecords, k2, map[string]any{"entityId": eid, "recordId": rT, "values": map[string]any{"tag": "y"}}).expect(200)
		is.Equal(specByID(t, e.specList(k1, eid, ""))[rT]["tag"], "y")
		is.Equal(specByID(t, e.specList(k1, eid, ""))[r1]["name"], "one")
		// O1 deletes its own; O2's view with deleted records still lacks it.
		e.do("DELETE", recRecords+"?entityId="+eid+"&recordId="+r1, k1, nil).expect(200)
		is.Equal(see(k2, "withDeleted=true"), sorted(r2, rT))
		is.Equal(see(kT, "withDeleted=true"), sorted(r1, r2, rT))

		// The events carry each record's organization.
		evs, data := e.specRecordEvents(acme.ID, eid)
		orgOf := map[string]string{}
		for i, ev := range evs {
			is.Equal(ev.TenantID, acme.ID)
			is.Equal(data[i]["tenantId"], acme.ID)
			if o, _ := data[i]["organizationId"].(string); o != ev.OrganizationID {
				t.Errorf("%s: data organizationId %v, event's %q", ev.Type, data[i]["organizationId"], ev.OrganizationID)
			}
			if ev.Type == entities.EventRecordCreated {
				orgOf[data[i]["id"].(string)] = ev.OrganizationID
			}
		}
		is.Equal(orgOf, map[string]string{r1: o1, r2: o2, rT: ""})
	})
}

// Events entities.record.created|updated|deleted "carrying the record's
// values, tenantId and organizationId"; failed writes emit nothing.
func TestEntitiesSpecRecordEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		f.define(recField{Key: "name", Kind: "text"}, recField{Key: "qty", Kind: "integer"})
		id := e.specCreate(key, colon(eid), map[string]any{"cf_name": "Widget", "qty": "3"})
		e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": id, "values": map[string]any{"qty": 4, "name": nil}}).expect(200)
		e.do("POST", recRecords, key, map[string]any{"entityId": eid, "values": map[string]any{"qty": "x"}}).expect(400)
		e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": id, "values": map[string]any{"ghost": 1}}).expect(400)
		e.do("DELETE", recRecords, key, map[string]any{"entityId": eid, "recordId": id}).expect(200)
		e.do("DELETE", recRecords, key, map[string]any{"entityId": eid, "recordId": id}).expect(404)

		evs, data := e.specRecordEvents(f.tf.ID, eid)
		var types []string
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		is.Equal(types, []string{entities.EventRecordCreated, entities.EventRecordUpdated, entities.EventRecordDeleted})
		for i, d := range data {
			is.Equal(evs[i].TenantID, f.tf.ID)
			is.Equal(evs[i].OrganizationID, f.tf.OrgID)
			is.Equal(d["id"], id)
			is.Equal(d["entityId"], eid)
			is.Equal(d["tenantId"], f.tf.ID)
			is.Equal(d["organizationId"], f.tf.OrgID)
		}
		is.Equal(data[0]["values"], map[string]any{"name": "Widget", "qty": 3.0})
		is.Equal(data[1]["values"], map[string]any{"qty": 4.0})
		is.Equal(data[2]["values"], map[string]any{"qty": 4.0})
		_, deleted := data[2]["deletedAt"]
		is.True(deleted)
	})
}

// Scope resolution over HTTP with one key defined at all three scopes
// (global, tenant, organization), each with another kind: definitions,
// the manage view, record validation and filter coercion follow the most
// specific; tombstones at each scope hide the key there (and in narrower
// scopes that do not define it) and restore brings it back.
func TestEntitiesSpecThreeScopes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		o1, o2 := acme.OrgID, e.entNewOrg(acme.ID, "Acme West")
		all := append([]string{}, recAllFeatures...)
		k1, k2 := e.specKey(acme.ID, o1, nil, all...), e.specKey(acme.ID, o2, nil, all...)
		kT, kB := e.specKey(acme.ID, "", nil, all...), e.newKey(globex, all...)
		eid := entTestID("scoped") // global definitions reach every tenant: the id is the test's own
		_, err := e.kit.Entities.DefineGlobal(t.Context(), entities.DefinitionInput{EntityID: eid, Key: "f", Kind: "text",
			ConfigJSON: map[string]any{"label": "Global"}})
		is.NoErr(err)
		_, err = e.kit.Entities.DefineGlobal(t.Context(), entities.DefinitionInput{EntityID: eid, Key: "g", Kind: "text"})
		is.NoErr(err)
		e.do("POST", entBase+"/definitions", kT, map[string]any{"entityId": eid, "key": "f", "kind": "integer", "configJson": map[string]any{"label": "Tenant"}}).expect(200)
		e.do("POST", entBase+"/definitions", k1, map[string]any{"entityId": colon(eid), "key": "f", "kind": "boolean", "configJson": map[string]any{"label": "O1"}}).expect(200)

		view := func(k string) (label, kind, scope any) {
			t.Helper()
			for _, it := range entItems(t, e.entDefinitions(k, "entityId="+eid)) {
				if it["key"] == "f" {
					label, kind = it["label"], it["kind"]
				}
			}
			for _, it := range entItems(t, e.entManage(k, eid)) {
				if it["key"] == "f" {
					scope = it["scope"]
				}
			}
			return
		}
		type v3 struct{ label, kind, scope any }
		views := func() map[string]v3 {
			t.Helper()
			out := map[string]v3{}
			for name, k := range map[string]string{"o1": k1, "o2": k2, "tenant": kT, "globex": kB} {
				l, kd, s := view(k)
				out[name] = v3{l, kd, s}
			}
			return out
		}
		// write posts f = x with key k and returns the status and the
		// message for cf_f ("" when accepted).
		write := func(k string, x any) (int, string) {
			t.Helper()
			r := e.do("POST", recRecords, k, map[string]any{"entityId": eid, "values": map[string]any{"f": x}})
			if r.Status == 200 {
				return 200, ""
			}
			fields, _ := r.JSON()["fields"].(map[string]any)
			msg, _ := fields["cf_f"].(string)
			return r.Status, msg
		}
		type w struct {
			status int
			msg    string
		}
		writes := func(x any) map[string]w {
			t.Helper()
			out := map[string]w{}
			for name, k := range map[string]string{"o1": k1, "o2": k2, "tenant": kT, "globex": kB} {
				s, m := write(k, x)
				out[name] = w{s, m}
			}
			return out
		}
		unknown := w{400, "Unknown custom field"}
		ok := w{200, ""}

		is.Equal(views(), map[string]v3{
			"o1":     {"O1", "boolean", "organization"},
			"o2":     {"Tenant", "integer", "tenant"},
			"tenant": {"Tenant", "integer", "tenant"},
			"globex": {"Global", "text", "global"},
		})
		is.Equal(writes("abc"), map[string]w{"o1": {400, "Must be true or false"}, "o2": {400, "Must be a whole number"},
			"tenant": {400, "Must be a whole number"}, "globex": ok})
		is.Equal(writes("7"), map[string]w{"o1": {400, "Must be true or false"}, "o2": ok, "tenant": ok, "globex": ok})
		is.Equal(writes("true"), map[string]w{"o1": ok, "o2": {400, "Must be a whole number"}, "tenant": {400, "Must be a whole number"}, "globex": ok})
		// Filters are coerced by the kind that wins for the caller.
		recExpect(t, e.do("GET", recRecords+"?entityId="+eid+"&cf_f=abc", k2, nil), 400, recInvalid(map[string]string{"cf_f": "Must be a number"}))
		recExpect(t, e.do("GET", recRecords+"?entityId="+eid+"&cf_f=abc", k1, nil), 400, recInvalid(map[string]string{"cf_f": "Must be true or false"}))
		e.do("GET", recRecords+"?entityId="+eid+"&cf_f=abc", kB, nil).expect(200)
		// The entity's field count is of the keys the caller sees
		// (global ones included).
		for _, k := range []string{k1, kT, kB} {
			e.do("POST", entBase+"/entities", k, map[string]any{"entityId": eid, "label": "Scoped"}).expect(200)
			is.Equal(e.entList(k, false)[0]["count"], 2.0)
		}

		// O1 tombstones f: hidden in O1 only, though the tenant and
		// global scopes define it.
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", k1, map[string]any{"entityId": eid, "key": "f"}))
		is.Equal(views()["o1"], v3{nil, nil, nil})
		is.Equal(views()["o2"], v3{"Tenant", "integer", "tenant"})
		is.Equal(e.entManage(k1, eid)["deletedKeys"], []any{"f"})
		is.Equal(e.entManage(kT, eid)["deletedKeys"], []any{})
		is.Equal(writes("7"), map[string]w{"o1": unknown, "o2": ok, "tenant": ok, "globex": ok})
		is.Equal(e.entList(k1, false)[0]["count"], 1.0)
		// Restore: O1's own (boolean) is back.
		expectBody(t, e.do("POST", entBase+"/definitions.restore", k1, map[string]any{"entityId": eid, "key": "f"}), 200, map[string]any{"ok": true})
		is.Equal(views()["o1"], v3{"O1", "boolean", "organization"})

		// The tenant tombstones f: hidden for the tenant and O2 (which
		// does not define it), not for O1 (which does), not for Globex.
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", kT, map[string]any{"entityId": eid, "key": "f"}))
		is.Equal(views(), map[string]v3{
			"o1":     {"O1", "boolean", "organization"},
			"o2":     {nil, nil, nil},
			"tenant": {nil, nil, nil},
			"globex": {"Global", "text", "global"},
		})
		is.Equal(writes("true"), map[string]w{"o1": ok, "o2": unknown, "tenant": unknown, "globex": ok})
		is.Equal(e.entManage(kT, eid)["deletedKeys"], []any{"f"})
		is.Equal(e.entManage(k2, eid)["deletedKeys"], []any{})
		// O2 defines f itself: its own wins over the tenant's tombstone.
		e.do("POST", entBase+"/definitions", k2, map[string]any{"entityId": eid, "key": "f", "kind": "date", "configJson": map[string]any{"label": "O2"}}).expect(200)
		is.Equal(views()["o2"], v3{"O2", "date", "organization"})
		is.Equal(writes("2024-01-01")["o2"], ok)
		// Restore at the tenant: the tenant's integer again (O2 keeps its own).
		e.do("POST", entBase+"/definitions.restore", kT, map[string]any{"entityId": eid, "key": "f"}).expect(200)
		is.Equal(views(), map[string]v3{
			"o1":     {"O1", "boolean", "organization"},
			"o2":     {"O2", "date", "organization"},
			"tenant": {"Tenant", "integer", "tenant"},
			"globex": {"Global", "text", "global"},
		})

		// Globex tombstones the global key: hidden for Globex only.
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", kB, map[string]any{"entityId": eid, "key": "g"}))
		keysOf := func(k string) []any { return e.entDefKeys(k, eid) }
		is.Equal(keysOf(kB), []any{"f"})
		is.Equal(keysOf(kT), []any{"f", "g"})
		is.Equal(keysOf(k1), []any{"f", "g"})
		is.Equal(writes("x")["globex"], ok)
		r := e.do("POST", recRecords, kB, map[string]any{"entityId": eid, "values": map[string]any{"g": "x"}})
		recExpect(t, r, 400, recInvalid(map[string]string{"cf_g": "Unknown custom field"}))
		e.do("POST", recRecords, kT, map[string]any{"entityId": eid, "values": map[string]any{"g": "x"}}).expect(200)
	})
}

// "Definitions are cached per tenant/organization/entity and the cache is
// invalidated on every change, in this process at once": record writes,
// filters and sorting follow each definition change immediately; the
// state table's "history retained": stored values survive a delete and
// show again after a restore.
func TestEntitiesSpecDefinitionChangesReachRecords(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		post := func(values map[string]any) *response {
			t.Helper()
			return e.do("POST", recRecords, key, map[string]any{"entityId": eid, "values": values})
		}
		def := func(kind string, extra map[string]any) {
			t.Helper()
			b := map[string]any{"entityId": eid, "key": "qty", "kind": kind}
			for k, v := range extra {
				b[k] = v
			}
			e.do("POST", entBase+"/definitions", key, b).expect(200)
		}
		def("integer", nil)
		// Read (and so cache) before every change.
		recExpect(t, post(map[string]any{"qty": "abc"}), 400, recInvalid(map[string]string{"cf_qty": "Must be a whole number"}))
		id := e.specCreate(key, eid, map[string]any{"qty": 5})

		def("text", nil) // a new kind
		post(map[string]any{"qty": "abc"}).expect(200)
		def("integer", map[string]any{"configJson": map[string]any{"validation": []any{map[string]any{"rule": "lt", "param": 3}}}})
		recExpect(t, post(map[string]any{"qty": 4}), 400, recInvalid(map[string]string{"cf_qty": "Must be less than 3"}))

		def("integer", map[string]any{"isActive": false}) // disabled
		recExpect(t, post(map[string]any{"qty": 1}), 400, recInvalid(map[string]string{"cf_qty": "Unknown custom field"}))
		recExpect(t, e.do("GET", recRecords+"?entityId="+eid+"&sortField=qty", key, nil), 400,
			recInvalid(map[string]string{"sortField": "must be id, createdAt, updatedAt or a field of the entity"}))
		is.Equal(e.specList(key, eid, "cf_qty=5")["total"], 2.0) // the filter is ignored
		// The stored value stays (history), and PUT of other fields works.
		is.Equal(specByID(t, e.specList(key, eid, ""))[id]["qty"], 5.0)
		def("integer", map[string]any{"isActive": true})
		post(map[string]any{"qty": 1}).expect(200)
		is.Equal(e.specList(key, eid, "cf_qty=5")["total"], 1.0)

		// Batch: a new kind at once.
		expectEntVersion(t, e.do("POST", entBase+"/definitions.batch", key, map[string]any{"entityId": eid,
			"definitions": []any{map[string]any{"key": "qty", "kind": "boolean"}, map[string]any{"key": "extra", "kind": "text"}}}))
		recExpect(t, post(map[string]any{"qty": 1}), 400, recInvalid(map[string]string{"cf_qty": "Must be true or false"}))
		post(map[string]any{"qty": true, "extra": "x"}).expect(200)

		// DELETE (tombstone): the key is refused at once; restore: accepted.
		expectEntVersion(t, e.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": eid, "key": "qty"}))
		recExpect(t, post(map[string]any{"qty": true}), 400, recInvalid(map[string]string{"cf_qty": "Unknown custom field"}))
		recExpect(t, e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": id, "values": map[string]any{"qty": true}}), 400,
			recInvalid(map[string]string{"cf_qty": "Unknown custom field"}))
		e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": id, "values": map[string]any{"extra": "y"}}).expect(200)
		is.Equal(specByID(t, e.specList(key, eid, ""))[id]["qty"], 5.0) // history retained
		e.do("POST", entBase+"/definitions.restore", key, map[string]any{"entityId": eid, "key": "qty"}).expect(200)
		post(map[string]any{"qty": false}).expect(200)
		item := specByID(t, e.specList(key, eid, ""))[id]
		is.Equal(item["qty"], 5.0)
		is.Equal(item["extra"], "y")
	})
}

// "... and across processes on one PostgreSQL within 1 second": two Kits
// (two handlers) over one database; a definition change made through one
// reaches the other's record validation within a second (SQLite: two
// handles on one file).
func TestEntitiesSpecDefinitionCacheAcrossProcesses(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, dbURL string) {
		is := is.New(t)
		open := func() *store.DB {
			db, err := store.Open(t.Context(), dbURL, nil)
			is.NoErr(err)
			t.Cleanup(func() { db.Close() })
			is.NoErr(db.Migrate(t.Context()))
			return db
		}
		e := newTestEnv(t, open())
		kit2, err := full.OpenPlain(t.Context(), full.Config{DB: open()})
		is.NoErr(err)
		t.Cleanup(func() { _ = kit2.Close(context.Background()) })
		e2 := *e
		e2.kit, e2.handler = kit2, mustNew(kit2, Options{Auth: e.auth})

		acme := e.newTenant("Acme")
		key := e.newKey(acme, recAllFeatures...)
		eid := recEntity()
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": eid, "key": "a", "kind": "integer"}).expect(200)
		post := func(env *testEnv, values map[string]any) int {
			return env.do("POST", recRecords, key, map[string]any{"entityId": eid, "values": values}).Status
		}
		is.Equal(post(&e2, map[string]any{"a": "x"}), 400) // cached by the second
		is.Equal(post(&e2, map[string]any{"b": "x"}), 400)
		eventually := func(what string, cond func() bool) {
			t.Helper()
			start := time.Now()
			for !cond() {
				if time.Since(start) > time.Second {
					t.Fatalf("%s: not seen through the other handler after %v", what, time.Since(start))
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": eid, "key": "a", "kind": "text"}).expect(200)
		is.Equal(post(e, map[string]any{"a": "x"}), 200) // at once in the first
		eventually("a redefined", func() bool { return post(&e2, map[string]any{"a": "x"}) == 200 })
		e.do("POST", entBase+"/definitions", key, map[string]any{"entityId": eid, "key": "b", "kind": "text"}).expect(200)
		eventually("b defined", func() bool { return post(&e2, map[string]any{"b": "x"}) == 200 })
		e2.do("DELETE", entBase+"/definitions", key, map[string]any{"entityId": eid, "key": "b"}).expect(200)
		eventually("b deleted", func() bool { return post(e, map[string]any{"b": "x"}) == 400 })
		e2.do("POST", entBase+"/definitions.restore", key, map[string]any{"entityId": eid, "key": "b"}).expect(200)
		eventually("b restored", func() bool { return post(e, map[string]any{"b": "x"}) == 200 })
	})
}

// DELETE /entities/entities: the entity goes, "its records stay"
// (upstream TC-ENTITIES-006): still listed, exported and writable.
func TestEntitiesSpecDeletedEntityKeepsRecords(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		e.do("POST", entBase+"/entities", key, map[string]any{"entityId": eid, "label": "Things", "labelField": "name", "showInSidebar": true}).expect(200)
		f.define(recField{Key: "name", Kind: "text"})
		id := f.create(map[string]any{"name": "kept"})
		expectBody(t, e.do("DELETE", entBase+"/entities", key, map[string]any{"entityId": eid}), 200, map[string]any{"ok": true})
		is.Equal(len(e.entList(key, false)), 0)
		is.Equal(len(e.entList(key, true)), 0)

		list := e.specList(key, eid, "")
		is.Equal(specIDs(t, list), []string{id})
		is.Equal(recItems(t, list)[0]["name"], "kept")
		rows, err := csv.NewReader(bytes.NewReader(e.do("GET", recRecords+"?entityId="+eid+"&format=csv", key, nil).expect(200).Body)).ReadAll()
		is.NoErr(err)
		is.Equal(len(rows), 2)
		is.Equal(rows[1][1], "kept")
		e.do("PUT", recRecords, key, map[string]any{"entityId": eid, "recordId": id, "values": map[string]any{"name": "still"}}).expect(200)
		is.Equal(e.specList(key, eid, "cf_name=still")["total"], 1.0)
		// The definitions stay too.
		is.Equal(e.entDefKeys(key, eid), []any{"name"})
	})
}

// Exports: full=true is the third spelling of "every row"; every formula
// lead character is neutralised in CSV cells (=, +, -, @, tab, carriage
// return) and the file opens in a strict CSV reader; the page, sort and
// filters apply; deleted records only with withDeleted.
func TestEntitiesSpecExport(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		f.define(recField{Key: "n", Kind: "integer"}, recField{Key: "cell", Kind: "text"}, recField{Key: "first_name", Kind: "text"})
		cells := []string{"=1+2", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "=HYPERLINK(\"http://x\",\"a,b\")", " =1", "a=1", "plain"}
		want := []string{"'=1+2", "'+1", "'-1", "'@SUM(A1)", "'\tx", "'\rx", "'=HYPERLINK(\"http://x\",\"a,b\")", " =1", "a=1", "plain"}
		ids := make([]string, len(cells))
		for i, c := range cells {
			ids[i] = f.create(map[string]any{"n": i + 1, "cell": c, "first_name": fmt.Sprint("name ", i+1)})
		}
		read := func(query string) (*response, [][]string) {
			t.Helper()
			r := e.do("GET", recRecords+"?entityId="+eid+"&format=csv&"+query, key, nil).expect(200)
			rd := csv.NewReader(bytes.NewReader(r.Body))
			rows, err := rd.ReadAll()
			if err != nil {
				t.Fatalf("?%s: the CSV does not parse: %v\n%s", query, err, r.Body)
			}
			return r, rows
		}
		r, rows := read("full=true&sortField=n")
		is.Equal(r.Header.Get("Content-Disposition"), `attachment; filename="`+eid+`_full.csv"`)
		is.Equal(rows[0], []string{"Id", "N", "Cell", "First Name", "Created At", "Updated At"})
		is.Equal(len(rows), len(cells)+1)
		for i := range cells {
			is.Equal(rows[i+1][0], ids[i])
			if rows[i+1][2] != want[i] {
				t.Errorf("cell %q exported as %q, want %q", cells[i], rows[i+1][2], want[i])
			}
		}
		// The current page without a scope; sorting and filters apply.
		_, rows = read("pageSize=3&page=2&sortField=n&sortDir=desc")
		is.Equal(len(rows), 4)
		is.Equal([]string{rows[1][1], rows[2][1], rows[3][1]}, []string{"7", "6", "5"})
		_, rows = read("all=true&cf_nGte=9")
		is.Equal(len(rows), 3)
		_, rows = read("exportScope=full&search=name%201")
		is.Equal(len(rows), 3) // name 1, name 10
		// Deleted records: only with withDeleted.
		e.do("DELETE", recRecords+"?entityId="+eid+"&recordId="+ids[0], key, nil).expect(200)
		_, rows = read("full=true")
		is.Equal(len(rows), len(cells))
		_, rows = read("full=true&withDeleted=true")
		is.Equal(len(rows), len(cells)+1)
		// Other values are not touched in the other formats.
		r = e.do("GET", recRecords+"?entityId="+eid+"&format=json&full=true&sortField=n", key, nil).expect(200)
		is.Equal(r.Header.Get("Content-Disposition"), `attachment; filename="`+eid+`_full.json"`)
		var arr []map[string]any
		is.NoErr(json.Unmarshal(r.Body, &arr))
		is.Equal(len(arr), len(cells)-1)
		is.Equal(arr[0]["cell"], "+1")
		r = e.do("GET", recRecords+"?entityId="+eid+"&format=markdown&full=true", key, nil).expect(200)
		is.Equal(r.Header.Get("Content-Disposition"), `attachment; filename="`+eid+`_full.md"`)
		// Without a format these parameters change nothing: a JSON page.
		list := e.specList(key, eid, "full=true&exportScope=full&all=true&pageSize=2")
		is.Equal(len(recItems(t, list)), 2)
		is.Equal(list["total"], float64(len(cells)-1))
	})
}

// Shared conventions, "Filtering: Common filters: search, id,
// module-specific ones": GET /entities/records?id=<recordId> returns that
// record only.
func TestEntitiesSpecRecordIDFilter(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		f.define(recField{Key: "name", Kind: "text"})
		a := f.create(map[string]any{"name": "a"})
		f.create(map[string]any{"name": "b"})
		list := e.specList(key, eid, "id="+a)
		is.Equal(specIDs(t, list), []string{a})
		is.Equal(list["total"], 1.0)
		is.Equal(len(recItems(t, e.specList(key, eid, "id="+store.NewID()))), 0)
	})
}

// Search finds a record by any of its values as text, the same on both
// engines: a boolean field's value reads "true" or "false", a number as
// written.
func TestEntitiesSpecRecordSearchValueTypes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := recSetup(t, db)
		e, key, eid := f.e, f.key, f.eid
		f.define(recField{Key: "n", Kind: "integer"}, recField{Key: "flag", Kind: "boolean"}, recField{Key: "price", Kind: "float"})
		f.create(map[string]any{"n": 1, "flag": true, "price": 2.5})
		f.create(map[string]any{"n": 2, "flag": false, "price": 10})
		for _, c := range []struct {
			search string
			want   []int
		}{
			{"2.5", []int{1}},
			{"10", []int{2}},
			{"true", []int{1}},
			{"false", []int{2}},
			{"TRUE", []int{1}},
		} {
			got := recNs(t, e.specList(key, eid, "sortField=n&search="+url.QueryEscape(c.search)))
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: search=%s: n = %v, want %v", db.Dialect().Name(), c.search, got, c.want)
			}
		}
	})
}

// "Tenant scoping: most entities require an active tenant, and a request
// without one fails with 400 or 403": a host identity holding every
// feature but no tenant reaches nothing.
type specNoTenant struct{}

func (specNoTenant) Authenticate(r *http.Request) (*identity.Identity, error) {
	return &identity.Identity{UserID: "host-user", Features: []string{"*"}}, nil
}

func TestEntitiesSpecNoTenant(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		e.handler = mustNew(e.kit, Options{Auth: e.auth, Authenticator: specNoTenant{}})
		eid := recEntity()
		id := store.NewID()
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/entities", nil},
			{"POST", "/entities", map[string]any{"entityId": eid, "label": "X"}},
			{"DELETE", "/entities", map[string]any{"entityId": eid}},
			{"GET", "/sidebar-entities", nil},
			{"GET", "/definitions?entityId=" + eid, nil},
			{"GET", "/definitions.manage?entityId=" + eid, nil},
			{"POST", "/definitions", map[string]any{"entityId": eid, "key": "a", "kind": "text"}},
			{"POST", "/definitions.batch", map[string]any{"entityId": eid, "definitions": []any{map[string]any{"key": "a", "kind": "text"}}}},
			{"DELETE", "/definitions", map[string]any{"entityId": eid, "key": "a"}},
			{"POST", "/definitions.restore", map[string]any{"entityId": eid, "key": "a"}},
			{"GET", "/records?entityId=" + eid, nil},
			{"GET", "/records?entityId=" + eid + "&format=csv", nil},
			{"POST", "/records", map[string]any{"entityId": eid, "values": map[string]any{}}},
			{"PUT", "/records", map[string]any{"entityId": eid, "recordId": id, "values": map[string]any{}}},
			{"PUT", "/records", map[string]any{"entityId": eid, "recordId": "new", "values": map[string]any{}}},
			{"DELETE", "/records?entityId=" + eid + "&recordId=" + id, nil},
			{"GET", "/relations/options?entityId=" + eid, nil},
		} {
			r := e.send(c.method, entBase+c.path, c.body, func(*http.Request) {})
			if r.Status != 400 && r.Status != 403 {
				t.Errorf("%s %s without a tenant: status %d, want 400 or 403; body: %s", c.method, c.path, r.Status, r.Body)
			}
		}
	})
}

// Events, "the data object of a record event holds the record's fields
// plus tenantId and organizationId": also for a record of no organization
// (a tenant-level caller), where organizationId is null.
func TestEntitiesSpecRecordEventOrganizationIDAlwaysPresent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		kT := e.specKey(acme.ID, "", nil, recAllFeatures...)
		eid := recEntity()
		e.do("POST", entBase+"/definitions", kT, map[string]any{"entityId": eid, "key": "name", "kind": "text"}).expect(200)
		e.specCreate(kT, eid, map[string]any{"name": "tenant-level"})
		_, data := e.specRecordEvents(acme.ID, eid)
		if len(data) != 1 {
			t.Fatalf("%d record events, want 1", len(data))
		}
		org, ok := data[0]["organizationId"]
		if !ok || org != nil {
			t.Errorf("data organizationId present %v, value %v; want present, null", ok, org)
		}
	})
}

// Filterable fields (issue 6, Scale) must not let one tenant's records or
// definitions change what another tenant may do with an entity id of the
// same name: tenant B's field is not filterable, so B may store long
// values in it, and B's long values do not stop A from making A's field
// filterable.
func TestEntitiesSpecFilterableTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme, globex := e.newTenant("Acme"), e.newTenant("Globex")
		kA, kB := e.newKey(acme, recAllFeatures...), e.newKey(globex, recAllFeatures...)
		long := strings.Repeat("x", 3000)

		// A filterable in A first; then B writes a long value.
		eid := recEntity()
		e.do("POST", entBase+"/definitions", kA, map[string]any{"entityId": eid, "key": "note", "kind": "text", "configJson": map[string]any{"filterable": true}}).expect(200)
		e.do("POST", entBase+"/definitions", kB, map[string]any{"entityId": eid, "key": "note", "kind": "text"}).expect(200)
		rB := e.do("POST", recRecords, kB, map[string]any{"entityId": eid, "values": map[string]any{"note": long}})

		// B's long value first; then A makes its field filterable.
		eid2 := recEntity()
		e.do("POST", entBase+"/definitions", kB, map[string]any{"entityId": eid2, "key": "note", "kind": "text"}).expect(200)
		e.specCreate(kB, eid2, map[string]any{"note": long})
		rA := e.do("POST", entBase+"/definitions", kA, map[string]any{"entityId": eid2, "key": "note", "kind": "text", "configJson": map[string]any{"filterable": true}})

		if rB.Status != 200 || rA.Status != 200 {
			t.Fatalf("B's write of a long value to its own non-filterable field: %d %s; A making its field filterable while B holds one: %d %s",
				rB.Status, rB.Body, rA.Status, rA.Body)
		}
		is.Equal(e.specList(kB, eid, "cf_note="+long)["total"], 1.0)
		is.Equal(e.specList(kA, eid2, "cf_note=x")["total"], 0.0)
	})
}
