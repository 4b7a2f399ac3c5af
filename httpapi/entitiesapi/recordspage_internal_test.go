package entitiesapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/internal/jsondec"
	"github.com/tenantkit/tenantkit/internal/testing/jsongen"
)

// encodedPage is the records list's answer as it was written before
// recordsPage: the rows as recordRow maps, the page (a SearchPage, capped
// or not) through apikit.Encode's Encoder.
func encodedPage(t testing.TB, items []*entities.Record, total int, capped bool, p apikit.PageParams) string {
	t.Helper()
	rows := make([]recordItem, len(items))
	for i, rec := range items {
		rows[i] = recordRow(rec)
	}
	var buf bytes.Buffer
	page := apikit.SearchPage[recordItem]{PageResponse: apikit.NewPage(rows, total, p), TotalCapped: capped}
	if err := json.NewEncoder(&buf).Encode(page); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// samePage checks that recordsPage writes what the Encoder writes, with
// an exact total and with a capped one, for the records with decoded
// values and for the records with their values as stored (json.Marshal's
// form, as SQLite holds them): then the Encoder writes them decoded from
// that JSON, as the list decoded them before recordsPage took the JSON.
func samePage(t testing.TB, items []*entities.Record, total int, p apikit.PageParams) {
	t.Helper()
	decoded := make([]entities.ListedRecord, len(items))
	stored := make([]entities.ListedRecord, len(items))
	want := make([]*entities.Record, len(items))
	for i, rec := range items {
		decoded[i].Record = *rec
		data, err := json.Marshal(rec.Values)
		if err != nil {
			t.Fatal(err)
		}
		if want[i], stored[i] = storedRecord(t, rec, string(data)); want[i] == nil {
			t.Fatalf("%s does not decode", data)
		}
	}
	if items == nil {
		decoded, stored, want = nil, nil, nil
	}
	samePageAs(t, items, decoded, total, p)
	samePageAs(t, want, stored, total, p)
}

// storedRecord returns rec with data as its stored values: as
// ListRecordsJSON lists it, and as ListRecords lists it, decoded (nil when
// data does not decode).
func storedRecord(t testing.TB, rec *entities.Record, data string) (*entities.Record, entities.ListedRecord) {
	t.Helper()
	listed := entities.ListedRecord{Record: *rec, ValuesJSON: data}
	listed.Values = nil
	decoded := *rec
	decoded.Values = nil
	if err := json.Unmarshal([]byte(data), &decoded.Values); err != nil {
		return nil, listed
	}
	return &decoded, listed
}

// samePageAs checks that recordsPage writes items as the Encoder writes
// want.
func samePageAs(t testing.TB, want []*entities.Record, items []entities.ListedRecord, total int, p apikit.PageParams) {
	t.Helper()
	for _, capped := range []bool{false, true} {
		want := encodedPage(t, want, total, capped, p)
		got, err := recordsPage{items: items, total: total, capped: capped, p: p}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(got)+"\n" != want {
			t.Errorf("capped %v:\ngot  %s\nwant %s", capped, got, want)
		}
	}
}

func TestRecordsPageJSON(t *testing.T) {
	created := time.Date(2026, 3, 1, 12, 30, 45, 123456000, time.UTC)
	deleted := created.Add(90 * time.Minute).In(time.FixedZone("x", 3600+1800))
	items := []*entities.Record{
		{ID: "0b7d9c3e-2f4a-4c1e-9d1a-3e5f7a9b1c2d", EntityID: "bench.items", TenantID: "t",
			Values:    map[string]any{"title": "Bench item", "status": "open", "total": 1234.56, "qty": 3.0, "note": "seeded"},
			CreatedAt: created, UpdatedAt: created},
		{ID: `a<b>&"c"\`, Values: map[string]any{"id": "theirs", "createdAt": 1.0, "deletedAt": "kept", "Zed": nil,
			"list": []any{"a", 1e21, 1e-7, -0.0, true, map[string]any{"x": []any{}}}, "é\u2028\xff": "\x01\u2029"},
			CreatedAt: created, UpdatedAt: deleted},
		{ID: "d", Values: map[string]any{"deletedAt": "replaced", "updatedAt": false}, CreatedAt: created, UpdatedAt: created,
			DeletedAt: &deleted, OrganizationID: "o"},
		{ID: "e"},
		{ID: "f", Values: map[string]any{}},
	}
	for _, p := range []apikit.PageParams{{Page: 1, PageSize: 20}, {Page: 3, PageSize: 7}} {
		samePage(t, items, 20000, p)
		samePage(t, items[:1], 1, p)
		samePage(t, nil, 0, p)
		samePage(t, []*entities.Record{}, 41, p)
	}
}

var keyParts = []string{"id", "createdAt", "updatedAt", "deletedAt", "a", "B", "_x", "title", "<", "&", "\"", "\\", "é", "\u2028", "\xff", "\x00", "\n", "9"}

// genKey and genValue make keys and values of keyParts.
func genKey(r *rand.Rand) string { return jsongen.Gen{R: r, Parts: keyParts}.Key() }

func genValue(r *rand.Rand, depth int) any { return jsongen.Gen{R: r, Parts: keyParts}.Value(depth) }

// genRecord makes a record with generated values and times.
func genRecord(r *rand.Rand) *entities.Record {
	at := func() time.Time {
		return time.Unix(r.Int64N(1<<34), r.Int64N(1e9)).In(time.FixedZone("", (r.IntN(48)-24)*1800))
	}
	rec := &entities.Record{ID: genKey(r), CreatedAt: at(), UpdatedAt: at()}
	if r.IntN(3) > 0 {
		rec.Values = map[string]any{}
		for range r.IntN(8) {
			rec.Values[genKey(r)] = genValue(r, 0)
		}
	}
	if r.IntN(3) == 0 {
		d := at()
		rec.DeletedAt = &d
	}
	return rec
}

// recordsPage writes what the Encoder writes on generated pages.
func TestRecordsPageGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		items := make([]*entities.Record, r.IntN(5))
		for i := range items {
			items[i] = genRecord(r)
		}
		samePage(t, items, r.IntN(1000), apikit.PageParams{Page: r.IntN(5) + 1, PageSize: r.IntN(100) + 1})
	}
}

func FuzzRecordsPage(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(7), uint64(0))
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		r := rand.New(rand.NewPCG(s1, s2))
		items := make([]*entities.Record, r.IntN(4))
		for i := range items {
			items[i] = genRecord(r)
		}
		samePage(t, items, r.IntN(1000), apikit.PageParams{Page: r.IntN(5) + 1, PageSize: r.IntN(100) + 1})
	})
}

// FuzzRecordsPageValues compares the two on records whose values are
// fuzzed JSON objects, decoded as the store decodes them, and on the
// same records with the fuzzed JSON as their stored values: written as
// decoding and encoding it writes them, or failing as decoding fails.
func FuzzRecordsPageValues(f *testing.F) {
	f.Add([]byte(`{"title":"Bench item","status":"open","total":1234.56,"qty":3,"note":"seeded"}`))
	f.Add([]byte(`{"qty": 3, "note": "seeded", "title": "Bench item", "total": 1234.56, "status": "open"}`))
	f.Add([]byte(`{"id":1,"createdAt":"x","deletedAt":null,"a<":["\u2028",1e300,-0,{"b":{}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
		p := apikit.PageParams{Page: 1, PageSize: 20}
		for _, rec := range []*entities.Record{{ID: "r", CreatedAt: at, UpdatedAt: at}, {ID: "r", CreatedAt: at, UpdatedAt: at, DeletedAt: &at}} {
			want, listed := storedRecord(t, rec, string(data))
			if want == nil {
				if _, err := (recordsPage{items: []entities.ListedRecord{listed}, total: 1, p: p}).MarshalJSON(); err == nil && len(data) > 0 {
					t.Errorf("%q does not decode, but its page was written", data)
				}
				continue
			}
			samePageAs(t, []*entities.Record{want}, []entities.ListedRecord{listed}, 1, p)
			if values, ok := jsondec.Object(data); ok {
				with := *rec
				with.Values = values
				samePage(t, []*entities.Record{&with}, 1, p)
			}
		}
	})
}
