package jsoncanon

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/jsongen"
)

// roundTrip is what AppendObject must write for raw and extra: raw
// decoded by encoding/json into a map, extra's members set in it, the map
// marshalled. ok is false when encoding/json does not decode raw.
func roundTrip(t testing.TB, raw string, extra []Member) (string, bool) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return "", false
	}
	for _, e := range extra {
		m[e.Key] = json.RawMessage(e.Value)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return string(b), true
}

// same fails unless AppendObject writes raw as the round trip does or
// declines it; it reports whether it wrote it.
func same(t testing.TB, raw string, extra ...Member) bool {
	t.Helper()
	prefix := []byte("prefix")
	got, ok := AppendObject(prefix, raw, slices.Clone(extra))
	if !ok {
		if string(got) != "prefix" {
			t.Fatalf("%q declined, but the buffer holds %q", raw, got)
		}
		return false
	}
	want, decoded := roundTrip(t, raw, extra)
	if !decoded {
		t.Fatalf("%q: wrote %q, but encoding/json does not read it", raw, got)
	}
	if string(got) != "prefix"+want {
		t.Fatalf("%q:\ngot  %s\nwant prefix%s", raw, got, want)
	}
	return true
}

// PostgreSQL's jsonb output (keys by length, a space after ':' and ',',
// numbers as written) and SQLite's text are written as json.Marshal
// writes their decoded values.
func TestAppendObjectAsEncodingJSON(t *testing.T) {
	own := []Member{{"updatedAt", []byte(`"2026-01-02T03:04:05Z"`)}, {"id", []byte(`"r1"`)},
		{"createdAt", []byte(`"2026-01-02T03:04:05.5+01:00"`)}}
	for _, raw := range []string{
		`{"qty": 3, "note": "created by the records-create scenario", "title": "Bench item", "total": 1234.56, "status": "open"}`,
		`{"note":"seeded","qty":3,"status":"open","title":"Bench item","total":1234.56}`,
		`{}`, ` { } `, "\t{\"a\" :\n1 }\r\n",
		`{"id": "theirs", "createdAt": 1, "deletedAt": "kept", "Zed": null}`,
		`{"b": {"z": 1, "a": [true, false, null, {"y": [], "x": {}}]}, "a": []}`,
		`{"n": [0, -0, 0.0, 1.50, 1e21, 1E+2, 1e-7, 0.000001, 0.0000001, 123456789012345, 1234567890123456, 12345678901234567890,
			0.1, 100000000000000000000000, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1234.5600, 9007199254740993]}`,
		`{"s": ["<a href=\"x\">&amp;</a>", "\u2028\u2029", "é€😀", "\u00e9\ud83d\ude00", "\/\b\f\n\r\t\u0001\u001f", "\\", "\u0000"]}`,
		"{\"raw\": \"é\u2028<>&\"}",
		`{"dup": 1, "dup": 2, "a": 0, "dup": 3}`,
		`{"é": 1, "e": 2, "z": 3, "E": 4, "": 5, "a\u0000": 6, "a": 7}`,
		`{"createdAt": 1, "id": 2, "updatedAt": 3, "zz": 4, "deletedAt": 5}`,
	} {
		if !same(t, raw) {
			t.Errorf("%q declined", raw)
		}
		if !same(t, raw, own...) {
			t.Errorf("%q declined with own members", raw)
		}
	}
}

// What encoding/json does not decode, or decodes otherwise than it
// reads, is declined.
func TestAppendObjectDeclines(t *testing.T) {
	deep := `{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`
	for _, raw := range []string{
		``, ` `, `[]`, `"x"`, `1`, `null`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{a:1}`,
		`{"a":1}x`, `{"a":1}{}`, `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":tru}`, `{"a":nul}`, `{"a":01}`, `{"a":1.}`,
		`{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":+1}`, `{"a":1e400}`, `{"a":-1e400}`, `{"a":"\x"}`, `{"a":"\u12"}`,
		`{"a":"\ud800"}`, `{"a":"` + "\xff" + `"}`, "{\"\xff\":1}", "{\"a\":\"\x01\"}", `{"a":"x}`, `{"a":{"b":1}`,
		`{"a":[}`, `{"a":{]}`, `{"a":"\"}`, deep,
	} {
		if same(t, raw) {
			t.Errorf("%q written, want declined", raw)
		}
	}
	// Values that are not written (an earlier one of equal keys, one that
	// extra replaces) are checked too.
	for _, raw := range []string{`{"a":tru,"a":1}`, `{"a":[1,],"a":1}`, `{"id":}`, `{"id":01}`, `{"id":{"x":1e400}}`} {
		if same(t, raw, Member{Key: "id", Value: []byte(`"own"`)}) {
			t.Errorf("%q written, want declined", raw)
		}
	}
	if !same(t, `{"id":1,"b":2,"id":3}`, Member{Key: "id", Value: []byte(`"own"`)}, Member{Key: "a", Value: []byte(`0`)}) {
		t.Error("an object whose repeated key extra replaces declined")
	}
	if !same(t, `{"a":`+strings.Repeat("[", maxDepth-1)+strings.Repeat("]", maxDepth-1)+`}`) {
		t.Error("nesting at the limit declined")
	}
}

// jsonbText writes x as PostgreSQL writes a jsonb value: object keys by
// length, then bytes; ": " and ", " between; strings with ", \, \b, \f,
// \n, \r, \t and other control characters (\u00XX) escaped, everything
// else as is; numbers in one of the notations of the same value
// (numeric keeps the digits it was given).
func jsonbText(r *rand.Rand, b *strings.Builder, x any) {
	switch v := x.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case float64:
		switch r.IntN(4) {
		case 0:
			b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
		case 1:
			b.WriteString(strconv.FormatFloat(v, 'e', -1, 64))
		case 2:
			s := strconv.FormatFloat(v, 'f', -1, 64)
			if !strings.Contains(s, ".") {
				s += "."
			}
			b.WriteString(s + "00")
		default:
			j, _ := json.Marshal(v)
			b.Write(j)
		}
	case string:
		b.WriteByte('"')
		for i := 0; i < len(v); i++ {
			switch c := v[i]; c {
			case '"', '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				if c < 0x20 {
					fmt.Fprintf(b, `\u%04x`, c)
				} else {
					b.WriteByte(c)
				}
			}
		}
		b.WriteByte('"')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			jsonbText(r, b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y string) int {
			if len(x) != len(y) {
				return len(x) - len(y)
			}
			return strings.Compare(x, y)
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			jsonbText(r, b, k)
			b.WriteString(": ")
			jsonbText(r, b, v[k])
		}
		b.WriteByte('}')
	}
}

var keyParts = []string{"id", "createdAt", "updatedAt", "a", "B", "_x", "title", "<", "&", "\"", "\\", "é", "\u2028", "\n", "\x01", "9", "😀"}

// genKey and genValue make keys and values of keyParts.
func genKey(r *rand.Rand) string { return jsongen.Gen{R: r, Parts: keyParts}.Key() }

func genValue(r *rand.Rand, depth int) any { return jsongen.Gen{R: r, Parts: keyParts}.Value(depth) }

// Generated objects in jsonb's form and in json.Marshal's are written as
// the round trip writes them, none declined.
func TestAppendObjectGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	own := []Member{{"createdAt", []byte(`"c"`)}, {"id", []byte(`"i"`)}, {"updatedAt", []byte(`"u"`)}}
	for range 5000 {
		m := map[string]any{}
		for range r.IntN(8) {
			m[genKey(r)] = genValue(r, 0)
		}
		var b strings.Builder
		jsonbText(r, &b, m)
		marshalled, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range []string{b.String(), string(marshalled)} {
			if !same(t, raw, own[:r.IntN(4)]...) {
				t.Fatalf("%q declined", raw)
			}
		}
	}
}

func FuzzAppendObject(f *testing.F) {
	f.Add(`{"qty": 3, "note": "x", "title": "Bench item", "total": 1234.56, "status": "open"}`, "id")
	f.Add(`{"a":[1e21,-0,1.50,{"b":"\u2028<"}],"a":null}`, "a")
	f.Add(`{"\ud83d\ude00":"\/"}`, "")
	f.Fuzz(func(t *testing.T, raw, key string) {
		same(t, raw)
		same(t, raw, Member{Key: key, Value: []byte(`"own"`)})
		if _, ok := roundTrip(t, raw, nil); ok && plain(raw) && len(raw) < 300 {
			// ASCII without escapes or exponents (so no number out of
			// range), not deep, which encoding/json reads: never declined.
			if _, ok := AppendObject(nil, raw, nil); !ok {
				t.Errorf("%q declined", raw)
			}
		}
	})
}

// plain reports whether s is ASCII without a backslash or an exponent
// letter.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c == '\\' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

func BenchmarkAppendObject(b *testing.B) {
	own := []Member{{"createdAt", []byte(`"2026-11-29T19:00:00.123456Z"`)}, {"id", []byte(`"019ad5a6-7c2e-7d41-9f1a-3e5f7a9b1c2d"`)},
		{"updatedAt", []byte(`"2026-11-29T19:00:00.123456Z"`)}}
	for _, raw := range []struct{ name, text string }{
		{"jsonb", `{"qty": 3, "note": "seeded", "title": "Bench item", "total": 1234.56, "status": "open"}`},
		{"sorted", `{"note":"seeded","qty":3,"status":"open","title":"Bench item","total":1234.56}`},
	} {
		b.Run(raw.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 512)
			for b.Loop() {
				buf, _ = AppendObject(buf[:0], raw.text, own)
			}
		})
	}
}
