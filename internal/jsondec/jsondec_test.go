package jsondec

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// same fails unless Object reads b as json.Unmarshal into a
// map[string]any does, or declines (ok false) where it must: input
// json.Unmarshal refuses must never be read.
func same(t *testing.T, b []byte) (read bool) {
	t.Helper()
	var want map[string]any
	werr := json.Unmarshal(b, &want)
	got, ok := Object(b)
	switch {
	case ok && werr != nil:
		t.Errorf("Object read %q, which json.Unmarshal refuses: %v", b, werr)
	case ok && !reflect.DeepEqual(got, want):
		t.Errorf("Object(%q)\n = %#v\nencoding/json\n = %#v", b, got, want)
	case ok && math.Signbit(floatAt(got)) != math.Signbit(floatAt(want)):
		t.Errorf("Object(%q): the sign of zero differs from encoding/json's", b)
	case !ok && got != nil:
		t.Errorf("Object(%q) declined but returned %v", b, got)
	}
	return ok
}

// floatAt is the value of key "n" when it is a number (for -0).
func floatAt(m map[string]any) float64 {
	f, _ := m["n"].(float64)
	return f
}

// Objects encoding/json reads, and where Object must read them too.
func TestObjectReadsAsEncodingJSON(t *testing.T) {
	for _, s := range []string{
		`{}`, ` {} `, "\t{\n}\r\n", `{"a":1}`, `{"a":{}}`, `{"a":[]}`, `{"a":[1,"x",true,false,null,{"b":[[]]}]}`,
		`{"n":-0}`, `{"n":0}`, `{"n":-0.0e0}`, `{"n":1.5e308}`, `{"n":1e-400}`, `{"n":123456789012345678901234567890}`,
		`{"n":0.1}`, `{"n":1E+2}`, `{"n":1e-2}`, `{"n":-12.5E-3}`,
		`{"a":1,"a":2}`, `{"a":{"x":1},"a":{"y":2}}`, `{"":""}`,
		`{"s":"plain"}`, `{"s":"\"\\\/\b\f\n\r\t"}`, `{"s":"\u00e9\u2028\u0000x"}`, `{"s":"\ud83d\ude00"}`,
		`{"s":"caf\u00e9 ` + "été" + `"}`, `{"s":"\ufffd"}`, `{"ké\n":"v"}`,
		`{ "a" : 1 , "b" : [ 1 , 2 ] }`,
		`{"entityType":"Order","data":{"total":1234.5,"tags":["a","b"],"nested":{"x":null}},"dryRun":true}`,
	} {
		if !same(t, []byte(s)) {
			t.Errorf("Object declined %s, which it reads", s)
		}
	}
}

// Input Object must decline: not JSON, not an object, or what it leaves
// to encoding/json (out of range, lone surrogates, invalid UTF-8, too
// deep).
func TestObjectDeclines(t *testing.T) {
	for _, s := range []string{
		``, ` `, `[]`, `1`, `"x"`, `null`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":1}x`, `{"a":1}{}`,
		`{a:1}`, `{'a':1}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":1e}`, `{"a":-}`, `{"a":0x10}`,
		`{"a":NaN}`, `{"a":Infinity}`, `{"a":tru}`, `{"a":nul}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`,
		`{"a":1e400}`, `{"a":-1e400}`, `{"s":"\ud83d"}`, `{"s":"\ude00"}`, `{"s":"\ud83dx"}`, `{"s":"\ud83d\u0041"}`,
		`{"s":"\x"}`, `{"s":"\u12"}`, `{"s":"\u12g4"}`, "{\"s\":\"a\tb\"}", "{\"s\":\"a\nb\"}", `{"s":"abc`,
		"{\"s\":\"\xff\"}", "{\"s\":\"\\n\xff\"}", "{\"\xc3\":1}",
		strings.Repeat(`{"a":`, maxDepth+1) + `1` + strings.Repeat(`}`, maxDepth+1),
		`{"a":` + strings.Repeat(`[`, maxDepth) + strings.Repeat(`]`, maxDepth) + `}`,
	} {
		if same(t, []byte(s)) {
			t.Errorf("Object read %q, which it must leave to encoding/json", s)
		}
	}
}

// Random nested values, written by json.Marshal (and with white space
// and escapes added), read as encoding/json reads them.
func TestObjectGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	texts := []string{"", "a", "Zürich", "<&>", "\u2028", "\x00", "tab\there", `"quoted"`, `back\slash`, "😀", "\ufffd"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch n := r.IntN(9); {
		case n == 0 && depth < 6:
			m := map[string]any{}
			for range r.IntN(5) {
				m[texts[r.IntN(len(texts))]] = gen(depth + 1)
			}
			return m
		case n == 1 && depth < 6:
			a := make([]any, r.IntN(4))
			for i := range a {
				a[i] = gen(depth + 1)
			}
			return a
		case n == 2:
			return texts[r.IntN(len(texts))]
		case n == 3:
			return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
		case n == 4:
			return float64(r.IntN(2000) - 1000)
		case n == 5:
			return r.IntN(2) == 0
		case n == 6:
			return nil
		default:
			return math.Float64frombits(r.Uint64()) // any bits; NaN and infinities are skipped below
		}
	}
	for range 3000 {
		m := map[string]any{}
		for range r.IntN(6) {
			m[texts[r.IntN(len(texts))]] = gen(1)
		}
		b, err := json.Marshal(m)
		if err != nil {
			continue // NaN or an infinity
		}
		if !same(t, b) {
			t.Errorf("Object declined %s", b)
		}
		// The same with white space between tokens and every non-ASCII
		// character escaped.
		var sb strings.Builder
		for _, c := range string(b) {
			switch {
			case c == ',' || c == ':':
				sb.WriteString(" " + string(c) + "\n\t")
			case c > 0xffff:
				hi, lo := utf16Pair(c)
				sb.WriteString(`\u` + hex4(hi) + `\u` + hex4(lo))
			case c >= 0x80:
				sb.WriteString(`\u` + hex4(c))
			default:
				sb.WriteRune(c)
			}
		}
		same(t, []byte(sb.String())) // may decline: a ',' or ':' inside a string gains spaces, still valid
	}
}

func utf16Pair(c rune) (rune, rune) {
	c -= 0x10000
	return 0xd800 + c>>10, 0xdc00 + c&0x3ff
}

func hex4(r rune) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[r>>12&0xf], digits[r>>8&0xf], digits[r>>4&0xf], digits[r&0xf]})
}

// ObjectOnce declines a repeated key at the top level only.
func TestObjectOnce(t *testing.T) {
	for s, once := range map[string]bool{
		`{"a":1,"b":2}`: true, `{"a":1,"a":1}`: false, `{"a":{"x":1},"a":{"y":2}}`: false,
		`{"a":{"x":1,"x":2},"b":[{"y":1,"y":2}]}`: true, `{}`: true, `{"a":1,"b":2,"a":3}`: false,
	} {
		m, ok := ObjectOnce([]byte(s))
		if ok != once {
			t.Errorf("ObjectOnce(%s) read it: %v, want %v", s, ok, once)
		}
		if want, _ := Object([]byte(s)); ok && !reflect.DeepEqual(m, want) {
			t.Errorf("ObjectOnce(%s) = %v, Object %v", s, m, want)
		}
		if shared, sok := ObjectOnceShared([]byte(s)); sok != ok || !reflect.DeepEqual(shared, m) {
			t.Errorf("ObjectOnceShared(%s) = %v, %v; ObjectOnce %v, %v", s, shared, sok, m, ok)
		}
	}
}

// ObjectOnceShared reads what ObjectOnce reads, the same, with one
// allocation for all the strings without escapes rather than one each:
// the 35 keys and strings of benchBody.
func TestObjectOnceShared(t *testing.T) {
	for _, s := range []string{
		`{"s":"plain","t":"\"esc\"","k\u00e9":"caf` + "é" + `","a":["x",{"y":"z"}],"n":1}`,
		`{"entityType":"Order","data":{"total":1234.5,"tags":["a","b"],"nested":{"x":null}},"dryRun":true}`,
		`{"a":1,"a":2}`, `{"s":"\ud800"}`, `{"s":"` + "\xff" + `"}`, `[]`, ``,
	} {
		want, wok := ObjectOnce([]byte(s))
		got, ok := ObjectOnceShared([]byte(s))
		if ok != wok || !reflect.DeepEqual(got, want) {
			t.Errorf("ObjectOnceShared(%s) = %v, %v; ObjectOnce %v, %v", s, got, ok, want, wok)
		}
	}
	b := append([]byte(nil), benchBody...)
	m, _ := ObjectOnceShared(b)
	clear(b) // the strings are a copy's, not b's
	if m["entityType"] != "Order" || m["data"].(map[string]any)["couponCode"] != "SPRING26" {
		t.Errorf("ObjectOnceShared's strings changed with its input: %v", m)
	}
	copies := testing.AllocsPerRun(20, func() { ObjectOnce(benchBody) })
	shared := testing.AllocsPerRun(20, func() { ObjectOnceShared(benchBody) })
	if shared > copies-30 {
		t.Errorf("ObjectOnceShared allocates %v times reading benchBody, ObjectOnce %v: want 30 fewer", shared, copies)
	}
}

// FuzzObject: whatever the input, Object reads it as encoding/json or
// declines.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,"x",{"b":null}]}`, `{"s":"\ud83d\ude00\n"}`, `{"n":-0.5e-3}`, `{"a":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		same(t, b)
		want, wok := ObjectOnce(b)
		if got, ok := ObjectOnceShared(b); ok != wok || !reflect.DeepEqual(got, want) {
			t.Errorf("ObjectOnceShared(%q) = %v, %v; ObjectOnce %v, %v", b, got, ok, want, wok)
		}
	})
}

// benchBody is a rule execution's body: a 20-field entity.
var benchBody = []byte(`{"entityType":"Order","entityId":"ORD-2026-000123","eventType":"beforeSave","data":{"orderId":"ORD-2026-000123","status":"OPEN","priority":3,"total":1234.5,"currency":"EUR","country":"DE","channel":"web","customerTier":"gold","itemCount":7,"discount":0.1,"isRush":false,"isGift":true,"warehouse":"WH-2","carrier":"dhl","weightKg":12.4,"region":"EU","paymentMethod":"card","score":87,"couponCode":"SPRING26","createdBy":"user-42"}}`)

// BenchmarkObject reads benchBody with Object and, as the baseline, with
// json.Unmarshal into a map[string]any.
func BenchmarkObject(b *testing.B) {
	b.Run("jsondec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := Object(benchBody); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(benchBody, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
