package entities

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// jsonSame fails unless appendJSONValue writes x exactly as json.Marshal
// does (or both fail).
func jsonSame(t *testing.T, x any) {
	t.Helper()
	want, werr := json.Marshal(x)
	got, gerr := appendJSONValue(nil, x)
	if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("%#v: wrote %q (%v), json.Marshal %q (%v)", x, got, gerr, want, werr)
	}
}

// Values' JSON is json.Marshal's, byte for byte: stored data and event
// payloads do not depend on the path that wrote them.
func TestJSONValuesAsEncodingJSON(t *testing.T) {
	var allBytes strings.Builder
	for c := range 256 {
		allBytes.WriteByte(byte(c))
	}
	strs := []string{"", "plain", allBytes.String(), `<a href="x">&amp;</a>`, "\u2028\u2029", "é\u00e9€😀", "\xff\xfe", "a\x00b",
		"\x7f", "tab\tnew\nline\rcr\bbs\fff", `back\slash "quoted"`, "\xed\xa0\x80", strings.Repeat("ü", 100)}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.1 + 0.2, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789012345678901234.0,
		-1e-300, 5e-324, math.MaxFloat64, 1 << 53, 1e100, 12.5, 100, -0.000001}
	for _, s := range strs {
		jsonSame(t, s)
		jsonSame(t, map[string]any{s: s})
	}
	for _, f := range floats {
		jsonSame(t, f)
	}
	for _, x := range []any{nil, true, false, []any{}, []any(nil), map[string]any{}, map[string]any(nil),
		[]any{"a", 1.5, true, nil, []any{"b"}, map[string]any{"z": 1.0, "a": "x"}},
		map[string]any{"b": 1.0, "a": []any{"x", 2.0}, "A": false, "é": "e", "_": nil, "a1": map[string]any{"n": nil}},
		3, int64(-7), json.Number("1.50"), []string{"x"}, map[string]int{"b": 1, "a": 2}, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		math.NaN(), math.Inf(1), []any{math.Inf(-1)}, map[string]any{"x": math.NaN()},
	} {
		jsonSame(t, x)
	}
	many := map[string]any{}
	for i := range 100 { // more keys than appendValuesJSON's buffer
		many[strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune('0'+i%10))] = float64(i)
	}
	jsonSame(t, many)
}

func FuzzJSONValues(f *testing.F) {
	f.Add("a", "b<c>", 1.5, true)
	f.Add("\u2028", "\xff", 1e21, false)
	f.Add("", "\x00\x1f\"\\", -1e-7, true)
	f.Fuzz(func(t *testing.T, k, s string, x float64, b bool) {
		jsonSame(t, s)
		jsonSame(t, x)
		jsonSame(t, map[string]any{k: s, s: []any{x, b, nil, k}, "n": map[string]any{k: x}})
	})
}

// A record's event data is json.Marshal(eventOf(r)), byte for byte.
func TestRecordEventJSON(t *testing.T) {
	deleted := time.Date(2026, 11, 25, 21, 5, 0, 123456000, time.UTC)
	for _, r := range []*Record{
		{ID: "01a2214e-e813-7405-96ea-5867931b8e59", EntityID: "rec.e_1", TenantID: "t1", OrganizationID: "o1",
			Values:    map[string]any{"title": "Item <1>", "n": 2.0, "ok": true, "tags": []any{"a", "b"}, "none": nil},
			CreatedAt: time.Date(2026, 11, 25, 21, 5, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 11, 25, 21, 5, 1, 500000000, time.UTC)},
		{ID: "x", EntityID: "y", TenantID: "t\u2028", Values: nil, CreatedAt: time.Unix(0, 1).UTC(), UpdatedAt: deleted, DeletedAt: &deleted},
		{ID: "z", Values: map[string]any{}, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600)), UpdatedAt: time.Time{}},
		{ID: "far", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // json.Marshal fails
	} {
		want, werr := json.Marshal(eventOf(r))
		got, gerr := recordEventJSON(r)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("record %s: wrote %s (%v), json.Marshal %s (%v)", r.ID, got, gerr, want, werr)
		}
	}
}

// isUUIDText is uuidPattern's match.
func TestIsUUIDText(t *testing.T) {
	for _, s := range []string{"", "01a2214e-e813-7405-96ea-5867931b8e59", "01A2214E-E813-7405-96EA-5867931B8E59",
		"01a2214e-e813-7405-96ea-5867931b8e5", "01a2214e-e813-7405-96ea-5867931b8e590", "01a2214ee813-7405-96ea-5867931b8e59-",
		"g1a2214e-e813-7405-96ea-5867931b8e59", "01a2214e-e813-7405-96ea-5867931b8e5\n", "01a2214e_e813_7405_96ea_5867931b8e59",
		"01a2214e-e813-7405-96ea-5867931b8é", "not-a-uuid", "00000000-0000-0000-0000-000000000000"} {
		if got, want := isUUIDText(s), uuidPattern.MatchString(s); got != want {
			t.Errorf("%q: %v, the pattern %v", s, got, want)
		}
	}
}

func FuzzIsUUIDText(f *testing.F) {
	f.Add("01a2214e-e813-7405-96ea-5867931b8e59")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isUUIDText(s), uuidPattern.MatchString(s); got != want {
			t.Fatalf("%q: %v, the pattern %v", s, got, want)
		}
	})
}
