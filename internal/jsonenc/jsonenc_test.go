package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// jsonSame fails unless AppendValue writes x exactly as json.Marshal
// does (or both fail).
func jsonSame(t *testing.T, x any) {
	t.Helper()
	want, werr := json.Marshal(x)
	got, gerr := AppendValue(nil, x)
	if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
		t.Fatalf("%#v: wrote %q (%v), json.Marshal %q (%v)", x, got, gerr, want, werr)
	}
}

// Values' JSON is json.Marshal's, byte for byte: stored data and event
// payloads do not depend on the path that wrote them.
func TestAsEncodingJSON(t *testing.T) {
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
	for i := range 100 { // more keys than AppendObject's buffer
		many[strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune('0'+i%10))] = float64(i)
	}
	jsonSame(t, many)
}

func FuzzAsEncodingJSON(f *testing.F) {
	f.Add("a", "b<c>", 1.5, true)
	f.Add("\u2028", "\xff", 1e21, false)
	f.Add("", "\x00\x1f\"\\", -1e-7, true)
	f.Fuzz(func(t *testing.T, k, s string, x float64, b bool) {
		jsonSame(t, s)
		jsonSame(t, x)
		jsonSame(t, map[string]any{k: s, s: []any{x, b, nil, k}, "n": map[string]any{k: x}})
	})
}
