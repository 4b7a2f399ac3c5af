package httpapi

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
)

// FuzzRecordFilters reads arbitrary query strings with recordFilters:
// every filter comes from a cf_ parameter, named by it without its
// operator suffix; the operator is one of the Filter operators; an In
// filter (cf_<key>In, or cf_<key> whose value holds a comma) holds the
// non-empty, trimmed, comma-free parts of the value; any other filter
// holds the value as given.
func FuzzRecordFilters(f *testing.F) {
	for _, s := range []string{"", "cf_a=1", "cf_a=1,2,%20,3", "cf_aIn=x", "cf_aIn=", "cf_aGte=5&cf_aLt=9", "cf_In=1",
		"cf_=x", "cf_aGteIn=1", "cf_a=1&cf_a=2", "cf_%00=%00", "cf_a=%ff,%fe", "x=1&cf_b_c_Lte=2020-01-01", "cf_aIn=,,,", "cf_a"} {
		f.Add(s)
	}
	ops := []string{entities.OpEq, entities.OpIn, entities.OpGt, entities.OpGte, entities.OpLt, entities.OpLte}
	suffix := map[string]string{entities.OpIn: "In", entities.OpGt: "Gt", entities.OpGte: "Gte", entities.OpLt: "Lt", entities.OpLte: "Lte"}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw)
		for _, fl := range entitiesapi.RecordFilters(q) {
			if !slices.Contains(ops, fl.Op) {
				t.Fatalf("%q: filter %+v has an unknown operator", raw, fl)
			}
			// The parameter the filter came from.
			var name string
			var values []string
			for _, n := range []string{fl.Key + suffix[fl.Op], fl.Key} {
				if vs, ok := q[n]; ok && strings.HasPrefix(n, "cf_") {
					name, values = n, vs
					break
				}
			}
			if name == "" {
				t.Fatalf("%q: filter %+v comes from no cf_ parameter", raw, fl)
			}
			switch fl.Op {
			case entities.OpIn:
				for _, v := range fl.Values {
					if v == "" || strings.TrimSpace(v) != v || strings.Contains(v, ",") || !strings.Contains(values[0], v) {
						t.Fatalf("%q: In filter %+v holds %q", raw, fl, v)
					}
				}
			default:
				if len(fl.Values) != 1 || fl.Values[0] != values[0] || fl.Op == entities.OpEq && strings.Contains(values[0], ",") {
					t.Fatalf("%q: filter %+v, want the value %q as given", raw, fl, values[0])
				}
			}
		}
	})
}

// fuzzRecordsFixture is an entity with a field of most kinds and a few
// records, one of them deleted.
type fuzzRecordsFixture struct {
	fuzzEnv
	key, eid string
	live     map[string]map[string]any // id → values
	deleted  string
}

func newFuzzRecordsFixture(f *testing.F, fe fuzzEnv) *fuzzRecordsFixture {
	f.Helper()
	e := fe.testEnv
	tf := e.newTenant("Fuzz Records")
	fx := &fuzzRecordsFixture{fuzzEnv: fe, key: e.newKey(tf, recAllFeatures...), eid: "fz.rec_" + randomHex(6), live: map[string]map[string]any{}}
	fields := []recField{
		{Key: "name", Kind: "text", ConfigJSON: map[string]any{"filterable": true}},
		{Key: "n", Kind: "integer", ConfigJSON: map[string]any{"filterable": true}},
		{Key: "price", Kind: "float"},
		{Key: "amount", Kind: "currency"},
		{Key: "b", Kind: "boolean", ConfigJSON: map[string]any{"filterable": true}},
		{Key: "s", Kind: "select", ConfigJSON: map[string]any{"options": []any{"red", "green", 5}, "filterable": true}},
		{Key: "d", Kind: "date"},
		{Key: "dt", Kind: "datetime"},
		{Key: "tags", Kind: "text", ConfigJSON: map[string]any{"multi": true}},
		{Key: "phone", Kind: "phone"},
		{Key: "notes", Kind: "multiline"},
	}
	e.do("POST", "/api/entities/definitions.batch", fx.key, map[string]any{"entityId": fx.eid, "definitions": fields}).expect(200)
	for _, v := range []map[string]any{
		{"name": "Ada", "n": 1, "price": 1.5, "amount": 10, "b": true, "s": "red", "d": "2024-01-02", "dt": "2024-01-02T03:04:05Z", "tags": []string{"a", "b"}, "phone": "+1 555 0100", "notes": "x"},
		{"name": "bob", "n": -7, "price": 0, "b": false, "s": 5, "d": "1999-12-31", "tags": []string{"b"}},
		{"name": "Ada", "n": 1, "s": "green", "notes": "=SUM(A1)"},
		{"name": "%_\\'\"", "n": 9007199254740992},
		{},
	} {
		body := e.do("POST", recRecords, fx.key, map[string]any{"entityId": fx.eid, "values": v}).expect(200).JSON()
		fx.live[body["item"].(map[string]any)["recordId"].(string)] = v
	}
	body := e.do("POST", recRecords, fx.key, map[string]any{"entityId": fx.eid, "values": map[string]any{"name": "gone"}}).expect(200).JSON()
	fx.deleted = body["item"].(map[string]any)["recordId"].(string)
	e.do("DELETE", recRecords+"?entityId="+fx.eid+"&recordId="+fx.deleted, fx.key, nil).expect(200)
	return fx
}

// FuzzRecordListQuery sends arbitrary query strings to the records list
// (GET /api/entities/records, with the fixture's entityId first, and
// once with the query alone), to the relation options and to the field
// definitions. No query gets a 5xx: the list answers 200 or 400 with an
// error body. A 200 page is consistent (its items are the fixture's
// records, never another tenant's or entity's, the deleted one only with
// withDeleted; as many items as the total leaves for the page; pageSize
// within 1..100; ids within an id filter; an equality filter on the text
// field "name" matched exactly), and an export is a well-formed file of
// the requested format.
func FuzzRecordListQuery(f *testing.F) {
	for _, s := range []string{
		"", "page=2&pageSize=2", "pageSize=1000", "page=0", "page=-1&pageSize=0", "page=9223372036854775807&pageSize=100",
		"page=1e3", "sortField=n&sortDir=desc", "sortField=cf_price", "sortField=nope", "sortDir=sideways", "sortField=createdAt&sortDir=DESC",
		"search=ada", "search=%25", "search=%00", "search=%ff", "withDeleted=true", "withDeleted=1", "withDeleted=maybe",
		"cf_name=Ada", "cf_name=ada", "cf_name=Ada,bob", "cf_nameIn=Ada,%20bob%20,", "cf_n=1", "cf_n=x", "cf_nGt=0&cf_nLte=1",
		"cf_nGte=1e309", "cf_nLt=NaN", "cf_b=true", "cf_b=yes", "cf_s=5", "cf_s=red,5", "cf_dGte=2024-01-01", "cf_dLt=not-a-date",
		"cf_dtGt=2024-01-02T03:04:05Z", "cf_nameGt=A", "cf_tags=a", "cf_tagsIn=a,b", "cf_unknown=1", "cf_=1", "cf_name=%00",
		"cf_name=%ff", "cf_name=%25_", "id=x", "id=%00", "id=" + strings.Repeat("a,", 101), "format=csv", "format=JSON&all=true",
		"format=markdown&exportScope=full", "format=xml&full=true&cf_n=1", "format=pdf", "format=%00", "entityId=other.ent",
		"entityId=Bad!", "entityId=", "pageSize=1&page=3&sortField=name", "cf_name=" + strings.Repeat("x", 2000),
		"cf_nameIn=" + strings.Repeat("v,", 500), "q=x&cursor=%ff&labelField=name&pageSize=1", "cursor=cjp4&pageSize=-1",
		"labelField=a%20b", "entityIds=a,b&fieldset=x", "%zz=1&cf_n=%zz", "cf_name=Ada&cf_name=bob",
	} {
		f.Add(s)
	}
	var fxs []*fuzzRecordsFixture
	for _, fe := range fuzzEnvs(f) {
		fxs = append(fxs, newFuzzRecordsFixture(f, fe))
	}
	f.Fuzz(func(t *testing.T, query string) {
		for _, fx := range fxs {
			e := fx.with(t)
			full := "entityId=" + fx.eid + "&" + query
			r := e.fuzzGet(recRecords, full, fx.key)
			fx.checkList(t, full, r)
			// The query alone: its own entityId, or none.
			r = e.fuzzGet(recRecords, query, fx.key)
			if r.Status != http.StatusOK && r.Status != http.StatusBadRequest {
				t.Fatalf("%s: GET %s?%s: status %d: %s", fx.engine, recRecords, query, r.Status, r.Body)
			}
			fx.checkOptions(t, full, e.fuzzGet(recOptions, full, fx.key))
			for _, path := range []string{"/api/entities/definitions", "/api/entities/definitions.manage"} {
				if r := e.fuzzGet(path, query, fx.key); r.Status >= 500 || r.Status != http.StatusOK && r.JSON()["error"] == nil {
					t.Fatalf("%s: GET %s?%s: status %d: %s", fx.engine, path, query, r.Status, r.Body)
				}
			}
		}
	})
}

// checkList checks a records list response to the query raw.
func (fx *fuzzRecordsFixture) checkList(t *testing.T, raw string, r *response) {
	t.Helper()
	where := fx.engine + ": GET " + recRecords + "?" + raw
	switch r.Status {
	case http.StatusBadRequest:
		if body := r.JSON(); body["error"] == nil {
			t.Fatalf("%s: 400 without an error: %s", where, r.Body)
		}
		return
	case http.StatusOK:
	default:
		t.Fatalf("%s: status %d: %s", where, r.Status, r.Body)
	}
	q, _ := url.ParseQuery(raw)
	if format := strings.ToLower(q.Get("format")); format != "" {
		if !strings.HasPrefix(r.Header.Get("Content-Disposition"), `attachment; filename="`) {
			t.Fatalf("%s: an export without its file name: %v", where, r.Header)
		}
		switch format {
		case "json":
			if !json.Valid(r.Body) {
				t.Fatalf("%s: JSON export does not parse: %s", where, r.Body)
			}
		case "csv":
			rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
			if err != nil || len(rows) == 0 || rows[0][0] != "Id" {
				t.Fatalf("%s: CSV export (%v): %s", where, err, r.Body)
			}
			for _, row := range rows[1:] {
				if _, ok := fx.live[row[0]]; !ok && row[0] != fx.deleted {
					t.Fatalf("%s: CSV export holds a record not of the fixture: %v", where, row)
				}
			}
		}
		return
	}
	var page struct {
		Items      []map[string]any `json:"items"`
		Total      int              `json:"total"`
		Page       int              `json:"page"`
		PageSize   int              `json:"pageSize"`
		TotalPages int              `json:"totalPages"`
	}
	if err := json.Unmarshal(r.Body, &page); err != nil || page.Items == nil {
		t.Fatalf("%s: not a page (%v): %s", where, err, r.Body)
	}
	if page.Page < 1 || page.PageSize < 1 || page.PageSize > 100 || page.Total < 0 || page.Total > len(fx.live)+1 {
		t.Fatalf("%s: page %d, pageSize %d, total %d (the entity has %d records)", where, page.Page, page.PageSize, page.Total, len(fx.live)+1)
	}
	offset := (page.Page - 1) * page.PageSize
	if want := min(max(page.Total-offset, 0), page.PageSize); len(page.Items) != want {
		t.Fatalf("%s: %d items on page %d of size %d with a total of %d, want %d: %s", where, len(page.Items), page.Page, page.PageSize, page.Total, want, r.Body)
	}
	if want := (page.Total + page.PageSize - 1) / page.PageSize; page.TotalPages != want {
		t.Fatalf("%s: totalPages %d, want %d", where, page.TotalPages, want)
	}
	withDeleted := strings.EqualFold(q.Get("withDeleted"), "true") || q.Get("withDeleted") == "1"
	var ids []string
	if v := q.Get("id"); v != "" {
		for id := range strings.SplitSeq(v, ",") {
			ids = append(ids, strings.ToLower(strings.TrimSpace(id)))
		}
	}
	nameEq, hasNameEq := q.Get("cf_name"), false
	if _, ok := q["cf_name"]; ok && nameEq != "" && !strings.Contains(nameEq, ",") {
		hasNameEq = true
	}
	for _, it := range page.Items {
		id, _ := it["id"].(string)
		if _, ok := fx.live[id]; !ok && (id != fx.deleted || !withDeleted) {
			t.Fatalf("%s: item %v is not a live record of the fixture (withDeleted %v)", where, it, withDeleted)
		}
		if ids != nil && !slices.Contains(ids, id) {
			t.Fatalf("%s: item %s is not one of the ids asked for", where, id)
		}
		if hasNameEq && it["name"] != nameEq {
			t.Fatalf("%s: item %v does not have name %q", where, it, nameEq)
		}
	}
}

// checkOptions checks a relation options response.
func (fx *fuzzRecordsFixture) checkOptions(t *testing.T, raw string, r *response) {
	t.Helper()
	where := fx.engine + ": GET " + recOptions + "?" + raw
	switch r.Status {
	case http.StatusBadRequest:
		if body := r.JSON(); body["error"] == nil {
			t.Fatalf("%s: 400 without an error: %s", where, r.Body)
		}
	case http.StatusOK:
		var body struct {
			Items      []entities.Option `json:"items"`
			NextCursor *string           `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.Items == nil {
			t.Fatalf("%s: not an options page (%v): %s", where, err, r.Body)
		}
		for _, o := range body.Items {
			if _, ok := fx.live[o.Value]; !ok {
				t.Fatalf("%s: option %+v is not a live record of the fixture", where, o)
			}
		}
	default:
		t.Fatalf("%s: status %d: %s", where, r.Status, r.Body)
	}
}
