package condition_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules/condition"
)

// ---------------------------------------------------------------------------
// helpers

// parse parses an expression written as JSON text, failing the test on a
// refusal, and returns it as the evaluator under test runs it (see
// evaluated).
func parse(t testing.TB, expr string) *condition.Condition {
	t.Helper()
	c, err := condition.Parse([]byte(expr))
	if err != nil {
		t.Fatalf("Parse(%s): %v", expr, err)
	}
	return evaluated(t, c)
}

// decode decodes a JSON object the way a host receiving a request body
// would: encoding/json into map[string]any (numbers as float64).
func decode(t testing.TB, data string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("data %s: %v", data, err)
	}
	return m
}

// simple writes {"field":field,"operator":op,"value":value}; value is
// JSON text, and "" leaves the value key out.
func simple(field, op, value string) string {
	if value == "" {
		return fmt.Sprintf(`{"field":%q,"operator":%q}`, field, op)
	}
	return fmt.Sprintf(`{"field":%q,"operator":%q,"value":%s}`, field, op, value)
}

// row is one line of an operator's truth table: the value (JSON text, ""
// for none), the data (a JSON object; the field is "x"), and the result.
type row struct {
	name  string
	value string
	data  string
	want  bool
}

// runTable evaluates every row under op; negate flips the expected
// results (for != , NOT_IN, NOT_CONTAINS, IS_NOT_EMPTY).
func runTable(t *testing.T, op string, rows []row, negate bool) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			expr := simple("x", op, r.value)
			c := parse(t, expr)
			want := r.want != negate
			got := c.Eval(decode(t, r.data), nil)
			if got != want {
				t.Errorf("%s with data %s = %v, want %v", expr, r.data, got, want)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 1. truth tables

var equalityRows = []row{
	// nulls
	{name: "missing field = null", value: `null`, data: `{}`, want: true},
	{name: "explicit null = null", value: `null`, data: `{"x":null}`, want: true},
	{name: "missing field = 5", value: `5`, data: `{}`, want: false},
	{name: "missing field = empty string", value: `""`, data: `{}`, want: false},
	{name: "explicit null = string", value: `"a"`, data: `{"x":null}`, want: false},
	{name: "explicit null = false", value: `false`, data: `{"x":null}`, want: false},
	{name: "explicit null = 0", value: `0`, data: `{"x":null}`, want: false},
	{name: "0 = null", value: `null`, data: `{"x":0}`, want: false},
	{name: "empty string = null", value: `null`, data: `{"x":""}`, want: false},
	{name: "false = null", value: `null`, data: `{"x":false}`, want: false},
	{name: "string null = null", value: `null`, data: `{"x":"null"}`, want: false},
	// numbers and numeric strings
	{name: "5 = 5", value: `5`, data: `{"x":5}`, want: true},
	{name: "5 = 6", value: `6`, data: `{"x":5}`, want: false},
	{name: "5 = 5.0", value: `5.0`, data: `{"x":5}`, want: true},
	{name: "0.1 = 0.1", value: `0.1`, data: `{"x":0.1}`, want: true},
	{name: "-3 = -3", value: `-3`, data: `{"x":-3}`, want: true},
	{name: "string 5 = 5", value: `5`, data: `{"x":"5"}`, want: true},
	{name: "5 = string 5", value: `"5"`, data: `{"x":5}`, want: true},
	{name: "string 5.0 = 5", value: `5`, data: `{"x":"5.0"}`, want: true},
	{name: "padded string 5 = 5", value: `5`, data: `{"x":" 5 "}`, want: true},
	{name: "empty string = 0", value: `0`, data: `{"x":""}`, want: true},
	{name: "blank string = 0", value: `0`, data: `{"x":"   "}`, want: true},
	{name: "empty string = 1", value: `1`, data: `{"x":""}`, want: false},
	{name: "abc = 0", value: `0`, data: `{"x":"abc"}`, want: false},
	{name: "string 1e3 = 1000", value: `1000`, data: `{"x":"1e3"}`, want: true},
	{name: "string .5 = 0.5", value: `0.5`, data: `{"x":".5"}`, want: true},
	{name: "string Infinity = 1e308 is false", value: `1e308`, data: `{"x":"Infinity"}`, want: false},
	{name: "string NaN = 0 is false", value: `0`, data: `{"x":"NaN"}`, want: false},
	{name: "string 5px = 5 is false", value: `5`, data: `{"x":"5px"}`, want: false},
	{name: "string 5 = string 5.0 (no number side, strict)", value: `"5.0"`, data: `{"x":"5"}`, want: false},
	{name: "string 5 = string 5", value: `"5"`, data: `{"x":"5"}`, want: true},
	// booleans
	{name: "true = true", value: `true`, data: `{"x":true}`, want: true},
	{name: "true = false", value: `false`, data: `{"x":true}`, want: false},
	{name: "false = false", value: `false`, data: `{"x":false}`, want: true},
	{name: "true = 1 (number side)", value: `1`, data: `{"x":true}`, want: true},
	{name: "false = 0 (number side)", value: `0`, data: `{"x":false}`, want: true},
	{name: "true = string true", value: `"true"`, data: `{"x":true}`, want: false},
	{name: "string 1 = true", value: `true`, data: `{"x":"1"}`, want: false},
	{name: "empty string = false", value: `false`, data: `{"x":""}`, want: false},
	// strings, case-sensitive
	{name: "ACTIVE = ACTIVE", value: `"ACTIVE"`, data: `{"x":"ACTIVE"}`, want: true},
	{name: "Active = ACTIVE", value: `"ACTIVE"`, data: `{"x":"Active"}`, want: false},
	{name: "trailing space differs", value: `"ACTIVE"`, data: `{"x":"ACTIVE "}`, want: false},
	{name: "empty = empty", value: `""`, data: `{"x":""}`, want: true},
	{name: "unicode = unicode", value: `"Zürich"`, data: `{"x":"Zürich"}`, want: true},
	// dates are strings for =
	{name: "same date = same date", value: `"2024-01-15"`, data: `{"x":"2024-01-15"}`, want: true},
	{name: "date = same instant written differently (text)", value: `"2024-01-15T00:00:00Z"`, data: `{"x":"2024-01-15"}`, want: false},
	// arrays and objects equal nothing
	{name: "array = same array", value: `[1]`, data: `{"x":[1]}`, want: false},
	{name: "empty array = empty array", value: `[]`, data: `{"x":[]}`, want: false},
	{name: "object = same object", value: `{"a":1}`, data: `{"x":{"a":1}}`, want: false},
	{name: "array = its text", value: `"1,2"`, data: `{"x":[1,2]}`, want: false},
	{name: "empty array = 0 (decision: JS would say true)", value: `0`, data: `{"x":[]}`, want: false},
}

func TestEquals(t *testing.T) {
	for _, op := range []string{"=", "=="} {
		t.Run(op, func(t *testing.T) { runTable(t, op, equalityRows, false) })
	}
	t.Run("!=", func(t *testing.T) { runTable(t, "!=", equalityRows, true) })
}

// ordRow is a line of the ordering table: cmp is the expected sign of
// compare(field, value).
type ordRow struct {
	name  string
	value string
	data  string
	cmp   int
}

var orderingRows = []ordRow{
	// nulls sort first
	{name: "missing vs null", value: `null`, data: `{}`, cmp: 0},
	{name: "explicit null vs null", value: `null`, data: `{"x":null}`, cmp: 0},
	{name: "missing vs 5", value: `5`, data: `{}`, cmp: -1},
	{name: "missing vs -5", value: `-5`, data: `{}`, cmp: -1},
	{name: "explicit null vs string", value: `"a"`, data: `{"x":null}`, cmp: -1},
	{name: "5 vs null", value: `null`, data: `{"x":5}`, cmp: 1},
	{name: "-5 vs null", value: `null`, data: `{"x":-5}`, cmp: 1},
	{name: "empty string vs null", value: `null`, data: `{"x":""}`, cmp: 1},
	// numbers
	{name: "5 vs 3", value: `3`, data: `{"x":5}`, cmp: 1},
	{name: "3 vs 5", value: `5`, data: `{"x":3}`, cmp: -1},
	{name: "5 vs 5", value: `5`, data: `{"x":5}`, cmp: 0},
	{name: "-1 vs 0", value: `0`, data: `{"x":-1}`, cmp: -1},
	{name: "1.5 vs 1.25", value: `1.25`, data: `{"x":1.5}`, cmp: 1},
	// numeric strings compare as numbers
	{name: "string 10 vs 9", value: `9`, data: `{"x":"10"}`, cmp: 1},
	{name: "string 10 vs string 9", value: `"9"`, data: `{"x":"10"}`, cmp: 1},
	{name: "string 5.0 vs 5", value: `5`, data: `{"x":"5.0"}`, cmp: 0},
	{name: "padded string 5 vs 5", value: `5`, data: `{"x":" 5 "}`, cmp: 0},
	{name: "empty string vs 0", value: `0`, data: `{"x":""}`, cmp: 0},
	{name: "empty string vs 1", value: `1`, data: `{"x":""}`, cmp: -1},
	{name: "string -2 vs string -10", value: `"-10"`, data: `{"x":"-2"}`, cmp: 1},
	{name: "string 1e3 vs 999", value: `999`, data: `{"x":"1e3"}`, cmp: 1},
	{name: "string Infinity vs 1e308", value: `1e308`, data: `{"x":"Infinity"}`, cmp: 1},
	{name: "string -Infinity vs -1e308", value: `-1e308`, data: `{"x":" -Infinity "}`, cmp: -1},
	{name: "string +Infinity vs string Infinity", value: `"Infinity"`, data: `{"x":"+Infinity"}`, cmp: 0},
	{name: "string infinity is text", value: `"j"`, data: `{"x":"infinity"}`, cmp: -1},
	{name: "string 1e400 is Infinity", value: `2`, data: `{"x":"1e400"}`, cmp: 1},
	{name: "string 0x10 is 16", value: `15`, data: `{"x":"0x10"}`, cmp: 1},
	// non-numeric text vs number: text comparison of String() forms
	{name: "abc vs 0 (text)", value: `0`, data: `{"x":"abc"}`, cmp: 1},
	{name: "abc vs 5 (text)", value: `5`, data: `{"x":"abc"}`, cmp: 1},
	{name: "5px vs 10 (text, 5 > 1)", value: `10`, data: `{"x":"5px"}`, cmp: 1},
	// booleans are numbers 0 and 1
	{name: "true vs false", value: `false`, data: `{"x":true}`, cmp: 1},
	{name: "true vs 1", value: `1`, data: `{"x":true}`, cmp: 0},
	{name: "false vs 0", value: `0`, data: `{"x":false}`, cmp: 0},
	{name: "false vs 0.5", value: `0.5`, data: `{"x":false}`, cmp: -1},
	// strings by code point, case-sensitive
	{name: "apple vs banana", value: `"banana"`, data: `{"x":"apple"}`, cmp: -1},
	{name: "banana vs apple", value: `"apple"`, data: `{"x":"banana"}`, cmp: 1},
	{name: "abc vs abc", value: `"abc"`, data: `{"x":"abc"}`, cmp: 0},
	{name: "Zebra vs apple (code point, not locale)", value: `"apple"`, data: `{"x":"Zebra"}`, cmp: -1},
	{name: "a vs B (code point)", value: `"B"`, data: `{"x":"a"}`, cmp: 1},
	{name: "abc vs abcd", value: `"abcd"`, data: `{"x":"abc"}`, cmp: -1},
	// ISO dates
	{name: "2024-01-15 vs 2024-02-01", value: `"2024-02-01"`, data: `{"x":"2024-01-15"}`, cmp: -1},
	{name: "2024-02-01 vs 2024-01-15", value: `"2024-01-15"`, data: `{"x":"2024-02-01"}`, cmp: 1},
	{name: "date vs same date", value: `"2024-01-15"`, data: `{"x":"2024-01-15"}`, cmp: 0},
	{name: "date vs its midnight Z", value: `"2024-01-15T00:00:00Z"`, data: `{"x":"2024-01-15"}`, cmp: 0},
	{name: "Z vs Z with millis", value: `"2024-01-15T10:00:00.000Z"`, data: `{"x":"2024-01-15T10:00:00Z"}`, cmp: 0},
	{name: "+02:00 vs Z (by instant, not text)", value: `"2024-01-15T09:00:00Z"`, data: `{"x":"2024-01-15T10:00:00+02:00"}`, cmp: -1},
	{name: "-01:00 late evening vs next day", value: `"2024-01-16"`, data: `{"x":"2024-01-15T23:30:00-01:00"}`, cmp: 1},
	{name: "same instant in two zones", value: `"2024-01-15T08:00:00Z"`, data: `{"x":"2024-01-15T10:00:00+02:00"}`, cmp: 0},
	{name: "no zone is UTC", value: `"2024-01-15T10:00:00Z"`, data: `{"x":"2024-01-15T10:00:00"}`, cmp: 0},
	{name: "date-time vs date", value: `"2024-01-15"`, data: `{"x":"2024-01-15T00:00:01Z"}`, cmp: 1},
	{name: "years apart", value: `"2023-12-31T23:59:59Z"`, data: `{"x":"2024-01-01"}`, cmp: 1},
	{name: "date vs non-date text", value: `"tomorrow"`, data: `{"x":"2024-01-15"}`, cmp: -1},
	{name: "non-date text vs date", value: `"2024-01-15"`, data: `{"x":"soon"}`, cmp: 1},
	{name: "invalid month is text", value: `"2024-01-15"`, data: `{"x":"2024-13-01"}`, cmp: 1},
	{name: "date vs number (text)", value: `2024`, data: `{"x":"2024-01-15"}`, cmp: 1},
}

func TestOrdering(t *testing.T) {
	ops := []struct {
		op   string
		want func(cmp int) bool
	}{
		{">", func(c int) bool { return c > 0 }},
		{">=", func(c int) bool { return c >= 0 }},
		{"<", func(c int) bool { return c < 0 }},
		{"<=", func(c int) bool { return c <= 0 }},
	}
	for _, o := range ops {
		t.Run(o.op, func(t *testing.T) {
			for _, r := range orderingRows {
				t.Run(r.name, func(t *testing.T) {
					expr := simple("x", o.op, r.value)
					got := parse(t, expr).Eval(decode(t, r.data), nil)
					if want := o.want(r.cmp); got != want {
						t.Errorf("%s with data %s = %v, want %v", expr, r.data, got, want)
					}
				})
			}
		})
	}
}

var inRows = []row{
	{name: "string in list", value: `["A","B","C"]`, data: `{"x":"A"}`, want: true},
	{name: "string not in list", value: `["A","B","C"]`, data: `{"x":"D"}`, want: false},
	{name: "case differs", value: `["A","B"]`, data: `{"x":"a"}`, want: false},
	{name: "number in numbers", value: `[1,5,9]`, data: `{"x":5}`, want: true},
	{name: "number not in numbers", value: `[1,5,9]`, data: `{"x":6}`, want: false},
	{name: "numeric string in numbers", value: `[1,5,9]`, data: `{"x":"5"}`, want: true},
	{name: "number in numeric strings", value: `["1","5"]`, data: `{"x":5}`, want: true},
	{name: "number in padded numeric strings", value: `[" 5 "]`, data: `{"x":5}`, want: true},
	{name: "string 5.0 in strings (strict)", value: `["5"]`, data: `{"x":"5.0"}`, want: false},
	{name: "true in [1]", value: `[1]`, data: `{"x":true}`, want: true},
	{name: "true in [true]", value: `[true]`, data: `{"x":true}`, want: true},
	{name: "true in [string true]", value: `["true"]`, data: `{"x":true}`, want: false},
	{name: "missing in list with null", value: `[null,1]`, data: `{}`, want: true},
	{name: "explicit null in list with null", value: `[null]`, data: `{"x":null}`, want: true},
	{name: "missing in list without null", value: `[1,2]`, data: `{}`, want: false},
	{name: "explicit null in [0, empty, false]", value: `[0,"",false]`, data: `{"x":null}`, want: false},
	{name: "empty string in [0]", value: `[0]`, data: `{"x":""}`, want: true},
	{name: "empty list", value: `[]`, data: `{"x":"A"}`, want: false},
	{name: "array in list of arrays", value: `[[1]]`, data: `{"x":[1]}`, want: false},
	{name: "object in list of objects", value: `[{"a":1}]`, data: `{"x":{"a":1}}`, want: false},
	{name: "mixed list", value: `["A",2,true,null]`, data: `{"x":2}`, want: true},
	// value not an array: IN is false, so NOT_IN is true
	{name: "value is the same string", value: `"A"`, data: `{"x":"A"}`, want: false},
	{name: "value is a containing string", value: `"ABC"`, data: `{"x":"A"}`, want: false},
	{name: "value is a comma list string", value: `"A,B"`, data: `{"x":"A"}`, want: false},
	{name: "value is the same number", value: `5`, data: `{"x":5}`, want: false},
	{name: "value is null, field missing", value: `null`, data: `{}`, want: false},
	{name: "value is an object", value: `{"A":1}`, data: `{"x":"A"}`, want: false},
}

func TestIn(t *testing.T) {
	t.Run("IN", func(t *testing.T) { runTable(t, "IN", inRows, false) })
	t.Run("NOT_IN", func(t *testing.T) { runTable(t, "NOT_IN", inRows, true) })
}

var containsRows = []row{
	// arrays
	{name: "strings hold urgent", value: `"urgent"`, data: `{"x":["urgent","important"]}`, want: true},
	{name: "strings lack normal", value: `"urgent"`, data: `{"x":["normal"]}`, want: false},
	{name: "strings, case differs", value: `"URGENT"`, data: `{"x":["urgent"]}`, want: false},
	{name: "strings hold only a superstring", value: `"urg"`, data: `{"x":["urgent"]}`, want: false},
	{name: "numbers hold 2", value: `2`, data: `{"x":[1,2,3]}`, want: true},
	{name: "numbers lack 4", value: `4`, data: `{"x":[1,2,3]}`, want: false},
	{name: "numbers hold string 2", value: `"2"`, data: `{"x":[1,2,3]}`, want: true},
	{name: "numeric strings hold 2", value: `2`, data: `{"x":["1","2"]}`, want: true},
	{name: "numbers hold 2.0", value: `2.0`, data: `{"x":[1,2]}`, want: true},
	{name: "booleans hold true", value: `true`, data: `{"x":[false,true]}`, want: true},
	{name: "array with null holds null", value: `null`, data: `{"x":[1,null]}`, want: true},
	{name: "array without null lacks null", value: `null`, data: `{"x":[1,0,""]}`, want: false},
	{name: "empty array", value: `"a"`, data: `{"x":[]}`, want: false},
	{name: "nested array not followed", value: `1`, data: `{"x":[[1]]}`, want: false},
	{name: "array of objects never holds", value: `{"a":1}`, data: `{"x":[{"a":1}]}`, want: false},
	// strings
	{name: "text holds bug", value: `"bug"`, data: `{"x":"This is a bug fix"}`, want: true},
	{name: "text lacks feature", value: `"bug"`, data: `{"x":"New feature"}`, want: false},
	{name: "text, case differs", value: `"Bug"`, data: `{"x":"a bug"}`, want: false},
	{name: "text holds number", value: `234`, data: `{"x":"order 12345"}`, want: true},
	{name: "text lacks number", value: `99`, data: `{"x":"order 12345"}`, want: false},
	{name: "text holds decimal", value: `1.5`, data: `{"x":"v1.5"}`, want: true},
	{name: "text holds 2.0 as 2", value: `2.0`, data: `{"x":"v2"}`, want: true},
	{name: "text holds boolean", value: `true`, data: `{"x":"it is true"}`, want: true},
	{name: "text holds null as null", value: `null`, data: `{"x":"a null value"}`, want: true},
	{name: "text holds empty string", value: `""`, data: `{"x":"abc"}`, want: true},
	{name: "empty text holds empty string", value: `""`, data: `{"x":""}`, want: true},
	{name: "text holds array text", value: `["a","b"]`, data: `{"x":"x a,b y"}`, want: true},
	{name: "text holds big decimal", value: `1234567.5`, data: `{"x":"total 1234567.5 EUR"}`, want: true},
	{name: "text holds small decimal", value: `1e-7`, data: `{"x":"eps 1e-7"}`, want: true},
	// anything else holds nothing
	{name: "number field", value: `23`, data: `{"x":12345}`, want: false},
	{name: "boolean field", value: `"t"`, data: `{"x":true}`, want: false},
	{name: "object field with key", value: `"a"`, data: `{"x":{"a":1}}`, want: false},
	{name: "missing field", value: `"a"`, data: `{}`, want: false},
	{name: "missing field, null value", value: `null`, data: `{}`, want: false},
	{name: "explicit null field", value: `"a"`, data: `{"x":null}`, want: false},
}

func TestContains(t *testing.T) {
	t.Run("CONTAINS", func(t *testing.T) { runTable(t, "CONTAINS", containsRows, false) })
	t.Run("NOT_CONTAINS", func(t *testing.T) { runTable(t, "NOT_CONTAINS", containsRows, true) })
}

var startsWithRows = []row{
	{name: "admin prefix", value: `"admin"`, data: `{"x":"admin@example.com"}`, want: true},
	{name: "other prefix", value: `"admin"`, data: `{"x":"user@example.com"}`, want: false},
	{name: "case differs", value: `"Admin"`, data: `{"x":"admin@example.com"}`, want: false},
	{name: "prefix longer than text", value: `"admin@"`, data: `{"x":"admin"}`, want: false},
	{name: "empty prefix", value: `""`, data: `{"x":"abc"}`, want: true},
	{name: "empty text, empty prefix", value: `""`, data: `{"x":""}`, want: true},
	{name: "number starts with text 123", value: `"123"`, data: `{"x":12345}`, want: true},
	{name: "number starts with number 123", value: `123`, data: `{"x":12345}`, want: true},
	{name: "number does not start with 234", value: `"234"`, data: `{"x":12345}`, want: false},
	{name: "numeric text starts with number", value: `12`, data: `{"x":"12345"}`, want: true},
	{name: "decimal starts with 1.5", value: `"1.5"`, data: `{"x":1.5}`, want: true},
	{name: "5.0 is written 5", value: `"5."`, data: `{"x":5.0}`, want: false},
	{name: "negative number", value: `"-4"`, data: `{"x":-42}`, want: true},
	{name: "boolean as text", value: `"tr"`, data: `{"x":true}`, want: true},
	{name: "array as text", value: `"a,b"`, data: `{"x":["a","b","c"]}`, want: true},
	{name: "object as text", value: `"[object"`, data: `{"x":{"a":1}}`, want: true},
	{name: "missing field", value: `"a"`, data: `{}`, want: false},
	{name: "missing field, empty prefix", value: `""`, data: `{}`, want: false},
	{name: "explicit null field vs null text", value: `"nu"`, data: `{"x":null}`, want: false},
	{name: "null prefix", value: `null`, data: `{"x":"null and more"}`, want: false},
	{name: "big decimal", value: `"1234567"`, data: `{"x":1234567.5}`, want: true},
	{name: "small decimal", value: `"0.0000"`, data: `{"x":0.00001}`, want: true},
	{name: "negative zero", value: `"-"`, data: `{"x":-0}`, want: false},
}

var endsWithRows = []row{
	{name: "pdf suffix", value: `".pdf"`, data: `{"x":"document.pdf"}`, want: true},
	{name: "other suffix", value: `".pdf"`, data: `{"x":"image.jpg"}`, want: false},
	{name: "case differs", value: `".PDF"`, data: `{"x":"document.pdf"}`, want: false},
	{name: "empty suffix", value: `""`, data: `{"x":"abc"}`, want: true},
	{name: "number ends with number", value: `45`, data: `{"x":12345}`, want: true},
	{name: "number ends with text", value: `"00"`, data: `{"x":100}`, want: true},
	{name: "decimal ends with 5", value: `"5"`, data: `{"x":0.5}`, want: true},
	{name: "numeric text ends with number", value: `5`, data: `{"x":"12345"}`, want: true},
	{name: "boolean as text", value: `"lse"`, data: `{"x":false}`, want: true},
	{name: "array as text", value: `"b,c"`, data: `{"x":["a","b","c"]}`, want: true},
	{name: "array with null element", value: `"a,"`, data: `{"x":["a",null]}`, want: true},
	{name: "missing field", value: `"a"`, data: `{}`, want: false},
	{name: "explicit null field", value: `"ll"`, data: `{"x":null}`, want: false},
	{name: "null suffix", value: `null`, data: `{"x":"is null"}`, want: false},
	{name: "big decimal", value: `".5"`, data: `{"x":1234567.5}`, want: true},
	{name: "small exponent", value: `"e-7"`, data: `{"x":1e-7}`, want: true},
}

func TestStartsEndsWith(t *testing.T) {
	t.Run("STARTS_WITH", func(t *testing.T) { runTable(t, "STARTS_WITH", startsWithRows, false) })
	t.Run("ENDS_WITH", func(t *testing.T) { runTable(t, "ENDS_WITH", endsWithRows, false) })
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestMatches(t *testing.T) {
	long200 := strings.Repeat("a", 200)
	long201 := strings.Repeat("a", 201)
	input10000 := strings.Repeat("x", 9999) + "y"
	input10001 := strings.Repeat("x", 10000) + "y"
	rows := []row{
		{name: "valid pattern matches", value: `"^[A-Z]{3}-\\d{3}$"`, data: `{"x":"ABC-123"}`, want: true},
		{name: "valid pattern, case differs", value: `"^[A-Z]{3}-\\d{3}$"`, data: `{"x":"abc-123"}`, want: false},
		{name: "valid pattern, too short", value: `"^[A-Z]{3}-\\d{3}$"`, data: `{"x":"XYZ"}`, want: false},
		{name: "unanchored pattern finds inside", value: `"ABC"`, data: `{"x":"xxABCxx"}`, want: true},
		{name: "case-insensitive flag", value: `"(?i)^abc$"`, data: `{"x":"ABC"}`, want: true},
		{name: "unicode class", value: `"^\\p{L}+$"`, data: `{"x":"Zürich"}`, want: true},
		{name: "empty pattern matches everything", value: `""`, data: `{"x":"abc"}`, want: true},
		{name: "invalid pattern never matches", value: `"[invalid"`, data: `{"x":"anything [invalid"}`, want: false},
		{name: "lookahead is not RE2", value: `"a(?=b)"`, data: `{"x":"ab"}`, want: false},
		{name: "backreference is not RE2", value: `"(a)\\1"`, data: `{"x":"aa"}`, want: false},
		{name: "200-char pattern used", value: jsonString(long200), data: `{"x":` + jsonString(long200) + `}`, want: true},
		{name: "201-char pattern never matches", value: jsonString(long201), data: `{"x":` + jsonString(long201) + `}`, want: false},
		{name: "nested quantifier (a+)+", value: `"(a+)+"`, data: `{"x":"aaa"}`, want: false},
		{name: "nested quantifier (a*)*", value: `"(a*)*"`, data: `{"x":"aaa"}`, want: false},
		{name: "nested quantifier (a+)*b", value: `"(a+)*b"`, data: `{"x":"aab"}`, want: false},
		{name: "heuristic also refuses harmless \\d+(-\\d+)*", value: `"^\\d+(-\\d+)*$"`, data: `{"x":"1-2-3"}`, want: false},
		{name: "quantified group without inner quantifier", value: `"^(ab)+$"`, data: `{"x":"abab"}`, want: true},
		{name: "inner quantifier without outer", value: `"^(a+)b$"`, data: `{"x":"aab"}`, want: true},
		{name: "input of 10000 chars", value: `"y$"`, data: `{"x":"` + input10000 + `"}`, want: true},
		{name: "input over 10000 chars never matches", value: `"y$"`, data: `{"x":"` + input10001 + `"}`, want: false},
		{name: "number input", value: `"^\\d+$"`, data: `{"x":12345}`, want: true},
		{name: "decimal input", value: `"^1\\.5$"`, data: `{"x":1.5}`, want: true},
		{name: "boolean input", value: `"^true$"`, data: `{"x":true}`, want: true},
		{name: "array input", value: `"^a,b$"`, data: `{"x":["a","b"]}`, want: true},
		{name: "missing field", value: `".*"`, data: `{}`, want: false},
		{name: "explicit null field", value: `"^null$"`, data: `{"x":null}`, want: false},
		{name: "null pattern", value: `null`, data: `{"x":"null"}`, want: false},
		{name: "number pattern is its text", value: `234`, data: `{"x":"12345"}`, want: true},
		{name: "non-ASCII pattern of 150 characters", value: jsonString(strings.Repeat("é", 150)), data: `{"x":"` + strings.Repeat("é", 150) + `"}`, want: true},
		{name: "non-ASCII input of 6000 characters", value: `"^é+$"`, data: `{"x":"` + strings.Repeat("é", 6000) + `"}`, want: true},
	}
	runTable(t, "MATCHES", rows, false)

	t.Run("pattern from another field", func(t *testing.T) {
		c := parse(t, `{"field":"x","operator":"MATCHES","compareToField":"p"}`)
		for _, r := range []row{
			{name: "valid", data: `{"x":"abc","p":"^a"}`, want: true},
			{name: "no match", data: `{"x":"abc","p":"^b"}`, want: false},
			{name: "invalid", data: `{"x":"abc","p":"(("}`, want: false},
			{name: "nested quantifier", data: `{"x":"aaa","p":"(a+)+"}`, want: false},
			{name: "too long", data: `{"x":"a","p":"` + long201 + `"}`, want: false},
			{name: "pattern field missing", data: `{"x":"abc"}`, want: false},
			{name: "number pattern field", data: `{"x":"12345","p":234}`, want: true},
		} {
			t.Run(r.name, func(t *testing.T) {
				if got := c.Eval(decode(t, r.data), nil); got != r.want {
					t.Errorf("data %s = %v, want %v", r.data, got, r.want)
				}
			})
		}
	})
	t.Run("pattern from the context", func(t *testing.T) {
		c := parse(t, `{"field":"x","operator":"MATCHES","value":"{{tenant.pattern}}"}`)
		env := &condition.Env{Context: map[string]any{"tenant": map[string]any{"pattern": "^T-\\d+$"}}}
		if !c.Eval(decode(t, `{"x":"T-42"}`), env) {
			t.Error("T-42 should match ^T-\\d+$ from the context")
		}
		if c.Eval(decode(t, `{"x":"X-42"}`), env) {
			t.Error("X-42 should not match")
		}
		if c.Eval(decode(t, `{"x":"T-42"}`), nil) {
			t.Error("without a context the pattern is null and never matches")
		}
	})
}

var isEmptyRows = []row{
	{name: "empty string", data: `{"x":""}`, want: true},
	{name: "blank string", data: `{"x":"   "}`, want: true},
	{name: "tabs and newlines", data: `{"x":"\t\n\r "}`, want: true},
	{name: "padded text", data: `{"x":" a "}`, want: false},
	{name: "text", data: `{"x":"Some text"}`, want: false},
	{name: "empty array", data: `{"x":[]}`, want: true},
	{name: "array of null", data: `{"x":[null]}`, want: false},
	{name: "array", data: `{"x":[1,2]}`, want: false},
	{name: "empty object", data: `{"x":{}}`, want: true},
	{name: "object with null member", data: `{"x":{"a":null}}`, want: false},
	{name: "zero", data: `{"x":0}`, want: false},
	{name: "number", data: `{"x":5}`, want: false},
	{name: "false", data: `{"x":false}`, want: false},
	{name: "true", data: `{"x":true}`, want: false},
	{name: "explicit null", data: `{"x":null}`, want: true},
	{name: "missing", data: `{}`, want: true},
	{name: "string null", data: `{"x":"null"}`, want: false},
}

func TestIsEmpty(t *testing.T) {
	t.Run("IS_EMPTY", func(t *testing.T) { runTable(t, "IS_EMPTY", isEmptyRows, false) })
	t.Run("IS_NOT_EMPTY", func(t *testing.T) { runTable(t, "IS_NOT_EMPTY", isEmptyRows, true) })
	// A value, when given anyway, is ignored.
	withValue := make([]row, len(isEmptyRows))
	for i, r := range isEmptyRows {
		r.value = `"ignored"`
		withValue[i] = r
	}
	t.Run("IS_EMPTY with a value", func(t *testing.T) { runTable(t, "IS_EMPTY", withValue, false) })
	withNull := make([]row, len(isEmptyRows))
	for i, r := range isEmptyRows {
		r.value = `null`
		withNull[i] = r
	}
	t.Run("IS_NOT_EMPTY with value null", func(t *testing.T) { runTable(t, "IS_NOT_EMPTY", withNull, true) })
}

// Every operator of the package's list is covered by a table above.
func TestEveryOperatorCovered(t *testing.T) {
	covered := map[string]bool{}
	for _, op := range []string{"=", "==", "!=", ">", ">=", "<", "<=", "IN", "NOT_IN", "CONTAINS",
		"NOT_CONTAINS", "STARTS_WITH", "ENDS_WITH", "MATCHES", "IS_EMPTY", "IS_NOT_EMPTY"} {
		covered[op] = true
	}
	if len(condition.Operators) != len(covered) {
		t.Errorf("package lists %d operators, tests cover %d", len(condition.Operators), len(covered))
	}
	for _, op := range condition.Operators {
		if !covered[string(op)] {
			t.Errorf("operator %s has no truth table", op)
		}
	}
}

// ---------------------------------------------------------------------------
// 2. paths

const pathData = `{
	"status": "ACTIVE",
	"order": {"customer": {"address": {"city": "New York", "zip": "10001"}}},
	"items": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 5}],
	"tags": ["a", "b"],
	"matrix": [[1, 2], [3, 4]],
	"byIndex": {"0": "zero", "1": "one"},
	"name": "abc",
	"n": 5,
	"flag": true,
	"nothing": null,
	"__proto__": {"polluted": true},
	"constructor": "ctor",
	"obj": {"prototype": 1, "constructor": {"name": "Object"}},
	"under_score": {"x_1": 7}
}`

func TestPaths(t *testing.T) {
	data := decode(t, pathData)
	tests := []struct {
		name, field, op, value string
		want                   bool
	}{
		{"top level", "status", "=", `"ACTIVE"`, true},
		{"dot path", "order.customer.address.city", "=", `"New York"`, true},
		{"dot path, wrong value", "order.customer.address.city", "=", `"Boston"`, false},
		{"numeric text leaf", "order.customer.address.zip", "=", `10001`, true},
		{"index then key", "items[1].qty", "=", `5`, true},
		{"index 0", "items[0].sku", "=", `"A"`, true},
		{"dot index", "items.1.qty", "=", `5`, true},
		{"index of strings", "tags[1]", "=", `"b"`, true},
		{"two indices", "matrix[1][0]", "=", `3`, true},
		{"two dot indices", "matrix.1.1", "=", `4`, true},
		{"index-like key in an object", "byIndex[1]", "=", `"one"`, true},
		{"index-like key by dot", "byIndex.0", "=", `"zero"`, true},
		{"whole array", "tags", "CONTAINS", `"a"`, true},
		{"underscore names", "under_score.x_1", "=", `7`, true},
		{"out-of-range index is null", "items[2].qty", "=", `null`, true},
		{"out-of-range index is empty", "items[2]", "IS_EMPTY", ``, true},
		{"out-of-range index is not 0", "items[99].qty", "=", `0`, false},
		{"index into an object without it", "order[0]", "IS_EMPTY", ``, true},
		{"key into an array", "items.sku", "IS_EMPTY", ``, true},
		{"path through a string is null", "name.first", "IS_EMPTY", ``, true},
		{"path through a number is null", "n.x", "=", `null`, true},
		{"path through a boolean is null", "flag.x", "IS_EMPTY", ``, true},
		{"path through null is null", "nothing.x", "=", `null`, true},
		{"missing top level is null", "absent", "=", `null`, true},
		{"missing deep path is null", "absent.deep.path", "=", `null`, true},
		{"missing deep path != value", "absent.deep.path", "!=", `"x"`, true},
		{"__proto__ is never followed", "__proto__.polluted", "=", `null`, true},
		{"__proto__ itself is null", "__proto__", "IS_EMPTY", ``, true},
		{"constructor is never followed", "constructor", "IS_EMPTY", ``, true},
		{"nested constructor is null", "obj.constructor.name", "=", `null`, true},
		{"prototype is null", "obj.prototype", "=", `null`, true},
		{"prototype is not 1", "obj.prototype", "=", `1`, false},
		// JavaScript's getNestedValue follows own properties, and length is
		// an own property of arrays and strings.
		{"array length is an own property", "items.length", "=", `2`, true},
		{"leading-zero index", "items[01].qty", "IS_EMPTY", ``, true},
		{"empty segment", "order..customer.address.city", "IS_EMPTY", ``, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr := simple(tt.field, tt.op, tt.value)
			if got := parse(t, expr).Eval(data, nil); got != tt.want {
				t.Errorf("%s = %v, want %v", expr, got, tt.want)
			}
		})
	}
}

// Evaluating never changes the data, even through forbidden keys.
func TestEvalDoesNotModifyData(t *testing.T) {
	data := decode(t, pathData)
	before, _ := json.Marshal(data)
	for _, op := range condition.Operators {
		c := parse(t, simple("__proto__.polluted", string(op), `[1]`))
		c.Eval(data, nil)
		c = parse(t, simple("items[0].qty", string(op), `"x"`))
		c.Eval(data, nil)
	}
	after, _ := json.Marshal(data)
	if string(before) != string(after) {
		t.Errorf("data changed:\n%s\n%s", before, after)
	}
}

// ---------------------------------------------------------------------------
// 3. field references and {{…}} values

func TestFieldToField(t *testing.T) {
	for _, key := range []string{"compareToField", "valueField"} {
		t.Run(key, func(t *testing.T) {
			tests := []struct {
				name, field, op, other, data string
				want                         bool
			}{
				{"greater or equal", "actualQuantity", ">=", "requiredQuantity", `{"actualQuantity":10,"requiredQuantity":8}`, true},
				{"less", "actualQuantity", ">=", "requiredQuantity", `{"actualQuantity":5,"requiredQuantity":10}`, false},
				{"nested equal", "user.role", "=", "requiredRole", `{"user":{"role":"admin"},"requiredRole":"admin"}`, true},
				{"nested differs", "user.role", "=", "requiredRole", `{"user":{"role":"user"},"requiredRole":"admin"}`, false},
				{"number vs numeric text", "total", "=", "limit", `{"total":100,"limit":"100"}`, true},
				{"dates by time", "shippedAt", ">", "orderedAt", `{"shippedAt":"2024-01-15T10:00:00+02:00","orderedAt":"2024-01-15T07:00:00Z"}`, true},
				{"both missing are equal", "a", "=", "b", `{}`, true},
				{"other missing sorts first", "a", ">", "b", `{"a":1}`, true},
				{"field missing sorts first", "a", "<", "b", `{"b":1}`, true},
				{"IN another field's array", "status", "IN", "allowed", `{"status":"B","allowed":["A","B"]}`, true},
				{"IN another field's text", "status", "IN", "allowed", `{"status":"B","allowed":"A,B"}`, false},
				{"CONTAINS another field", "tags", "CONTAINS", "wanted", `{"tags":["x","y"],"wanted":"y"}`, true},
				{"STARTS_WITH another field", "email", "STARTS_WITH", "prefix", `{"email":"admin@x","prefix":"admin"}`, true},
				{"indexed other field", "a", "=", "list[1]", `{"a":"q","list":["p","q"]}`, true},
				{"other through forbidden key", "a", "=", "constructor", `{"a":null,"constructor":"x"}`, true},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					expr := fmt.Sprintf(`{"field":%q,"operator":%q,%q:%q}`, tt.field, tt.op, key, tt.other)
					if got := parse(t, expr).Eval(decode(t, tt.data), nil); got != tt.want {
						t.Errorf("%s with %s = %v, want %v", expr, tt.data, got, tt.want)
					}
				})
			}
		})
	}
	t.Run("field reference wins over value", func(t *testing.T) {
		c := parse(t, `{"field":"a","operator":"=","value":"literal","compareToField":"b"}`)
		if !c.Eval(decode(t, `{"a":"x","b":"x"}`), nil) {
			t.Error("compareToField should be used, not value")
		}
		if c.Eval(decode(t, `{"a":"literal","b":"x"}`), nil) {
			t.Error("value should be ignored when compareToField is given")
		}
		c = parse(t, `{"field":"a","operator":"=","value":"literal","valueField":"b"}`)
		if !c.Eval(decode(t, `{"a":"x","b":"x"}`), nil) {
			t.Error("valueField should be used, not value")
		}
	})
	t.Run("the field's own value is not a reference", func(t *testing.T) {
		// "{{user.id}}" in the data is data, not a placeholder.
		c := parse(t, `{"field":"a","operator":"=","compareToField":"b"}`)
		env := &condition.Env{Context: map[string]any{"user": map[string]any{"id": "u1"}}}
		if c.Eval(decode(t, `{"a":"u1","b":"{{user.id}}"}`), env) {
			t.Error("a field's value {{user.id}} must not be resolved")
		}
	})
}

func TestReferences(t *testing.T) {
	// 23:30 at UTC-2 is 01:30 the next day in UTC: {{today}} and {{now}}
	// are UTC.
	now := time.Date(2024, 1, 15, 23, 30, 0, 0, time.FixedZone("UTC-2", -2*3600))
	env := &condition.Env{
		Now: now,
		Context: map[string]any{
			"user":         map[string]any{"id": "user-123", "email": "u@example.com", "role": "admin"},
			"tenant":       map[string]any{"id": "tenant-abc"},
			"organization": map[string]any{"id": "org-1"},
			"entityType":   "sales.order",
			"limits":       map[string]any{"max": 100.0, "codes": []any{"A", "B"}},
		},
	}
	tests := []struct {
		name, field, op, value, data string
		want                         bool
	}{
		{"today equals the UTC date", "due", "=", `"{{today}}"`, `{"due":"2024-01-16"}`, true},
		{"today is not the local date", "due", "=", `"{{today}}"`, `{"due":"2024-01-15"}`, false},
		{"due after today", "due", ">", `"{{today}}"`, `{"due":"2024-01-17"}`, true},
		{"due today is >= today", "due", ">=", `"{{today}}"`, `{"due":"2024-01-16"}`, true},
		{"due yesterday is not >= today", "due", ">=", `"{{today}}"`, `{"due":"2024-01-15"}`, false},
		{"now equals the UTC timestamp with millis", "ts", "=", `"{{now}}"`, `{"ts":"2024-01-16T01:30:00.000Z"}`, true},
		{"now as date-time compares by time", "ts", "<", `"{{now}}"`, `{"ts":"2024-01-16T01:29:59Z"}`, true},
		{"now vs the same instant in another zone", "ts", "<=", `"{{now}}"`, `{"ts":"2024-01-15T23:30:00-02:00"}`, true},
		{"now vs the same instant, >=", "ts", ">=", `"{{now}}"`, `{"ts":"2024-01-15T23:30:00-02:00"}`, true},
		{"spaces inside the braces", "due", "=", `"{{ today }}"`, `{"due":"2024-01-16"}`, true},
		{"user.id", "assignedTo", "=", `"{{user.id}}"`, `{"assignedTo":"user-123"}`, true},
		{"user.id differs", "assignedTo", "=", `"{{user.id}}"`, `{"assignedTo":"user-456"}`, false},
		{"tenant.id", "tenantId", "=", `"{{tenant.id}}"`, `{"tenantId":"tenant-abc"}`, true},
		{"organization.id", "org", "=", `"{{organization.id}}"`, `{"org":"org-1"}`, true},
		{"entityType", "kind", "=", `"{{entityType}}"`, `{"kind":"sales.order"}`, true},
		{"number from the context", "total", ">", `"{{limits.max}}"`, `{"total":150}`, true},
		{"array from the context", "code", "IN", `"{{limits.codes}}"`, `{"code":"B"}`, true},
		{"indexed path into the context", "code", "=", `"{{limits.codes[0]}}"`, `{"code":"A"}`, true},
		{"missing context path is null", "absent", "=", `"{{user.missing}}"`, `{}`, true},
		{"missing context path is not its text", "x", "=", `"{{user.missing}}"`, `{"x":"{{user.missing}}"}`, false},
		{"yesterday is not implemented (a context path)", "x", "=", `"{{yesterday}}"`, `{}`, true},
		{"forbidden key in the context", "x", "=", `"{{constructor}}"`, `{}`, true},
		{"text around braces is literal", "x", "=", `"id: {{user.id}}"`, `{"x":"id: {{user.id}}"}`, true},
		{"text after braces is literal", "x", "=", `"{{user.id}} extra"`, `{"x":"{{user.id}} extra"}`, true},
		{"literal is not resolved", "x", "=", `"id: {{user.id}}"`, `{"x":"id: user-123"}`, false},
		{"single braces are literal", "x", "=", `"{user.id}"`, `{"x":"{user.id}"}`, true},
		{"unclosed braces are literal", "x", "=", `"{{user.id"`, `{"x":"{{user.id"}`, true},
		{"empty braces are undefined", "absent", "=", `"{{}}"`, `{}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr := simple(tt.field, tt.op, tt.value)
			if got := parse(t, expr).Eval(decode(t, tt.data), env); got != tt.want {
				t.Errorf("%s with %s = %v, want %v", expr, tt.data, got, tt.want)
			}
		})
	}

	t.Run("nil context", func(t *testing.T) {
		c := parse(t, simple("assignedTo", "=", `"{{user.id}}"`))
		if c.Eval(decode(t, `{"assignedTo":"user-123"}`), &condition.Env{Now: now}) {
			t.Error("without a context {{user.id}} is null")
		}
		if !c.Eval(decode(t, `{}`), &condition.Env{Now: now}) {
			t.Error("without a context {{user.id}} is null, equal to a missing field")
		}
	})
	t.Run("zero Now is the current time", func(t *testing.T) {
		c := parse(t, simple("due", "=", `"{{today}}"`))
		for _, env := range []*condition.Env{nil, {}} {
			before := time.Now().UTC().Format("2006-01-02")
			okBefore := c.Eval(map[string]any{"due": before}, env)
			after := time.Now().UTC().Format("2006-01-02")
			okAfter := c.Eval(map[string]any{"due": after}, env)
			if !okBefore && !okAfter {
				t.Errorf("{{today}} with env %v is neither %s nor %s", env, before, after)
			}
		}
		c = parse(t, simple("ts", "<=", `"{{now}}"`))
		past := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
		if !c.Eval(map[string]any{"ts": past}, nil) {
			t.Errorf("%s should be <= {{now}}", past)
		}
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		if c.Eval(map[string]any{"ts": future}, nil) {
			t.Errorf("%s should not be <= {{now}}", future)
		}
	})
	t.Run("references are read at each evaluation", func(t *testing.T) {
		c := parse(t, simple("due", "=", `"{{today}}"`))
		data := map[string]any{"due": "2024-03-01"}
		if !c.Eval(data, &condition.Env{Now: time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)}) {
			t.Error("should hold on 2024-03-01")
		}
		if c.Eval(data, &condition.Env{Now: time.Date(2024, 3, 2, 12, 0, 0, 0, time.UTC)}) {
			t.Error("should not hold on 2024-03-02")
		}
	})
}

// ---------------------------------------------------------------------------
// 4. groups

func TestGroups(t *testing.T) {
	const (
		isActive = `{"field":"status","operator":"=","value":"ACTIVE"}`
		positive = `{"field":"qty","operator":">","value":0}`
		isVIP    = `{"field":"vip","operator":"=","value":true}`
	)
	group := func(op string, rules ...string) string {
		return fmt.Sprintf(`{"operator":%q,"rules":[%s]}`, op, strings.Join(rules, ","))
	}
	data := map[string]string{
		"active, positive, vip":   `{"status":"ACTIVE","qty":3,"vip":true}`,
		"active, positive":        `{"status":"ACTIVE","qty":3,"vip":false}`,
		"active only":             `{"status":"ACTIVE","qty":0}`,
		"positive only":           `{"status":"CLOSED","qty":3}`,
		"none":                    `{"status":"CLOSED","qty":0}`,
		"empty":                   `{}`,
		"inactive, positive, vip": `{"status":"CLOSED","qty":3,"vip":true}`,
	}
	tests := []struct {
		name, expr string
		want       map[string]bool
	}{
		{"AND of one", group("AND", isActive), map[string]bool{
			"active, positive": true, "active only": true, "positive only": false, "none": false, "empty": false}},
		{"AND of two", group("AND", isActive, positive), map[string]bool{
			"active, positive": true, "active only": false, "positive only": false, "none": false, "empty": false}},
		{"OR of two", group("OR", isActive, positive), map[string]bool{
			"active, positive": true, "active only": true, "positive only": true, "none": false, "empty": false}},
		{"OR of one", group("OR", positive), map[string]bool{
			"active, positive": true, "active only": false, "positive only": true, "none": false}},
		{"NOT of one negates", group("NOT", isActive), map[string]bool{
			"active, positive": false, "active only": false, "positive only": true, "none": true, "empty": true}},
		{"NOT of two is false only when both hold", group("NOT", isActive, positive), map[string]bool{
			"active, positive": false, "active only": true, "positive only": true, "none": true, "empty": true}},
		{"NOT of three", group("NOT", isActive, positive, isVIP), map[string]bool{
			"active, positive, vip": false, "active, positive": true, "inactive, positive, vip": true, "none": true}},
		{"NOT of NOT", group("NOT", group("NOT", isActive)), map[string]bool{
			"active only": true, "positive only": false, "empty": false}},
		{"AND of OR and NOT", group("AND", group("OR", isActive, isVIP), group("NOT", positive)), map[string]bool{
			"active only": true, "active, positive": false, "none": false, "inactive, positive, vip": false, "empty": false}},
		{"OR of ANDs", group("OR", group("AND", isActive, positive), group("AND", isVIP, positive)), map[string]bool{
			"active, positive": true, "inactive, positive, vip": true, "active only": false, "positive only": false}},
		{"deep nesting", group("AND", group("OR", group("AND", group("NOT", group("OR", isVIP))), positive), isActive), map[string]bool{
			"active only": true, "active, positive": true, "active, positive, vip": true, "positive only": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parse(t, tt.expr)
			for name, want := range tt.want {
				if got := c.Eval(decode(t, data[name]), nil); got != want {
					t.Errorf("%s on %s (%s) = %v, want %v", tt.expr, name, data[name], got, want)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 5. validation

// nest wraps a leaf in n nested AND groups.
func nest(n int) string {
	expr := `{"field":"a","operator":"=","value":1}`
	for range n {
		expr = `{"operator":"AND","rules":[` + expr + `]}`
	}
	return expr
}

// groupOf is an AND group of n comparisons.
func groupOf(n int) string {
	rules := make([]string, n)
	for i := range rules {
		rules[i] = fmt.Sprintf(`{"field":"f%d","operator":"=","value":%d}`, i, i)
	}
	return `{"operator":"AND","rules":[` + strings.Join(rules, ",") + `]}`
}

func field(n int) string { return "f" + strings.Repeat("a", n-1) }

const safety = "Condition expression exceeds safety limits (max depth: 10, max rules per group: 50, max field path length: 200)"

func TestValidationRefuses(t *testing.T) {
	tests := []struct {
		name, expr string
		path       string // the Error's Path
		message    string // a part of the Error's Message
	}{
		{"invalid JSON", `{"field":`, "", "JSON"},
		{"empty input", ``, "", "JSON"},
		{"trailing text", `{"field":"a","operator":"IS_EMPTY"} x`, "", "JSON"},
		{"two documents", `{"field":"a","operator":"IS_EMPTY"} {}`, "", "JSON"},
		{"trailing brace", `{"field":"a","operator":"IS_EMPTY"}}`, "", "JSON"},
		{"trailing bracket", `{"field":"a","operator":"IS_EMPTY"}]`, "", "JSON"},
		{"an array", `[{"field":"a","operator":"IS_EMPTY"}]`, "", "object"},
		{"a string", `"status = 1"`, "", "object"},
		{"a number", `1`, "", "object"},
		{"null", `null`, "", "object"},
		{"true", `true`, "", "object"},
		{"a rule that is not an object", `{"operator":"AND","rules":[5]}`, "rules[0]", "object"},
		{"a rule that is null", `{"operator":"OR","rules":[{"field":"a","operator":"IS_EMPTY"},null]}`, "rules[1]", "object"},
		{"unknown operator", `{"field":"a","operator":"LIKE","value":1}`, "operator", "must be one of"},
		{"lower-case comparison operator", `{"field":"a","operator":"in","value":[1]}`, "operator", "must be one of"},
		{"group operator on a comparison", `{"field":"a","operator":"AND","value":1}`, "operator", "must be one of"},
		{"missing operator", `{"field":"a","value":1}`, "operator", "must be one of"},
		{"operator not a string", `{"field":"a","operator":1,"value":1}`, "operator", "must be one of"},
		{"lower-case and group", `{"operator":"and","rules":[{"field":"a","operator":"IS_EMPTY"}]}`, "operator", "AND, OR or NOT"},
		{"XOR group", `{"operator":"XOR","rules":[{"field":"a","operator":"IS_EMPTY"}]}`, "operator", "AND, OR or NOT"},
		{"group without operator", `{"rules":[{"field":"a","operator":"IS_EMPTY"}]}`, "operator", "AND, OR or NOT"},
		{"comparison operator on a group", `{"operator":"=","rules":[{"field":"a","operator":"IS_EMPTY"}]}`, "operator", "AND, OR or NOT"},
		{"empty rules", `{"operator":"AND","rules":[]}`, "rules", "non-empty"},
		{"rules an object", `{"operator":"OR","rules":{"field":"a","operator":"IS_EMPTY"}}`, "rules", "non-empty"},
		{"rules a string", `{"operator":"OR","rules":"a"}`, "rules", "non-empty"},
		{"rules null", `{"operator":"NOT","rules":null}`, "rules", "non-empty"},
		{"nested empty rules", `{"operator":"AND","rules":[{"field":"a","operator":"IS_EMPTY"},{"operator":"OR","rules":[]}]}`, "rules[1].rules", "non-empty"},
		{"missing value", `{"field":"a","operator":"="}`, "value", "required"},
		{"missing value for IN", `{"field":"a","operator":"IN"}`, "value", "required"},
		{"missing value for MATCHES", `{"field":"a","operator":"MATCHES"}`, "value", "required"},
		{"missing value in a group", `{"operator":"AND","rules":[{"field":"a","operator":"IS_EMPTY"},{"field":"b","operator":">"}]}`, "rules[1].value", "required"},
		{"missing value deep", `{"operator":"NOT","rules":[{"operator":"OR","rules":[{"field":"b","operator":"!="}]}]}`, "rules[0].rules[0].value", "required"},
		{"field with a space", `{"field":"a b","operator":"=","value":1}`, "field", "field path"},
		{"field starting with a digit", `{"field":"1abc","operator":"=","value":1}`, "field", "field path"},
		{"empty field", `{"field":"","operator":"=","value":1}`, "field", "field path"},
		{"field with a dash", `{"field":"a-b","operator":"=","value":1}`, "field", "field path"},
		{"field with a dollar", `{"field":"$.a","operator":"=","value":1}`, "field", "field path"},
		{"field starting with a dot", `{"field":".a","operator":"=","value":1}`, "field", "field path"},
		{"field a number", `{"field":5,"operator":"=","value":1}`, "field", "field path"},
		{"field null", `{"field":null,"operator":"=","value":1}`, "field", "field path"},
		{"bad field in a group", `{"operator":"OR","rules":[{"field":"ok","operator":"IS_EMPTY"},{"field":"not ok","operator":"IS_EMPTY"}]}`, "rules[1].field", "field path"},
		{"bad compareToField", `{"field":"a","operator":"=","compareToField":"1x"}`, "compareToField", "field path"},
		{"compareToField a number", `{"field":"a","operator":"=","compareToField":5}`, "compareToField", "field path"},
		{"bad valueField", `{"field":"a","operator":"=","valueField":"a b"}`, "valueField", "field path"},
		{"neither shape", `{"foo":1}`, "", "must have field and operator"},
		{"empty object", `{}`, "", "must have field and operator"},
		{"operator and value only", `{"operator":"=","value":1}`, "", "must have field and operator"},
		{"neither shape in a group", `{"operator":"AND","rules":[{"foo":1}]}`, "rules[0]", "must have field and operator"},
		// safety limits, with the spec's message, checked first
		{"depth 11", nest(11), "", safety},
		{"depth 12", nest(12), "", safety},
		{"51 rules", groupOf(51), "", safety},
		{"51 rules nested", `{"operator":"OR","rules":[` + groupOf(51) + `]}`, "", safety},
		{"201-char field", simple(field(201), "IS_EMPTY", ""), "", safety},
		{"201-char field in a group", `{"operator":"AND","rules":[` + simple(field(201), "=", "1") + `]}`, "", safety},
		{"201-char compareToField", `{"field":"a","operator":"=","compareToField":"` + field(201) + `"}`, "", safety},
		{"201-char valueField", `{"field":"a","operator":"=","valueField":"` + field(201) + `"}`, "", safety},
		{"safety before an unknown operator", simple(field(201), "LIKE", "1"), "", safety},
		{"safety before an empty group", `{"operator":"AND","rules":[{"operator":"OR","rules":[]},` + strings.TrimSuffix(strings.TrimPrefix(groupOf(51), `{"operator":"AND","rules":[`), `]}`) + `]}`, "", safety},
		{"safety before a missing value", strings.Replace(nest(11), `,"value":1`, "", 1), "", safety},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := condition.Parse([]byte(tt.expr))
			if err == nil {
				t.Fatalf("Parse(%.300s) accepted, want an error at %q", tt.expr, tt.path)
			}
			if c != nil {
				t.Errorf("Parse returned a condition with its error")
			}
			var ce *condition.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not a *condition.Error", err, err)
			}
			if ce.Path != tt.path || !strings.Contains(ce.Message, tt.message) {
				t.Errorf("error = {Path: %q, Message: %q}, want Path %q and a message containing %q", ce.Path, ce.Message, tt.path, tt.message)
			}
			if msg := err.Error(); !strings.Contains(msg, "condition expression") && !strings.Contains(msg, "Condition expression") {
				t.Errorf("error text %q does not mention the condition expression", msg)
			}
			if tt.message == safety && !strings.Contains(err.Error(), "safety limits") {
				t.Errorf("error text %q does not mention the safety limits", err.Error())
			}
		})
	}
}

func TestValidationAccepts(t *testing.T) {
	tests := []struct{ name, expr string }{
		{"simple", `{"field":"status","operator":"=","value":"ACTIVE"}`},
		{"value null", `{"field":"a","operator":"=","value":null}`},
		{"value null for IN", `{"field":"a","operator":"IN","value":null}`},
		{"value an object", `{"field":"a","operator":"=","value":{"b":[1,{"c":null}]}}`},
		{"IS_EMPTY without value", `{"field":"a","operator":"IS_EMPTY"}`},
		{"IS_NOT_EMPTY without value", `{"field":"a","operator":"IS_NOT_EMPTY"}`},
		{"IS_EMPTY with value null", `{"field":"a","operator":"IS_EMPTY","value":null}`},
		{"compareToField without value", `{"field":"a","operator":">","compareToField":"b"}`},
		{"valueField without value", `{"field":"a","operator":">","valueField":"b"}`},
		{"valueField with value null (upstream form)", `{"field":"a","operator":">","valueField":"b","value":null}`},
		{"invalid regex (never matches, not refused)", `{"field":"a","operator":"MATCHES","value":"(("}`},
		{"nested quantifier (never matches, not refused)", `{"field":"a","operator":"MATCHES","value":"(a+)+"}`},
		{"underscore field", `{"field":"_a","operator":"IS_EMPTY"}`},
		{"indexed field", `{"field":"items[0].qty","operator":">","value":1}`},
		{"extra keys ignored", `{"field":"a","operator":"=","value":1,"id":"x","comment":"y"}`},
		{"whitespace around", " \n\t" + `{"field":"a","operator":"IS_EMPTY"}` + "\n "},
		{"NOT of several", `{"operator":"NOT","rules":[{"field":"a","operator":"IS_EMPTY"},{"field":"b","operator":"IS_EMPTY"}]}`},
		{"depth 10", nest(10)},
		{"depth 1", nest(1)},
		{"50 rules", groupOf(50)},
		{"50 rules nested", `{"operator":"OR","rules":[` + groupOf(50) + `]}`},
		{"200-char field", simple(field(200), "IS_EMPTY", "")},
		{"200-char compareToField", `{"field":"a","operator":"=","compareToField":"` + field(200) + `"}`},
		{"every operator", func() string {
			rules := make([]string, len(condition.Operators))
			for i, op := range condition.Operators {
				rules[i] = simple("a", string(op), `"x"`)
			}
			return `{"operator":"OR","rules":[` + strings.Join(rules, ",") + `]}`
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := condition.Parse([]byte(tt.expr))
			if err != nil {
				t.Fatalf("Parse(%.300s): %v", tt.expr, err)
			}
			if c == nil {
				t.Fatal("Parse returned no condition and no error")
			}
			evaluated(t, c).Eval(map[string]any{}, nil) // evaluates without panicking
		})
	}
}

// The limits are those of the spec.
func TestLimits(t *testing.T) {
	if condition.MaxDepth != 10 || condition.MaxRulesPerGroup != 50 || condition.MaxFieldPath != 200 {
		t.Errorf("safety limits %d/%d/%d, want 10/50/200", condition.MaxDepth, condition.MaxRulesPerGroup, condition.MaxFieldPath)
	}
	if condition.MaxPatternLength != 200 || condition.MaxMatchInput != 10000 {
		t.Errorf("MATCHES limits %d/%d, want 200/10000", condition.MaxPatternLength, condition.MaxMatchInput)
	}
	// A 10-deep expression still evaluates right.
	c := parse(t, nest(10))
	if !c.Eval(map[string]any{"a": 1.0}, nil) || c.Eval(map[string]any{"a": 2.0}, nil) {
		t.Error("nest(10) evaluates wrongly")
	}
	// So does a 50-rule group.
	c = parse(t, groupOf(50))
	data := map[string]any{}
	for i := range 50 {
		data[fmt.Sprintf("f%d", i)] = float64(i)
	}
	if !c.Eval(data, nil) {
		t.Error("groupOf(50) should hold")
	}
	data["f49"] = 0.0
	if c.Eval(data, nil) {
		t.Error("groupOf(50) should not hold with f49 = 0")
	}
}

func TestErrorText(t *testing.T) {
	e := &condition.Error{Path: "rules[1].value", Message: "is required"}
	if got, want := e.Error(), "Invalid condition expression: rules[1].value: is required"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &condition.Error{Message: "not valid JSON"}
	if got, want := e.Error(), "Invalid condition expression: not valid JSON"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	_, err := condition.Parse([]byte(nest(11)))
	if got, want := err.Error(), "Invalid condition expression: "+safety; got != want {
		t.Errorf("safety Error() = %q, want %q", got, want)
	}
}

// ParseValue takes an expression already decoded, numbers as float64 or
// json.Number, and gives the same results as Parse.
func TestParseValue(t *testing.T) {
	const expr = `{"operator":"AND","rules":[{"field":"n","operator":">=","value":10},{"field":"s","operator":"IN","value":["a",2]}]}`
	var plain any
	if err := json.Unmarshal([]byte(expr), &plain); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(expr))
	dec.UseNumber()
	var numbers any
	if err := dec.Decode(&numbers); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"float64": plain, "json.Number": numbers} {
		t.Run(name, func(t *testing.T) {
			c, err := condition.ParseValue(v)
			if err != nil {
				t.Fatal(err)
			}
			c = evaluated(t, c)
			if !c.Eval(decode(t, `{"n":10,"s":"a"}`), nil) {
				t.Error("should hold for n=10, s=a")
			}
			if !c.Eval(decode(t, `{"n":11,"s":2}`), nil) {
				t.Error("should hold for n=11, s=2")
			}
			if c.Eval(decode(t, `{"n":9,"s":"a"}`), nil) {
				t.Error("should not hold for n=9")
			}
		})
	}
	t.Run("refusals are *Error", func(t *testing.T) {
		_, err := condition.ParseValue([]any{1})
		var ce *condition.Error
		if !errors.As(err, &ce) {
			t.Fatalf("ParseValue([1]) = %v, want a *condition.Error", err)
		}
	})
	t.Run("Go-typed values", func(t *testing.T) {
		c, err := condition.ParseValue(map[string]any{"field": "n", "operator": "=", "value": 3})
		if err != nil {
			t.Fatal(err)
		}
		c = evaluated(t, c)
		if !c.Eval(map[string]any{"n": 3.0}, nil) {
			t.Error("an int literal 3 should equal 3.0")
		}
	})
}

// ---------------------------------------------------------------------------
// concurrency and allocations

// A Condition is safe for concurrent use (run with -race).
func TestConcurrentEval(t *testing.T) {
	c := parse(t, `{"operator":"AND","rules":[
		{"field":"code","operator":"MATCHES","value":"^[A-Z]+-\\d+$"},
		{"field":"code","operator":"MATCHES","compareToField":"pattern"},
		{"field":"due","operator":">=","value":"{{today}}"},
		{"field":"owner","operator":"=","value":"{{user.id}}"},
		{"field":"tags","operator":"CONTAINS","value":"x"}]}`)
	env := &condition.Env{Now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Context: map[string]any{"user": map[string]any{"id": "u"}}}
	data := decode(t, `{"code":"AB-1","pattern":"^A","due":"2024-06-01","owner":"u","tags":["x"]}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if !c.Eval(data, env) {
					t.Error("should hold")
					return
				}
			}
		})
	}
	wg.Wait()
}

// Comparisons of scalars allocate nothing (doc.go).
func TestScalarComparisonsDoNotAllocate(t *testing.T) {
	data := decode(t, `{"n":5,"s":"ACTIVE","ns":"42","d":"2024-01-15","t":true,"tags":["a","b"],"o":{"p":{"q":1}}}`)
	env := &condition.Env{Now: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	exprs := []struct{ expr string }{
		{simple("n", ">", "3")},
		{simple("n", "=", `"5"`)},
		{simple("s", "=", `"ACTIVE"`)},
		{simple("s", "!=", `"X"`)},
		{simple("ns", "<", "100")},
		{simple("s", ">", `"ABC"`)},
		{simple("d", "<", `"2024-02-01"`)},
		{simple("d", ">", `"2023-12-31T23:00:00+01:00"`)},
		{simple("t", "=", "true")},
		{simple("s", "IN", `["A","ACTIVE"]`)},
		{simple("n", "NOT_IN", `[1,2,3]`)},
		{simple("tags", "CONTAINS", `"b"`)},
		{simple("s", "CONTAINS", `"CTI"`)},
		{simple("s", "STARTS_WITH", `"AC"`)},
		{simple("s", "ENDS_WITH", `"VE"`)},
		{simple("s", "MATCHES", `"^A.*E$"`)},
		{simple("s", "IS_NOT_EMPTY", "")},
		{simple("missing", "IS_EMPTY", "")},
		{simple("o.p.q", "=", "1")},
		{`{"field":"n","operator":"<","compareToField":"ns"}`},
		{`{"operator":"AND","rules":[` + simple("n", ">", "3") + `,` + simple("s", "=", `"ACTIVE"`) + `,` + simple("s", "IN", `["A","ACTIVE"]`) + `]}`},
	}
	for _, tt := range exprs {
		t.Run(tt.expr, func(t *testing.T) {
			c := parse(t, tt.expr)
			if !c.Eval(data, env) {
				t.Fatalf("%s should hold", tt.expr)
			}
			if n := testing.AllocsPerRun(100, func() { c.Eval(data, env) }); n != 0 {
				t.Errorf("%v allocations per Eval, want 0", n)
			}
		})
	}
	t.Run("nil env", func(t *testing.T) {
		c := parse(t, exprs[0].expr)
		if n := testing.AllocsPerRun(100, func() { c.Eval(data, nil) }); n != 0 {
			t.Errorf("%v allocations per Eval with a nil *Env, want 0", n)
		}
	})
}

// ReadsContext: a "{{name}}" value other than now and today, anywhere in
// the tree.
func TestReadsContext(t *testing.T) {
	for expr, reads := range map[string]bool{
		`{"field":"a","operator":"=","value":1}`:                           false,
		`{"field":"a","operator":"=","value":"{{now}}"}`:                   false,
		`{"field":"a","operator":"<","value":"{{ today }}"}`:               false,
		`{"field":"a","operator":"=","value":"{{user.id}}"}`:               true,
		`{"field":"a","operator":"=","valueField":"b"}`:                    false,
		`{"operator":"AND","rules":[{"field":"a","operator":"IS_EMPTY"}]}`: false,
		`{"operator":"OR","rules":[{"field":"a","operator":"=","value":1},` +
			`{"operator":"NOT","rules":[{"field":"b","operator":"=","value":"{{tenant.id}}"}]}]}`: true,
	} {
		c, err := condition.Parse([]byte(expr))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got := c.ReadsContext(); got != reads {
			t.Errorf("%s: ReadsContext() = %v, want %v", expr, got, reads)
		}
	}
}
