package entities_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Value counts (sql_counts.go): the totals of lists filtered by one equality
// or In filter on a filterable field come from custom_entity_value_counts,
// kept in every record write's transaction and rebuilt or dropped with the
// field's index. These tests compare three totals that must always agree:
//
//   - ListRecords' total for the filter alone (from the counts when the
//     filter qualifies),
//   - the number of records ListRecords returns for it (All: the records
//     themselves),
//   - ListRecords' total for the same filter given twice (two filters: the
//     same records, counted rather than taken from the counts),
//
// and, where a test keeps one, a model of the live records; and they
// compare the counts table as a whole with the records (cntCheckTable).

// cntCtx is the context of a caller of tenant acting in org (stamping the
// records it creates) that may read the organizations reads (nil: all).
func cntCtx(t *testing.T, tenant, org string, reads []string) context.Context {
	return store.WithScope(t.Context(), store.Scope{TenantID: tenant, OrganizationID: org, OrganizationIDs: reads})
}

// cntFilter is an equality filter (In for several values) on key.
func cntFilter(key string, vals ...string) entities.Filter {
	op := entities.OpEq
	if len(vals) > 1 {
		op = entities.OpIn
	}
	return entities.Filter{Key: key, Op: op, Values: vals}
}

// cntTotals returns ListRecords' total for f alone, the number of records
// it returns for f (All), and its total for f given twice (counted from
// the records, not taken from the counts).
func cntTotals(t *testing.T, svc *entities.Service, ctx context.Context, eid string, f entities.Filter) (total, items, counted int) {
	t.Helper()
	list, total := recList(t, svc, ctx, entities.RecordQuery{EntityID: eid, All: true, Filters: []entities.Filter{f}})
	_, counted = recList(t, svc, ctx, entities.RecordQuery{EntityID: eid, PageSize: 1, Filters: []entities.Filter{f, f}})
	return total, len(list), counted
}

// cntWant fails unless the three totals of f (cntTotals) are want.
func cntWant(t *testing.T, svc *entities.Service, ctx context.Context, eid string, f entities.Filter, want int) {
	t.Helper()
	total, items, counted := cntTotals(t, svc, ctx, eid, f)
	if total != want || items != want || counted != want {
		t.Fatalf("filter %s %s %q: total %d, records %d, counted total %d; want %d", f.Key, f.Op, f.Values, total, items, counted, want)
	}
}

// cntSQLCount counts tenant's live records of eid whose key holds value,
// compared as the JSON text a record's data holds, straight from the
// records table.
func cntSQLCount(t *testing.T, db *store.DB, tenant, eid, key string, value any) int {
	t.Helper()
	b, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	q := `SELECT count(*) FROM custom_entity_records WHERE tenant_id = $1 AND entity_id = $2 AND deleted_at IS NULL AND `
	if db.Dialect().Name() == "postgres" {
		q += `(data -> '` + key + `') = $3::jsonb`
	} else {
		q += `json_extract(data, '$.` + key + `') = json_extract($3, '$')`
	}
	var n int
	if err := db.QueryRow(t.Context(), q, tenant, eid, string(b)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// cntCanonSQLite is a value as SQLite compares it: numbers by exact value
// (an integer and a real are equal only when the real is that integer),
// text as text.
func cntCanonSQLite(x any) string {
	switch v := x.(type) {
	case int64:
		return "n:" + strconv.FormatInt(v, 10)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 9e18 {
			return "n:" + strconv.FormatInt(int64(v), 10)
		}
		return "n:" + strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return "s:" + v
	case []byte:
		return "s:" + string(v)
	}
	return fmt.Sprintf("?%T:%v", x, x)
}

// cntCanonPG is a jsonb value (as its text) as PostgreSQL compares it:
// numbers by exact decimal value.
func cntCanonPG(text string) string {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return "?" + text
	}
	switch v := x.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(v.String())
		if !ok {
			return "?" + text
		}
		return "n:" + r.RatString()
	case string:
		return "s:" + v
	case bool:
		return "b:" + strconv.FormatBool(v)
	}
	return "?" + text
}

// cntGroups runs q (rows of tenant, organization, value, n) and sums n by
// tenant, organization and canonical value, leaving out zero sums.
func cntGroups(t *testing.T, db *store.DB, q string, args ...any) map[string]int64 {
	t.Helper()
	rows, err := db.Query(t.Context(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	pg := db.Dialect().Name() == "postgres"
	for rows.Next() {
		var tenant, org string
		var n int64
		var canon string
		if pg {
			var text string
			if err := rows.Scan(&tenant, &org, &text, &n); err != nil {
				t.Fatal(err)
			}
			canon = cntCanonPG(text)
		} else {
			var v any
			if err := rows.Scan(&tenant, &org, &v, &n); err != nil {
				t.Fatal(err)
			}
			canon = cntCanonSQLite(v)
		}
		out[tenant+"|"+org+"|"+canon] += n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for k, n := range out {
		if n == 0 {
			delete(out, k)
		}
	}
	return out
}

// cntCheckTable compares the counts of eid with its records: the keys
// custom_entity_filterable_fields lists (each with its index) must be
// exactly listed; for each listed key the counts, summed over slots, must
// equal the number of live records holding each counted value (a number,
// a boolean, a text of at most 1500 bytes), by tenant and organization;
// the other keys have no counts.
func cntCheckTable(t *testing.T, db *store.DB, eid string, keys []string, listed map[string]bool) {
	t.Helper()
	got, err := store.Many(t.Context(), db, func(sc store.Scanner) (string, error) {
		var k string
		return k, sc.Scan(&k)
	}, `SELECT field_key FROM custom_entity_filterable_fields WHERE entity_id = $1 ORDER BY field_key`, eid)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range keys {
		if listed[k] {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("filterable keys of %s: %q, want %q", eid, got, want)
	}
	pg := db.Dialect().Name() == "postgres"
	for _, k := range keys {
		if recIndexExists(t, db, recIndexName(db, eid, k)) != listed[k] {
			t.Fatalf("key %s: index exists = %v, want %v", k, !listed[k], listed[k])
		}
		countsQ := `SELECT tenant_id, organization_id, value, n FROM custom_entity_value_counts WHERE entity_id = $1 AND field_key = $2`
		recordsQ := `SELECT tenant_id, COALESCE(organization_id, ''), json_extract(data, '$.` + k + `'), 1 FROM custom_entity_records
			WHERE entity_id = $1 AND deleted_at IS NULL AND (json_type(data, '$.` + k + `') IN ('integer', 'real', 'true', 'false')
			OR json_type(data, '$.` + k + `') = 'text' AND length(CAST(json_extract(data, '$.` + k + `') AS BLOB)) <= 1500)`
		if pg {
			countsQ = `SELECT tenant_id, organization_id, value::text, n FROM custom_entity_value_counts WHERE entity_id = $1 AND field_key = $2`
			recordsQ = `SELECT tenant_id, COALESCE(organization_id, ''), (data -> '` + k + `')::text, 1 FROM custom_entity_records
				WHERE entity_id = $1 AND deleted_at IS NULL AND (jsonb_typeof(data -> '` + k + `') IN ('number', 'boolean')
				OR jsonb_typeof(data -> '` + k + `') = 'string' AND octet_length(data ->> '` + k + `') <= 1500)`
		}
		counts := cntGroups(t, db, countsQ, eid, k)
		if !listed[k] {
			if len(counts) != 0 {
				t.Fatalf("key %s is not filterable but has counts %v", k, counts)
			}
			continue
		}
		records := cntGroups(t, db, recordsQ, eid)
		for g, n := range records {
			if counts[g] != n {
				t.Errorf("key %s, tenant|organization|value %s: counts %d, live records %d", k, g, counts[g], n)
			}
		}
		for g, n := range counts {
			if _, ok := records[g]; !ok {
				t.Errorf("key %s, tenant|organization|value %s: counts %d, live records 0", k, g, n)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

// cntHex is n random bytes as hex text (2n bytes that no engine
// compresses).
func cntHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// --- 1. A model of the records, under random writes and definition changes ---

// cntInput is a value as written and as stored.
type cntInput struct{ in, want any }

// cntField is a field of the model's entity.
type cntField struct {
	key, kind  string
	cfg        map[string]any // without filterable
	filterable bool           // at first
	inputs     []cntInput
	probes     [][]string // filter values
}

func (f *cntField) multi() bool { m, _ := f.cfg["multi"].(bool); return m }

// def is the field's definition input, filterable or not.
func (f *cntField) def(eid string, filterable bool, active *bool) entities.DefinitionInput {
	cfg := map[string]any{"filterable": filterable}
	for k, v := range f.cfg {
		cfg[k] = v
	}
	return entities.DefinitionInput{EntityID: eid, Key: f.key, Kind: f.kind, ConfigJSON: cfg, IsActive: active}
}

// filterValue is a filter's raw value as the service reads it for the
// field (coerceFilter).
func (f *cntField) filterValue(t *testing.T, raw string) any {
	switch f.kind {
	case "integer", "float":
		x, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			t.Fatalf("probe %q of %s", raw, f.key)
		}
		return x
	case "boolean":
		b, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			t.Fatalf("probe %q of %s", raw, f.key)
		}
		return b
	case "date":
		for _, layout := range []string{time.DateOnly, time.RFC3339} {
			if d, err := time.Parse(layout, raw); err == nil {
				return d.Format(time.DateOnly)
			}
		}
		t.Fatalf("probe %q of %s", raw, f.key)
	case "select":
		if !f.multi() && raw == "5" { // the numeric option 5
			return 5.0
		}
	}
	return raw
}

// matches reports whether a stored value matches one of the filter values
// (a list: when it holds one of them). Numbers compare by value (-0 is 0).
func (f *cntField) matches(stored any, vals []any) bool {
	for _, v := range vals {
		if list, ok := stored.([]any); ok {
			if slices.Contains(list, v) {
				return true
			}
		} else if stored == v {
			return true
		}
	}
	return false
}

// cntSeededHex is n pseudo-random bytes as hex text, the same each run.
func cntSeededHex(n int, seed uint64) string {
	r := mrand.New(mrand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b)
}

func cntFields() []*cntField {
	negZero := math.Copysign(0, -1)
	a, b := 0.1, 0.2
	in := func(x any) cntInput { return cntInput{x, x} }
	// Long texts: counted up to 1500 bytes; above, a filter by them counts
	// the records (and PostgreSQL's index leaves them out).
	at1500 := cntSeededHex(750, 1)
	at1501 := at1500 + "z"
	long := cntSeededHex(1500, 2)    // 3000 bytes
	mid := cntSeededHex(600, 3)      // 1200 bytes: counted, but compared with the whole value
	wide := strings.Repeat("é", 751) // 1502 bytes, 751 characters
	return []*cntField{
		{key: "t", kind: "text", filterable: true,
			inputs: []cntInput{in("a"), in("b"), in("5"), {5.0, "5"}, in("é"), in(""), in(" a"), in("A"),
				in(at1500), in(at1501), in(long), in(mid), in(wide)},
			probes: [][]string{{"a"}, {"b"}, {"5"}, {"é"}, {""}, {" a"}, {"A"}, {"zzz"}, {"a", "a"}, {"a", "b", "zzz"}, {"5", "5.0"},
				{at1500}, {at1501}, {long}, {mid}, {wide}, {at1500, at1501}, {"a", long}, {at1500, "a", at1500}, {mid, "b"}}},
		{key: "i", kind: "integer", filterable: true,
			inputs: []cntInput{in(0.0), in(1.0), in(5.0), in(-3.0), {"5", 5.0}, {5, 5.0}, {int64(-3), -3.0},
				{json.Number("1"), 1.0}, {"-0", negZero}, {9007199254740992.0, 9007199254740992.0}},
			probes: [][]string{{"5"}, {"5.0"}, {" 5 "}, {"0"}, {"-0"}, {"-3"}, {"1"}, {"99"}, {"9007199254740992"},
				{"5", "5.0"}, {"0", "1", "99"}, {"5", "5"}}},
		{key: "f", kind: "float", filterable: true,
			inputs: []cntInput{in(0.0), in(negZero), in(0.5), in(5.0), in(a + b), in(1e-7), in(1e21), {"2.5", 2.5}, in(123456.789), in(-1e-300)},
			probes: [][]string{{"0"}, {"-0"}, {"0.0"}, {"0.5"}, {"5"}, {"5.0"}, {"0.30000000000000004"}, {"0.3"}, {"1e-7"},
				{"0.0000001"}, {"1e21"}, {"1000000000000000000000"}, {"2.5"}, {"123456.789"}, {"-1e-300"}, {"99"}, {"0", "-0"}, {"5", "0.5", "5.00"}}},
		{key: "b", kind: "boolean", filterable: true,
			inputs: []cntInput{in(true), in(false), {"true", true}, {"false", false}, {" TRUE ", true}},
			probes: [][]string{{"true"}, {"false"}, {"1"}, {"0"}, {"TRUE"}, {"true", "false"}, {"true", "1"}}},
		{key: "s", kind: "select", cfg: map[string]any{"options": []any{"a", "b", 5.0}}, filterable: true,
			inputs: []cntInput{in("a"), in("b"), in(5.0), {"5", 5.0}},
			probes: [][]string{{"a"}, {"b"}, {"5"}, {"5.0"}, {"c"}, {"a", "5"}, {"a", "a"}}},
		{key: "d", kind: "date", filterable: true,
			inputs: []cntInput{in("2024-01-05"), in("2024-02-29"), {"2024-01-05T23:30:00Z", "2024-01-05"}, {"2024-01-05T01:00:00+05:00", "2024-01-05"}},
			probes: [][]string{{"2024-01-05"}, {"2024-02-29"}, {"2024-01-05T12:00:00Z"}, {"2023-12-31"}, {"2024-01-05", "2024-02-29"}}},
		{key: "n", kind: "text", filterable: false,
			inputs: []cntInput{in("x"), in("y"), {7.0, "7"}},
			probes: [][]string{{"x"}, {"y"}, {"7"}, {"x", "y"}}},
		{key: "m", kind: "select", cfg: map[string]any{"options": []any{"a", "b", "c"}, "multi": true}, filterable: true,
			inputs: []cntInput{{[]any{"a"}, []any{"a"}}, {"b", []any{"b"}}, {[]string{"a", "c"}, []any{"a", "c"}}, {[]any{}, []any{}}},
			probes: [][]string{{"a"}, {"b"}, {"c"}, {"a", "c"}}},
	}
}

type cntCaller struct {
	name string
	sc   store.Scope
	ctx  context.Context
}

func (c *cntCaller) sees(r *cntRec) bool {
	return r.tenant == c.sc.TenantID && c.sc.AllowsOrganization(r.org)
}

type cntRec struct {
	id, tenant, org string
	vals            map[string]any
	deleted         bool
}

// cntDefState is a tenant's definition of a key.
type cntDefState struct{ active, deleted, filterable bool }

func (d *cntDefState) live() bool { return d.active && !d.deleted }

type cntModel struct {
	t       *testing.T
	db      *store.DB
	svc     *entities.Service
	rnd     *mrand.Rand
	eid     string
	fields  []*cntField
	callers []*cntCaller
	admins  map[string]*cntCaller              // tenant → its tenant-wide caller
	defs    map[string]map[string]*cntDefState // tenant → key → definition
	tenants []string
	recs    []*cntRec
	step    int
	ops     []string
}

func (m *cntModel) logf(format string, args ...any) {
	op := fmt.Sprintf(format, args...)
	if len(op) > 600 {
		op = op[:600] + "…"
	}
	m.ops = append(m.ops, fmt.Sprintf("%d: ", m.step)+op)
	if len(m.ops) > 12 {
		m.ops = m.ops[1:]
	}
}

func (m *cntModel) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("step %d: %s\nfilterable keys (model): %v\nlast operations:\n  %s", m.step, fmt.Sprintf(format, args...),
		m.listed(), strings.Join(m.ops, "\n  "))
}

// listed is the keys some tenant's live definition makes filterable.
func (m *cntModel) listed() map[string]bool {
	out := map[string]bool{}
	for _, byKey := range m.defs {
		for k, d := range byKey {
			if d.live() && d.filterable {
				out[k] = true
			}
		}
	}
	return out
}

func (m *cntModel) keys() []string {
	out := make([]string, len(m.fields))
	for i, f := range m.fields {
		out[i] = f.key
	}
	return out
}

func (m *cntModel) pick(n int) int { return m.rnd.IntN(n) }

// values are random values of the fields tenant defines (null clearing
// some for an update), as given and as the model stores them.
func (m *cntModel) values(tenant string, update bool) (map[string]any, map[string]any) {
	in, want := map[string]any{}, map[string]any{}
	for _, f := range m.fields {
		if !m.defs[tenant][f.key].live() {
			continue
		}
		name := f.key
		if m.pick(3) == 0 {
			name = "cf_" + f.key
		}
		switch r := m.pick(10); {
		case update && r < 2:
			in[name], want[f.key] = nil, nil
		case r < 6:
			v := f.inputs[m.pick(len(f.inputs))]
			in[name], want[f.key] = v.in, v.want
		}
	}
	return in, want
}

// cntSameValues compares two records' values, -0 being 0 (PostgreSQL's
// jsonb reads -0 back as 0; SQLite keeps the text -0).
func cntSameValues(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return cntNoNegZero(string(x)) == cntNoNegZero(string(y))
}

func cntNoNegZero(s string) string {
	for _, end := range []string{",", "}"} {
		s = strings.ReplaceAll(s, ":-0"+end, ":0"+end)
	}
	return s
}

// cntDropNulls removes the nulls of a new record's values: a create
// stores no value for them.
func cntDropNulls(values map[string]any) {
	for k, v := range values {
		if v == nil {
			delete(values, k)
		}
	}
}

// create creates a record: mostly by CreateRecord, at times by
// UpdateRecord with an id that is not a UUID (which creates one).
func (m *cntModel) create() {
	c := m.callers[m.pick(len(m.callers))]
	byUpdate := m.pick(8) == 0
	in, want := m.values(c.sc.TenantID, byUpdate)
	var r *entities.Record
	var err error
	if byUpdate {
		m.logf("%s creates by update %v", c.name, in)
		r, err = m.svc.UpdateRecord(c.ctx, entities.RecordInput{EntityID: m.eid, RecordID: "new", Values: in})
	} else {
		m.logf("%s creates %v", c.name, in)
		r, err = m.svc.CreateRecord(c.ctx, entities.RecordInput{EntityID: m.eid, Values: in})
	}
	if err != nil {
		m.fatalf("CreateRecord: %v", err)
	}
	cntDropNulls(want)
	if !cntSameValues(r.Values, want) {
		m.fatalf("CreateRecord stored %v, model %v", r.Values, want)
	}
	m.recs = append(m.recs, &cntRec{id: r.ID, tenant: c.sc.TenantID, org: c.sc.OrganizationID, vals: want})
}

func (m *cntModel) createBatch() {
	c := m.callers[m.pick(len(m.callers))]
	n := 1 + m.pick(8)
	ins := make([]map[string]any, n)
	wants := make([]map[string]any, n)
	for i := range n {
		ins[i], wants[i] = m.values(c.sc.TenantID, false)
		cntDropNulls(wants[i])
	}
	m.logf("%s creates %d records %v", c.name, n, ins)
	ids, err := m.svc.CreateRecords(c.ctx, m.eid, ins)
	if err != nil {
		m.fatalf("CreateRecords: %v", err)
	}
	for i, id := range ids {
		m.recs = append(m.recs, &cntRec{id: id, tenant: c.sc.TenantID, org: c.sc.OrganizationID, vals: wants[i]})
	}
}

// upsert writes a batch as an import does (UpsertRecordsTx, in a
// transaction of its own): new ids and the ids of the tenant's records
// (live or deleted, of any organization: a record of an organization the
// caller may not read fails with ErrOutsideScope and is left alone), an
// id twice at times, an item failing validation at times.
func (m *cntModel) upsert() {
	c := m.callers[m.pick(len(m.callers))]
	tenant := c.sc.TenantID
	var own []*cntRec
	for _, r := range m.recs {
		if r.tenant == tenant {
			own = append(own, r)
		}
	}
	type pending struct {
		id       string
		rec      *cntRec // the tenant's record of the id, or nil
		in, want map[string]any
		bad      bool
	}
	var ps []pending
	var items []entities.RecordUpsert
	for range 1 + m.pick(6) {
		var p pending
		switch r := m.pick(10); {
		case r < 2 && len(ps) > 0:
			q := ps[m.pick(len(ps))] // an id of this batch again
			p.id, p.rec = q.id, q.rec
		case r < 6 && len(own) > 0:
			p.rec = own[m.pick(len(own))]
			p.id = p.rec.id
		default:
			p.id = store.NewID()
		}
		p.in, p.want = m.values(tenant, true)
		if m.pick(8) == 0 {
			p.in["no_such_field"] = 1
			p.bad = true
		}
		ps = append(ps, p)
		items = append(items, entities.RecordUpsert{RecordID: p.id, Values: p.in})
	}
	m.logf("%s upserts %d items %v", c.name, len(items), items)
	var out []entities.UpsertOutcome
	err := m.db.Tx(c.ctx, func(tx *store.Tx) error {
		var err error
		out, err = m.svc.UpsertRecordsTx(c.ctx, tx, m.eid, items)
		return err
	})
	if err != nil {
		m.fatalf("UpsertRecordsTx: %v", err)
	}
	seen := map[string]bool{}
	for i, p := range ps {
		o := out[i]
		switch {
		case p.bad:
			if o.Err == nil {
				m.fatalf("item %d with an unknown field: %+v, want an error", i, o)
			}
			continue
		case !seen[p.id] && p.rec != nil && !c.sc.AllowsOrganization(p.rec.org):
			if !errors.Is(o.Err, entities.ErrOutsideScope) || o.Created || o.Skipped {
				m.fatalf("item %d of another organization (deleted %v): %+v, want ErrOutsideScope", i, p.rec.deleted, o)
			}
			continue
		case seen[p.id] || p.rec != nil && p.rec.deleted:
			if !o.Skipped || o.Created || o.Err != nil {
				m.fatalf("item %d (deleted %v, seen %v): %+v, want skipped", i, p.rec != nil && p.rec.deleted, seen[p.id], o)
			}
		case p.rec != nil:
			if o.Created || o.Skipped || o.Err != nil {
				m.fatalf("item %d: %+v, want updated", i, o)
			}
			for k, v := range p.want {
				if v == nil {
					delete(p.rec.vals, k)
				} else {
					p.rec.vals[k] = v
				}
			}
		default:
			if !o.Created || o.Skipped || o.Err != nil {
				m.fatalf("item %d: %+v, want created", i, o)
			}
			cntDropNulls(p.want)
			m.recs = append(m.recs, &cntRec{id: p.id, tenant: tenant, org: c.sc.OrganizationID, vals: p.want})
		}
		seen[p.id] = true
	}
}

// target picks a record for caller c to change: mostly one it sees, at
// times any (deleted, another tenant's, another organization's).
func (m *cntModel) target(c *cntCaller) *cntRec {
	var visible []*cntRec
	for _, r := range m.recs {
		if !r.deleted && c.sees(r) {
			visible = append(visible, r)
		}
	}
	if len(visible) > 0 && m.pick(5) > 0 {
		return visible[m.pick(len(visible))]
	}
	if len(m.recs) == 0 {
		return nil
	}
	return m.recs[m.pick(len(m.recs))]
}

func (m *cntModel) update() {
	c := m.callers[m.pick(len(m.callers))]
	r := m.target(c)
	if r == nil {
		return
	}
	in, want := m.values(c.sc.TenantID, true)
	m.logf("%s updates %s (%s/%s, deleted %v) with %v", c.name, r.id, r.tenant[:8], r.org, r.deleted, in)
	got, err := m.svc.UpdateRecord(c.ctx, entities.RecordInput{EntityID: m.eid, RecordID: r.id, Values: in})
	if r.deleted || !c.sees(r) {
		if !errors.Is(err, store.ErrNotFound) {
			m.fatalf("UpdateRecord of a record the caller cannot change: %v, want not found", err)
		}
		return
	}
	if err != nil {
		m.fatalf("UpdateRecord: %v", err)
	}
	for k, v := range want {
		if v == nil {
			delete(r.vals, k)
		} else {
			r.vals[k] = v
		}
	}
	if !cntSameValues(got.Values, r.vals) {
		m.fatalf("UpdateRecord left %v, model %v", got.Values, r.vals)
	}
}

func (m *cntModel) delete() {
	c := m.callers[m.pick(len(m.callers))]
	r := m.target(c)
	if r == nil {
		return
	}
	m.logf("%s deletes %s (%s/%s, deleted %v)", c.name, r.id, r.tenant[:8], r.org, r.deleted)
	err := m.svc.DeleteRecord(c.ctx, m.eid, r.id)
	if r.deleted || !c.sees(r) {
		if !errors.Is(err, store.ErrNotFound) {
			m.fatalf("DeleteRecord of a record the caller cannot change: %v, want not found", err)
		}
		return
	}
	if err != nil {
		m.fatalf("DeleteRecord: %v", err)
	}
	r.deleted = true
}

// defTarget picks a tenant (mostly the first) and a field.
func (m *cntModel) defTarget() (string, *cntField, *cntDefState) {
	tenant := m.tenants[0]
	if m.pick(4) == 0 {
		tenant = m.tenants[1]
	}
	f := m.fields[m.pick(len(m.fields))]
	return tenant, f, m.defs[tenant][f.key]
}

// toggle flips a definition's filterable flag (defining it again, active,
// when it is deleted or inactive), by Define or Batch.
func (m *cntModel) toggle() {
	tenant, f, st := m.defTarget()
	next := cntDefState{active: true, filterable: !st.filterable}
	if !st.live() {
		next.filterable = m.pick(2) == 0
	}
	in := f.def(m.eid, next.filterable, nil)
	ctx := m.admins[tenant].ctx
	var err error
	if m.pick(2) == 0 {
		m.logf("tenant %s defines %s filterable %v (was %+v)", tenant[:8], f.key, next.filterable, *st)
		_, err = m.svc.Define(ctx, in)
	} else {
		m.logf("tenant %s batch-defines %s filterable %v (was %+v)", tenant[:8], f.key, next.filterable, *st)
		_, err = m.svc.Batch(ctx, entities.BatchInput{EntityID: m.eid, Definitions: []entities.DefinitionInput{in}})
	}
	if err != nil {
		m.fatalf("defining %s: %v", f.key, err)
	}
	*st = next
}

// deactivate sets a live definition inactive, or an inactive one active.
func (m *cntModel) deactivate() {
	tenant, f, st := m.defTarget()
	if st.deleted {
		return
	}
	ctx := m.admins[tenant].ctx
	var active *bool
	if st.active {
		active = ptr(false)
	}
	m.logf("tenant %s defines %s active %v (was %+v)", tenant[:8], f.key, active == nil, *st)
	if _, err := m.svc.Define(ctx, f.def(m.eid, st.filterable, active)); err != nil {
		m.fatalf("Define %s: %v", f.key, err)
	}
	st.active = active == nil
}

// deleteOrRestore deletes a definition, or restores a deleted one.
func (m *cntModel) deleteOrRestore() {
	tenant, f, st := m.defTarget()
	ctx := m.admins[tenant].ctx
	if st.deleted {
		m.logf("tenant %s restores %s (was %+v)", tenant[:8], f.key, *st)
		if err := m.svc.RestoreDefinition(ctx, m.eid, f.key); err != nil {
			m.fatalf("RestoreDefinition %s: %v", f.key, err)
		}
		st.deleted, st.active = false, true
		return
	}
	m.logf("tenant %s deletes %s (was %+v)", tenant[:8], f.key, *st)
	if _, err := m.svc.DeleteDefinition(ctx, m.eid, f.key); err != nil {
		m.fatalf("DeleteDefinition %s: %v", f.key, err)
	}
	st.deleted = true
}

// expect is the number of live records c sees that filter vals of f
// selects (all of them when c's tenant has no live definition of f: the
// filter is ignored).
func (m *cntModel) expect(c *cntCaller, f *cntField, raw []string) int {
	ignored := !m.defs[c.sc.TenantID][f.key].live()
	vals := make([]any, len(raw))
	for i, r := range raw {
		vals[i] = f.filterValue(m.t, r)
	}
	n := 0
	for _, r := range m.recs {
		if r.deleted || !c.sees(r) {
			continue
		}
		if v, ok := r.vals[f.key]; ignored || ok && f.matches(v, vals) {
			n++
		}
	}
	return n
}

func (m *cntModel) check(c *cntCaller, f *cntField, raw []string) {
	m.t.Helper()
	filter := cntFilter(f.key, raw...)
	if m.pick(3) == 0 {
		filter.Key = "cf_" + f.key
	}
	if m.pick(4) == 0 { // an equality filter of several values acts as In, and In of one as equality
		if filter.Op == entities.OpEq {
			filter.Op = entities.OpIn
		} else {
			filter.Op = entities.OpEq
		}
	}
	want := m.expect(c, f, raw)
	total, items, counted := cntTotals(m.t, m.svc, c.ctx, m.eid, filter)
	if total != want || items != want || counted != want {
		short := make([]string, len(raw))
		for i, r := range raw {
			short[i] = r
			if len(r) > 20 {
				short[i] = fmt.Sprintf("%s… (%d bytes)", r[:12], len(r))
			}
		}
		m.fatalf("%s lists %s %s %q: total %d, records %d, counted total %d; model %d", c.name, filter.Key, filter.Op, short,
			total, items, counted, want)
	}
}

// checkAll checks the caller's unfiltered total (from the live-record
// counts) and its records against the model.
func (m *cntModel) checkAll(c *cntCaller) {
	m.t.Helper()
	want := 0
	for _, r := range m.recs {
		if !r.deleted && c.sees(r) {
			want++
		}
	}
	list, total := recList(m.t, m.svc, c.ctx, entities.RecordQuery{EntityID: m.eid, All: true})
	if total != want || len(list) != want {
		m.fatalf("%s lists everything: total %d, records %d; model %d", c.name, total, len(list), want)
	}
}

// probe checks n random filters, and the unfiltered list, for each of k
// random callers.
func (m *cntModel) probe(k, n int) {
	m.t.Helper()
	for range k {
		c := m.callers[m.pick(len(m.callers))]
		m.checkAll(c)
		for range n {
			f := m.fields[m.pick(len(m.fields))]
			m.check(c, f, f.probes[m.pick(len(f.probes))])
		}
	}
}

func (m *cntModel) run(steps int) {
	m.t.Helper()
	for m.step = 1; m.step <= steps; m.step++ {
		switch x := m.pick(100); {
		case x < 26:
			m.create()
		case x < 32:
			m.createBatch()
		case x < 42:
			m.upsert()
		case x < 62:
			m.update()
		case x < 74:
			m.delete()
		case x < 88:
			m.toggle()
		case x < 93:
			m.deactivate()
		default:
			m.deleteOrRestore()
		}
		if m.step%5 == 0 {
			m.probe(2, 4)
		}
		if m.step%60 == 0 {
			cntCheckTable(m.t, m.db, m.eid, m.keys(), m.listed())
		}
	}
	// Every filter, for every caller.
	for _, c := range m.callers {
		for _, f := range m.fields {
			for _, p := range f.probes {
				m.check(c, f, p)
			}
		}
	}
	cntCheckTable(m.t, m.db, m.eid, m.keys(), m.listed())
}

const cntSeed = 6

func TestValueCountsModel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		start := time.Now()
		a, b := store.NewID(), store.NewID()
		o1, o2, o3 := store.NewID(), store.NewID(), store.NewID()
		m := &cntModel{t: t, db: db, svc: must(entities.New(db, entities.Options{})), rnd: mrand.New(mrand.NewPCG(cntSeed, 2024)), eid: recEntityID(),
			fields: cntFields(), tenants: []string{a, b}, admins: map[string]*cntCaller{},
			defs: map[string]map[string]*cntDefState{}}
		for _, c := range []struct {
			name        string
			tenant, org string
			reads       []string
		}{
			{"A org1 reading org1", a, o1, []string{o1}},
			{"A org2 reading org2", a, o2, []string{o2}},
			{"A org1 reading org1+org2", a, o1, []string{o1, o2}},
			{"A org3 reading all", a, o3, nil},
			{"A tenant-wide", a, "", nil},
			{"A without organization reading none", a, "", []string{}},
			{"B tenant-wide", b, "", nil},
			{"B org1 reading org1", b, o1, []string{o1}}, // the same organization id as A's
		} {
			cc := &cntCaller{name: c.name, sc: store.Scope{TenantID: c.tenant, OrganizationID: c.org, OrganizationIDs: c.reads}}
			cc.ctx = store.WithScope(t.Context(), cc.sc)
			m.callers = append(m.callers, cc)
			if c.org == "" && c.reads == nil {
				m.admins[c.tenant] = cc
			}
		}
		for _, tenant := range m.tenants {
			m.defs[tenant] = map[string]*cntDefState{}
			var defs []entities.DefinitionInput
			for _, f := range m.fields {
				defs = append(defs, f.def(m.eid, f.filterable, nil))
				m.defs[tenant][f.key] = &cntDefState{active: true, filterable: f.filterable}
			}
			recDefineAll(t, m.svc, m.admins[tenant].ctx, m.eid, defs...)
		}
		m.run(300)
		live := 0
		for _, r := range m.recs {
			if !r.deleted {
				live++
			}
		}
		t.Logf("%d records (%d live) in %v", len(m.recs), live, time.Since(start).Round(time.Millisecond))
	}, entities.Migrations)
}

// --- 2. The totals come from the counts ---

// cntBump adds n to the count of (tenant, key, value, org) of eid, in a
// slot of its own (the service uses slots 0 to 7).
func cntBump(t *testing.T, db *store.DB, tenant, eid, key string, value any, org string, n int) {
	t.Helper()
	b, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	v := `json_extract($4, '$')`
	if db.Dialect().Name() == "postgres" {
		v = `$4::jsonb`
	}
	if _, err := db.Exec(t.Context(), `INSERT INTO custom_entity_value_counts (tenant_id, entity_id, field_key, value, organization_id, slot, n)
		VALUES ($1, $2, $3, `+v+`, $5, 99, $6)`, tenant, eid, key, string(b), org, n); err != nil {
		t.Fatal(err)
	}
}

func TestValueCountsAreUsed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		_, sc := storetest.NewScope(t)
		o1, o2 := sc.OrganizationID, store.NewID()
		tenant := cntCtx(t, sc.TenantID, "", nil)
		in1 := cntCtx(t, sc.TenantID, o1, []string{o1})
		in2 := cntCtx(t, sc.TenantID, o2, []string{o2})
		eid := recEntityID()
		k := recDef(eid, "k", "text", map[string]any{"filterable": true})
		recDefineAll(t, svc, tenant, eid, k, recDef(eid, "q", "integer", map[string]any{"filterable": true}),
			recDef(eid, "plain", "text", nil))
		recCreate(t, svc, tenant, eid, map[string]any{"k": "x", "q": 1, "plain": "p"})
		recCreate(t, svc, in1, eid, map[string]any{"k": "x", "q": 1, "plain": "p"})
		recCreate(t, svc, in2, eid, map[string]any{"k": "x", "q": 2, "plain": "p"})
		recCreate(t, svc, tenant, eid, map[string]any{"k": "y", "q": 2, "plain": "p"})
		recCreate(t, svc, in1, eid, map[string]any{"k": "y", "q": 2, "plain": "p"})
		cntCheckTable(t, db, eid, []string{"k", "q", "plain"}, map[string]bool{"k": true, "q": true})

		total := func(ctx context.Context, q entities.RecordQuery) int {
			t.Helper()
			q.EntityID = eid
			_, n := recList(t, svc, ctx, q)
			return n
		}
		eqX := cntFilter("k", "x")
		// tampered: the counts say 1000 more records of o2 hold x.
		tampered := func(what string) {
			t.Helper()
			for _, c := range []struct {
				name string
				ctx  context.Context
				q    entities.RecordQuery
				want int
			}{
				// One equality or In filter: the counts' total.
				{"k = x", tenant, entities.RecordQuery{Filters: []entities.Filter{eqX}}, 1003},
				{"cf_k = x", tenant, entities.RecordQuery{Filters: []entities.Filter{{Key: "cf_k", Op: entities.OpEq, Values: []string{"x"}}}}, 1003},
				{"k in (x)", tenant, entities.RecordQuery{Filters: []entities.Filter{{Key: "k", Op: entities.OpIn, Values: []string{"x"}}}}, 1003},
				{"k in (x, x)", tenant, entities.RecordQuery{Filters: []entities.Filter{cntFilter("k", "x", "x")}}, 1003},
				{"k in (x, y)", tenant, entities.RecordQuery{Filters: []entities.Filter{cntFilter("k", "x", "y")}}, 1005},
				{"k = x, page 2 of 1", tenant, entities.RecordQuery{Page: 2, PageSize: 1, Filters: []entities.Filter{eqX}}, 1003},
				{"k = x, all", tenant, entities.RecordQuery{All: true, Filters: []entities.Filter{eqX}}, 1003},
				{"k = x, sorted by q", tenant, entities.RecordQuery{SortField: "q", SortDir: "desc", Filters: []entities.Filter{eqX}}, 1003},
				{"k = x and an ignored filter on an unknown key", tenant, entities.RecordQuery{Filters: []entities.Filter{eqX,
					{Key: "nope", Op: entities.OpEq, Values: []string{"1"}}}}, 1003},
				{"k = x and a filter without values", tenant, entities.RecordQuery{Filters: []entities.Filter{{Key: "q", Op: entities.OpIn}, eqX}}, 1003},
				{"k = x for org2", in2, entities.RecordQuery{Filters: []entities.Filter{eqX}}, 1002},
				{"k = x for org1 (not org2's counts)", in1, entities.RecordQuery{Filters: []entities.Filter{eqX}}, 2},
				{"k = y", tenant, entities.RecordQuery{Filters: []entities.Filter{cntFilter("k", "y")}}, 2},
				{"q = 1 (another key)", tenant, entities.RecordQuery{Filters: []entities.Filter{cntFilter("q", "1")}}, 2},
				// Anything else: the records, counted.
				{"k = x twice", tenant, entities.RecordQuery{Filters: []entities.Filter{eqX, eqX}}, 3},
				{"k = x and q = 1", tenant, entities.RecordQuery{Filters: []entities.Filter{eqX, cntFilter("q", "1")}}, 2},
				{"k = x and q >= 0", tenant, entities.RecordQuery{Filters: []entities.Filter{eqX, {Key: "q", Op: entities.OpGte, Values: []string{"0"}}}}, 3},
				{"k = x with search", tenant, entities.RecordQuery{Search: "x", Filters: []entities.Filter{eqX}}, 3},
				{"k = x with deleted", tenant, entities.RecordQuery{WithDeleted: true, Filters: []entities.Filter{eqX}}, 3},
				{"k = x for org2, with search", in2, entities.RecordQuery{Search: "p", Filters: []entities.Filter{eqX}}, 2},
				{"no filter", tenant, entities.RecordQuery{}, 5},
				{"plain = p (not filterable)", tenant, entities.RecordQuery{Filters: []entities.Filter{cntFilter("plain", "p")}}, 5},
			} {
				if got := total(c.ctx, c.q); got != c.want {
					t.Fatalf("%s: %s: total %d, want %d", what, c.name, got, c.want)
				}
			}
			list, _ := recList(t, svc, tenant, entities.RecordQuery{EntityID: eid, All: true, Filters: []entities.Filter{eqX}})
			if len(list) != 3 {
				t.Fatalf("%s: k = x gives %d records, want 3", what, len(list))
			}
		}
		restored := func(what string) {
			t.Helper()
			cntWant(t, svc, tenant, eid, eqX, 3)
			cntWant(t, svc, in2, eid, eqX, 2)
			cntWant(t, svc, in1, eid, eqX, 2)
			cntWant(t, svc, tenant, eid, cntFilter("k", "x", "y"), 5)
			cntCheckTable(t, db, eid, []string{"k", "q", "plain"}, map[string]bool{"k": true, "q": true})
		}

		cntBump(t, db, sc.TenantID, eid, "k", "x", o2, 1000)
		tampered("bumped")
		// Not filterable any more: the counts go, the records are counted.
		k.ConfigJSON = map[string]any{"filterable": false}
		define(t, svc, tenant, k)
		cntCheckTable(t, db, eid, []string{"k", "q", "plain"}, map[string]bool{"q": true})
		cntWant(t, svc, tenant, eid, eqX, 3)
		// Filterable again: rebuilt from the records.
		k.ConfigJSON = map[string]any{"filterable": true}
		define(t, svc, tenant, k)
		restored("filterable again")

		// Deleting and restoring the definition rebuilds them too; so do
		// deactivating and activating it, and a batch.
		cntBump(t, db, sc.TenantID, eid, "k", "x", o2, 1000)
		tampered("bumped again")
		if _, err := svc.DeleteDefinition(tenant, eid, "k"); err != nil {
			t.Fatal(err)
		}
		cntWant(t, svc, tenant, eid, eqX, 5) // the filter on a deleted key is ignored
		if err := svc.RestoreDefinition(tenant, eid, "k"); err != nil {
			t.Fatal(err)
		}
		restored("restored")

		cntBump(t, db, sc.TenantID, eid, "k", "x", o2, 1000)
		tampered("bumped a third time")
		define(t, svc, tenant, entities.DefinitionInput{EntityID: eid, Key: "k", Kind: "text",
			ConfigJSON: map[string]any{"filterable": true}, IsActive: ptr(false)})
		cntCheckTable(t, db, eid, []string{"k", "q", "plain"}, map[string]bool{"q": true})
		define(t, svc, tenant, k)
		restored("activated")

		cntBump(t, db, sc.TenantID, eid, "k", "x", o2, 1000)
		tampered("bumped a fourth time")
		k.ConfigJSON = map[string]any{"filterable": false}
		recDefineAll(t, svc, tenant, eid, k)
		k.ConfigJSON = map[string]any{"filterable": true}
		recDefineAll(t, svc, tenant, eid, k)
		restored("batch")

		// A definition that stays filterable keeps the counts as they are
		// (no rebuild for a label change).
		cntBump(t, db, sc.TenantID, eid, "k", "x", o2, 1000)
		k.ConfigJSON = map[string]any{"filterable": true, "label": "Kay"}
		define(t, svc, tenant, k)
		tampered("relabelled")
	}, entities.Migrations)
}

// --- 3. Concurrent writes ---

// cntRun runs fn(g) in n goroutines and waits for them.
func cntRun(n int, fn func(g int)) {
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() { fn(g) })
	}
	wg.Wait()
}

// cntErrs collects the unexpected errors of goroutines.
type cntErrs struct {
	mu   sync.Mutex
	errs []string
}

func (e *cntErrs) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

func (e *cntErrs) check(t *testing.T) {
	t.Helper()
	if len(e.errs) > 0 {
		t.Fatalf("%d unexpected errors, first: %s", len(e.errs), strings.Join(e.errs[:min(len(e.errs), 5)], "\n"))
	}
}

func TestValueCountsConcurrentWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		_, sc := storetest.NewScope(t)
		o1, o2 := sc.OrganizationID, store.NewID()
		tenant := cntCtx(t, sc.TenantID, "", nil)
		writers := []context.Context{tenant, cntCtx(t, sc.TenantID, o1, nil), cntCtx(t, sc.TenantID, o2, nil)}
		in1 := cntCtx(t, sc.TenantID, o1, []string{o1})
		eid := recEntityID()
		recDefineAll(t, svc, tenant, eid, recDef(eid, "k", "text", map[string]any{"filterable": true}),
			recDef(eid, "q", "integer", map[string]any{"filterable": true}))
		var mu sync.Mutex
		var ids []string
		for i := range 4 {
			ids = append(ids, recCreate(t, svc, writers[i%3], eid, map[string]any{"k": "x", "q": 1}).ID)
		}
		some := func(rnd *mrand.Rand) string {
			mu.Lock()
			defer mu.Unlock()
			if rnd.IntN(3) > 0 {
				return ids[rnd.IntN(4)] // mostly the same four records
			}
			return ids[rnd.IntN(len(ids))]
		}
		var errs cntErrs
		start := time.Now()
		cntRun(20, func(g int) {
			rnd := mrand.New(mrand.NewPCG(uint64(g), 7))
			for range 15 {
				ctx := writers[rnd.IntN(3)]
				switch r := rnd.IntN(20); {
				case r < 2:
					if err := svc.DeleteRecord(ctx, eid, some(rnd)); err != nil && !errors.Is(err, store.ErrNotFound) {
						errs.add("DeleteRecord: %v", err)
					}
				case r < 7:
					r, err := svc.CreateRecord(ctx, entities.RecordInput{EntityID: eid, Values: map[string]any{"k": "x", "q": 1}})
					if err != nil {
						errs.add("CreateRecord: %v", err)
						continue
					}
					mu.Lock()
					ids = append(ids, r.ID)
					mu.Unlock()
				case r < 8:
					if _, err := svc.CreateRecords(ctx, eid, []map[string]any{{"k": "x"}, {"k": "y", "q": 2}, {"k": "x", "q": 1}}); err != nil {
						errs.add("CreateRecords: %v", err)
					}
				default:
					vals := map[string]any{"k": []any{"x", "y", nil}[rnd.IntN(3)]}
					if rnd.IntN(2) == 0 {
						vals["q"] = []any{1, 2, nil}[rnd.IntN(3)]
					}
					if _, err := svc.UpdateRecord(tenant, entities.RecordInput{EntityID: eid, RecordID: some(rnd), Values: vals}); err != nil &&
						!errors.Is(err, store.ErrNotFound) {
						errs.add("UpdateRecord: %v", err)
					}
				}
			}
		})
		errs.check(t)
		t.Logf("300 concurrent writes in %v", time.Since(start).Round(time.Millisecond))
		for _, c := range []struct {
			key   string
			value any
			raw   string
		}{{"k", "x", "x"}, {"k", "y", "y"}, {"q", 1, "1"}, {"q", 2, "2"}} {
			want := cntSQLCount(t, db, sc.TenantID, eid, c.key, c.value)
			if want == 0 {
				t.Fatalf("no record holds %s = %v: the test is too weak", c.key, c.value)
			}
			cntWant(t, svc, tenant, eid, cntFilter(c.key, c.raw), want)
			// For org1: its own and the tenant's records.
			total, items, counted := cntTotals(t, svc, in1, eid, cntFilter(c.key, c.raw))
			if total != items || total != counted {
				t.Fatalf("org1, %s = %s: total %d, records %d, counted total %d", c.key, c.raw, total, items, counted)
			}
		}
		cntWant(t, svc, tenant, eid, cntFilter("k", "x", "y", "x"), cntSQLCount(t, db, sc.TenantID, eid, "k", "x")+cntSQLCount(t, db, sc.TenantID, eid, "k", "y"))
		cntCheckTable(t, db, eid, []string{"k", "q"}, map[string]bool{"k": true, "q": true})
	}, entities.Migrations)
}

// A key becoming filterable (or not) while records are written: no write
// is lost from the counts, or counted twice.
func TestValueCountsConcurrentFilterable(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		_, sc := storetest.NewScope(t)
		tenant := cntCtx(t, sc.TenantID, "", nil)
		org := cntCtx(t, sc.TenantID, sc.OrganizationID, nil)
		start := time.Now()
		for round := range 3 {
			eid := recEntityID()
			late := recDef(eid, "late", "text", map[string]any{"filterable": false})
			recDefineAll(t, svc, tenant, eid, late, recDef(eid, "other", "text", map[string]any{"filterable": true}))
			recCreate(t, svc, tenant, eid, map[string]any{"late": "v"})
			var errs cntErrs
			var mu sync.Mutex
			var ids []string
			done := make(chan struct{})
			var during atomic.Int64 // writes started while the definition changes
			go func() {
				defer close(done)
				// on, off, on, off by deleting, on by restoring, off by
				// deactivating, on, off, on.
				steps := []func() error{
					func() error { late.ConfigJSON["filterable"] = true; _, err := svc.Define(tenant, late); return err },
					func() error { late.ConfigJSON["filterable"] = false; _, err := svc.Define(tenant, late); return err },
					func() error {
						late.ConfigJSON["filterable"] = true
						_, err := svc.Batch(tenant, entities.BatchInput{EntityID: eid, Definitions: []entities.DefinitionInput{late}})
						return err
					},
					func() error { _, err := svc.DeleteDefinition(tenant, eid, "late"); return err },
					func() error { return svc.RestoreDefinition(tenant, eid, "late") },
					func() error {
						in := late
						in.IsActive = ptr(false)
						_, err := svc.Define(tenant, in)
						return err
					},
					func() error { _, err := svc.Define(tenant, late); return err },
					func() error { late.ConfigJSON["filterable"] = false; _, err := svc.Define(tenant, late); return err },
					func() error { late.ConfigJSON["filterable"] = true; _, err := svc.Define(tenant, late); return err },
				}
				for i, step := range steps {
					time.Sleep(time.Duration(2+i%3) * time.Millisecond)
					if err := step(); err != nil {
						errs.add("definition step %d: %v", i, err)
					}
				}
			}()
			cntRun(10, func(g int) {
				rnd := mrand.New(mrand.NewPCG(uint64(g), uint64(round)))
				for i := 0; ; i++ {
					select {
					case <-done:
						if i >= 10 {
							return
						}
					default:
						during.Add(1)
					}
					ctx := []context.Context{tenant, org}[rnd.IntN(2)]
					var err error
					switch rnd.IntN(6) {
					case 0:
						_, err = svc.CreateRecords(ctx, eid, []map[string]any{{"late": "v"}, {"late": "w", "other": "o"}})
					case 1, 2:
						mu.Lock()
						id := ""
						if len(ids) > 0 {
							id = ids[rnd.IntN(len(ids))]
						}
						mu.Unlock()
						if id != "" {
							_, err = svc.UpdateRecord(ctx, entities.RecordInput{EntityID: eid, RecordID: id,
								Values: map[string]any{"late": []any{"v", "w", nil}[rnd.IntN(3)]}})
							if errors.Is(err, store.ErrNotFound) {
								err = nil
							}
						}
					case 3:
						mu.Lock()
						id := ""
						if len(ids) > 0 {
							id = ids[rnd.IntN(len(ids))]
						}
						mu.Unlock()
						if id != "" && rnd.IntN(3) == 0 {
							if err = svc.DeleteRecord(ctx, eid, id); errors.Is(err, store.ErrNotFound) {
								err = nil
							}
						}
					default:
						var r *entities.Record
						if r, err = svc.CreateRecord(ctx, entities.RecordInput{EntityID: eid, Values: map[string]any{"late": "v"}}); err == nil {
							mu.Lock()
							ids = append(ids, r.ID)
							mu.Unlock()
						}
					}
					if err != nil {
						// While "late" is deleted or inactive it is unknown:
						// writes of it are refused, and that is all.
						var ve *store.ValidationError
						unknown := errors.As(err, &ve) && len(ve.Fields) > 0
						if unknown {
							for f, msg := range ve.Fields {
								unknown = unknown && strings.HasSuffix(f, "cf_late") && msg == "Unknown custom field"
							}
						}
						if !unknown {
							errs.add("write: %v", err)
						}
					}
				}
			})
			errs.check(t)
			if during.Load() < 20 {
				t.Fatalf("round %d: only %d writes while the definition changed", round, during.Load())
			}
			t.Logf("round %d: %d writes while the definition changed", round, during.Load())
			for _, v := range []string{"v", "w"} {
				want := cntSQLCount(t, db, sc.TenantID, eid, "late", v)
				if want == 0 {
					t.Fatalf("round %d: no record holds late = %s", round, v)
				}
				cntWant(t, svc, tenant, eid, cntFilter("late", v), want)
			}
			cntCheckTable(t, db, eid, []string{"late", "other"}, map[string]bool{"late": true, "other": true})
		}
		t.Logf("3 rounds in %v", time.Since(start).Round(time.Millisecond))
	}, entities.Migrations)
}

// --- 4. Long values ---

// Texts longer than 1500 bytes are not counted (the counts' key could not
// hold them on PostgreSQL) and PostgreSQL's index leaves values whose
// jsonb text is longer than 1500 bytes out: writes of them succeed on both
// engines, filters by them count the records, and a field whose records
// hold them can be made filterable.
func TestValueCountsLongValues(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		ctx, sc := storetest.NewScope(t)
		eid := recEntityID()
		keys := []string{"big", "plain", "tags"}
		plain := recDef(eid, "plain", "text", nil)
		recDefineAll(t, svc, ctx, eid, recDef(eid, "big", "text", map[string]any{"filterable": true}), plain,
			recDef(eid, "tags", "select", map[string]any{"filterable": true, "multi": true, "options": []any{"a", "b"}}))
		long := cntHex(1500)  // 3000 bytes, beyond a PostgreSQL index entry
		huge := cntHex(10000) // 20000 bytes
		at1500 := cntHex(750)
		at1501 := at1500 + "x"
		wide := strings.Repeat("é", 751) // 1502 bytes, 751 characters
		mid := cntHex(600)               // 1200 bytes

		r := recCreate(t, svc, ctx, eid, map[string]any{"big": long, "plain": long})
		recCreate(t, svc, ctx, eid, map[string]any{"cf_big": huge})
		ids, err := svc.CreateRecords(ctx, eid, []map[string]any{{"big": long}, {"big": at1500}, {"big": at1501}, {"big": wide},
			{"big": mid}, {"big": "a", "plain": long}, {"big": at1500, "tags": slices.Repeat([]any{"a"}, 1000)}})
		if err != nil {
			t.Fatalf("CreateRecords of long values: %v", err)
		}
		short := recCreate(t, svc, ctx, eid, map[string]any{"big": "a"})
		if _, err := svc.UpdateRecord(ctx, entities.RecordInput{EntityID: eid, RecordID: short.ID, Values: map[string]any{"big": long}}); err != nil {
			t.Fatalf("UpdateRecord to a long value: %v", err)
		}
		if _, err := svc.CreateRecord(ctx, entities.RecordInput{EntityID: eid, Values: map[string]any{"tags": slices.Repeat([]any{"b", "a"}, 1000)}}); err != nil {
			t.Fatalf("a long list: %v", err)
		}
		cntCheckTable(t, db, eid, keys, map[string]bool{"big": true, "tags": true})
		for _, c := range []struct {
			vals []string
			want int
		}{
			{[]string{long}, 3},
			{[]string{huge}, 1},
			{[]string{at1500}, 2},
			{[]string{at1501}, 1},
			{[]string{wide}, 1},
			{[]string{mid}, 1},
			{[]string{"a"}, 1},
			{[]string{at1500, at1501}, 3},
			{[]string{at1500, "a", at1500}, 3},
			{[]string{long, "a"}, 4},
			{[]string{long, huge, at1500, at1501, wide, mid, "a"}, 10},
			{[]string{long + "y"}, 0},
			{[]string{at1500 + "yy"}, 0},
		} {
			cntWant(t, svc, ctx, eid, cntFilter("big", c.vals...), c.want)
		}
		cntWant(t, svc, ctx, eid, cntFilter("tags", "a"), 2)
		cntWant(t, svc, ctx, eid, cntFilter("plain", long), 2)
		// Sorting by the field lists every record on both engines (on
		// PostgreSQL long values sort as if empty).
		for _, dir := range []string{"asc", "desc"} {
			list, total := recList(t, svc, ctx, entities.RecordQuery{EntityID: eid, All: true, SortField: "big", SortDir: dir})
			if len(list) != 11 || total != 11 {
				t.Fatalf("sorted %s: %d records, total %d, want 11", dir, len(list), total)
			}
		}

		// Made filterable while records hold long values: fine, counted as
		// the writes count.
		plain.ConfigJSON = map[string]any{"filterable": true}
		define(t, svc, ctx, plain)
		cntCheckTable(t, db, eid, keys, map[string]bool{"big": true, "plain": true, "tags": true})
		cntWant(t, svc, ctx, eid, cntFilter("plain", long), 2)
		cntWant(t, svc, ctx, eid, cntFilter("plain", long, "nothing"), 2)

		// Long values changed to short ones, short to long, and deleted.
		for _, c := range []struct {
			id   string
			vals map[string]any
		}{
			{r.ID, map[string]any{"big": at1500, "plain": "p"}},
			{ids[1], map[string]any{"big": long}},
			{ids[2], map[string]any{"big": nil}},
			{short.ID, map[string]any{"plain": at1501}},
		} {
			if _, err := svc.UpdateRecord(ctx, entities.RecordInput{EntityID: eid, RecordID: c.id, Values: c.vals}); err != nil {
				t.Fatal(err)
			}
		}
		if err := svc.DeleteRecord(ctx, eid, ids[3]); err != nil { // wide
			t.Fatal(err)
		}
		if err := svc.DeleteRecord(ctx, eid, ids[6]); err != nil { // at1500 with the long list
			t.Fatal(err)
		}
		cntCheckTable(t, db, eid, keys, map[string]bool{"big": true, "plain": true, "tags": true})
		cntWant(t, svc, ctx, eid, cntFilter("big", long), 3)
		cntWant(t, svc, ctx, eid, cntFilter("big", at1500), 1)
		cntWant(t, svc, ctx, eid, cntFilter("big", at1501), 0)
		cntWant(t, svc, ctx, eid, cntFilter("big", wide), 0)
		cntWant(t, svc, ctx, eid, cntFilter("plain", at1501), 1)
		cntWant(t, svc, ctx, eid, cntFilter("plain", "p"), 1)
		if n := cntSQLCount(t, db, sc.TenantID, eid, "big", long); n != 3 {
			t.Fatalf("SQL count of big = long: %d, want 3", n)
		}
	}, entities.Migrations)
}

// --- 5. Tenants ---

func TestValueCountsTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		a, b := store.NewID(), store.NewID()
		org := store.NewID() // both tenants have an organization of this id
		aT, aO := cntCtx(t, a, "", nil), cntCtx(t, a, org, []string{org})
		bT, bO := cntCtx(t, b, "", nil), cntCtx(t, b, org, []string{org})
		eid := recEntityID()
		keys := []string{"k", "q"}
		k := recDef(eid, "k", "text", map[string]any{"filterable": true})
		kB := k
		kB.ConfigJSON = map[string]any{"filterable": true}
		for _, ctx := range []context.Context{aT, bT} {
			recDefineAll(t, svc, ctx, eid, k, recDef(eid, "q", "integer", map[string]any{"filterable": true}))
		}
		recCreate(t, svc, aT, eid, map[string]any{"k": "x", "q": 1})
		recCreate(t, svc, aO, eid, map[string]any{"k": "x", "q": 1})
		recCreate(t, svc, aO, eid, map[string]any{"k": "x", "q": 2})
		aTotals := func(what string) {
			t.Helper()
			for _, ctx := range []context.Context{aT, aO} {
				cntWant(t, svc, ctx, eid, cntFilter("k", "x"), 3)
				cntWant(t, svc, ctx, eid, cntFilter("k", "y"), 0)
				cntWant(t, svc, ctx, eid, cntFilter("k", "x", "y"), 3)
				cntWant(t, svc, ctx, eid, cntFilter("q", "1"), 2)
			}
		}
		aTotals("before B writes")

		// B's writes, of the same values and the same organization id.
		ids, err := svc.CreateRecords(bO, eid, []map[string]any{{"k": "x", "q": 1}, {"k": "x", "q": 1}, {"k": "x"}, {"k": "y"}, {"k": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		recCreate(t, svc, bT, eid, map[string]any{"k": "x", "q": 1})
		if _, err := svc.UpdateRecord(bT, entities.RecordInput{EntityID: eid, RecordID: ids[0], Values: map[string]any{"k": "y", "q": nil}}); err != nil {
			t.Fatal(err)
		}
		if err := svc.DeleteRecord(bO, eid, ids[1]); err != nil {
			t.Fatal(err)
		}
		aTotals("after B writes")
		bTotals := func() {
			t.Helper()
			for _, ctx := range []context.Context{bT, bO} {
				cntWant(t, svc, ctx, eid, cntFilter("k", "x"), 3)
				cntWant(t, svc, ctx, eid, cntFilter("k", "y"), 2)
				cntWant(t, svc, ctx, eid, cntFilter("q", "1"), 1)
			}
		}
		bTotals()
		cntCheckTable(t, db, eid, keys, map[string]bool{"k": true, "q": true})

		// A's records are not B's to change.
		aRecs, _ := recList(t, svc, aT, entities.RecordQuery{EntityID: eid, All: true})
		for _, r := range aRecs {
			if _, err := svc.UpdateRecord(bT, entities.RecordInput{EntityID: eid, RecordID: r.ID, Values: map[string]any{"k": "y"}}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("B updating A's record: %v", err)
			}
			if err := svc.DeleteRecord(bO, eid, r.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("B deleting A's record: %v", err)
			}
		}
		aTotals("after B's refused writes")

		// B's definition not filterable: A's keeps the key filterable and
		// counted (B's records too).
		kB.ConfigJSON["filterable"] = false
		define(t, svc, bT, kB)
		cntCheckTable(t, db, eid, keys, map[string]bool{"k": true, "q": true})
		aTotals("B's k not filterable")
		bTotals()
		// Neither: no counts; then B's again: rebuilt for both tenants.
		k.ConfigJSON = map[string]any{"filterable": false}
		define(t, svc, aT, k)
		cntCheckTable(t, db, eid, keys, map[string]bool{"q": true})
		aTotals("k not filterable")
		bTotals()
		kB.ConfigJSON["filterable"] = true
		define(t, svc, bT, kB)
		cntCheckTable(t, db, eid, keys, map[string]bool{"k": true, "q": true})
		aTotals("B's k filterable again")
		bTotals()

		// B's counts, however wrong, are not A's.
		cntBump(t, db, b, eid, "k", "x", org, 1000)
		cntBump(t, db, b, eid, "k", "x", "", 1000)
		aTotals("B's counts bumped")
		if _, total := recList(t, svc, bO, entities.RecordQuery{EntityID: eid, Filters: []entities.Filter{cntFilter("k", "x")}}); total != 2003 {
			t.Fatalf("B's bumped total: %d, want 2003", total)
		}

		// A global definition, and a tenant with none of its own.
		g := store.NewID()
		gT := cntCtx(t, g, "", nil)
		if _, err := svc.DefineGlobal(t.Context(), recDef(eid, "gk", "text", map[string]any{"filterable": true})); err != nil {
			t.Fatal(err)
		}
		recCreate(t, svc, gT, eid, map[string]any{"gk": "x"})
		recCreate(t, svc, aT, eid, map[string]any{"gk": "x"})
		recCreate(t, svc, aO, eid, map[string]any{"gk": "x"})
		cntWant(t, svc, gT, eid, cntFilter("gk", "x"), 1)
		cntWant(t, svc, aT, eid, cntFilter("gk", "x"), 2)
		cntWant(t, svc, bT, eid, cntFilter("gk", "x"), 0)
		cntWant(t, svc, gT, eid, cntFilter("k", "x"), 1)               // k is unknown to g: the filter is ignored
		if _, err := svc.DeleteDefinition(gT, eid, "gk"); err != nil { // a tombstone of g's own: still filterable globally
			t.Fatal(err)
		}
		cntWant(t, svc, aT, eid, cntFilter("gk", "x"), 2)
		if _, err := db.Exec(t.Context(), `DELETE FROM custom_entity_value_counts WHERE entity_id = $1 AND slot = 99`, eid); err != nil {
			t.Fatal(err)
		}
		cntCheckTable(t, db, eid, []string{"k", "q", "gk"}, map[string]bool{"k": true, "q": true, "gk": true})
	}, entities.Migrations)
}

// --- Numbers ---

// Numbers as the two engines hold them: -0, integers given as floats,
// the smallest and largest floats, and floats whose shortest text has
// many digits. Each value's three totals, its count in the records, after
// a rebuild and after the record's deletion.
func TestValueCountsNumbers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cntNumbers(t, db, []float64{0, math.Copysign(0, -1), 5, -3, 1e21, 1e22, 1e-7, 5e-324, math.MaxFloat64, -math.MaxFloat64,
			0.1, 0.30000000000000004, 1.0000000000000002, 4.35, 123456789.12345679, 2.2250738585072014e-308,
			1 << 53, 1e16, 3.0000000000000004e16, 1e20, 9.999999999999999e20, 123456789012345678, 1 << 63, 12345678901234567890})
	}, entities.Migrations)
}

// A float whose shortest text is an integer of more than 17 digits that
// is not its exact value: SQLite reads that text back as a different
// (integer) number, which filters and counts must compare with
// (regression: they bound the REAL, so the filter found nothing and a
// deleted record's count went to -1).
func TestValueCountsLargeFloat(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cntNumbers(t, db, []float64{1 << 60, 1<<60 + 1<<8, 1 << 62, 3 << 58, 1e18 + 128})
	}, entities.Migrations)
}

func cntNumbers(t *testing.T, db *store.DB, vals []float64) {
	t.Helper()
	svc := must(entities.New(db, entities.Options{}))
	ctx, sc := storetest.NewScope(t)
	eid := recEntityID()
	f := recDef(eid, "f", "float", map[string]any{"filterable": true})
	recDefineAll(t, svc, ctx, eid, f)
	ids := make([]string, len(vals))
	for i, v := range vals {
		ids[i] = recCreate(t, svc, ctx, eid, map[string]any{"f": v}).ID
	}
	// The first value once more, given as text.
	recCreate(t, svc, ctx, eid, map[string]any{"f": strconv.FormatFloat(vals[0], 'g', -1, 64)})
	check := func(what string, deleted bool) {
		t.Helper()
		for _, v := range vals {
			want := 0
			if !deleted {
				want = cntSQLCount(t, db, sc.TenantID, eid, "f", v)
				if want == 0 {
					t.Fatalf("%s: no record holds %v", what, v)
				}
			}
			for _, raw := range []string{strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(v, 'f', -1, 64), strconv.FormatFloat(v, 'e', 20, 64)} {
				total, items, counted := cntTotals(t, svc, ctx, eid, cntFilter("f", raw))
				if total != want || items != want || counted != want {
					t.Fatalf("%s: f = %s: total %d, records %d, counted total %d; want %d", what, raw, total, items, counted, want)
				}
			}
		}
		cntCheckTable(t, db, eid, []string{"f"}, map[string]bool{"f": true})
	}
	check("written", false)
	f.ConfigJSON = map[string]any{"filterable": false}
	define(t, svc, ctx, f)
	f.ConfigJSON = map[string]any{"filterable": true}
	define(t, svc, ctx, f)
	check("rebuilt", false)
	recs, _ := recList(t, svc, ctx, entities.RecordQuery{EntityID: eid, All: true})
	for _, r := range recs {
		if err := svc.DeleteRecord(ctx, eid, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	check("deleted", true)
}

// An unfiltered list takes its exact total from the live-record counts:
// a count added behind the service's back shows in the total, in the
// caller's scope only.
func TestLiveCountsAreUsed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		_, sc := storetest.NewScope(t)
		o1, o2 := sc.OrganizationID, store.NewID()
		tenant := cntCtx(t, sc.TenantID, "", nil)
		in1 := cntCtx(t, sc.TenantID, o1, []string{o1})
		in2 := cntCtx(t, sc.TenantID, o2, []string{o2})
		eid := recEntityID()
		recDefineAll(t, svc, tenant, eid, recDef(eid, "plain", "text", nil))
		is := func(got, want int, what string) {
			t.Helper()
			if got != want {
				t.Errorf("%s: total %d, want %d", what, got, want)
			}
		}
		recCreate(t, svc, in1, eid, map[string]any{"plain": "a"})
		recCreate(t, svc, in1, eid, map[string]any{"plain": "b"})
		gone := recCreate(t, svc, in2, eid, map[string]any{"plain": "c"})
		recCreate(t, svc, in2, eid, map[string]any{"plain": "d"})
		if err := svc.DeleteRecord(in2, eid, gone.ID); err != nil {
			t.Fatal(err)
		}
		all := entities.RecordQuery{EntityID: eid}
		total := func(ctx context.Context, q entities.RecordQuery) int { _, n := recList(t, svc, ctx, q); return n }
		is(total(tenant, all), 3, "the tenant")
		is(total(in1, all), 2, "o1")
		is(total(in2, all), 1, "o2 (one deleted)")

		cntBump(t, db, sc.TenantID, eid, "", true, o2, 10) // a count the records do not hold
		is(total(tenant, all), 13, "the tenant, from the counts")
		is(total(in1, all), 2, "o1 (o2's counts are not its)")
		is(total(in2, entities.RecordQuery{EntityID: eid, Search: "d"}), 1, "a search (counts its matches)")
	}, entities.Migrations)
}
