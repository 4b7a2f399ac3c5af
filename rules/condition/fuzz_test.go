package condition_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules/condition"
)

// fuzzEnv has a fixed time and a context with the usual names.
var fuzzEnv = &condition.Env{
	Now: time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC),
	Context: map[string]any{
		"user":       map[string]any{"id": "user-1", "role": "admin"},
		"tenant":     map[string]any{"id": "tenant-1"},
		"entityType": "sales.order",
		"list":       []any{"a", 1.0, nil},
	},
}

// fuzzData are the data maps every parsed expression is evaluated on.
var fuzzData = []string{
	`{}`,
	`{"status":"ACTIVE","total":150.5,"qty":"5","tags":["a","b",3],"items":[{"qty":1},{"qty":null}],"due":"2024-01-15","at":"2024-01-15T10:00:00+02:00","ok":true,"o":{},"n":null}`,
	`{"a":[],"b":"","c":0,"d":false,"e":{"f":{"g":[[1,2],[3]]}},"s":"   ","x":"(a+)+","p":"^a","__proto__":{"x":1}}`,
}

// parseSeeds are FuzzParse's and FuzzEvaluatorsAgree's seeds.
var parseSeeds = []string{
	`{"field":"status","operator":"=","value":"ACTIVE"}`,
	`{"field":"total","operator":">","compareToField":"limit"}`,
	`{"field":"total","operator":"<=","valueField":"items[0].qty"}`,
	`{"field":"tags","operator":"CONTAINS","value":3}`,
	`{"field":"status","operator":"IN","value":["A","ACTIVE",null,1]}`,
	`{"field":"code","operator":"MATCHES","value":"^[A-Z]{3}-\\d{3}$"}`,
	`{"field":"code","operator":"MATCHES","value":"(a+)+"}`,
	`{"field":"due","operator":">=","value":"{{today}}"}`,
	`{"field":"owner","operator":"=","value":"{{user.id}}"}`,
	`{"field":"x","operator":"=","value":"{{}}"}`,
	`{"field":"notes","operator":"IS_EMPTY"}`,
	`{"operator":"NOT","rules":[{"field":"a","operator":"=","value":null},{"operator":"OR","rules":[{"field":"b","operator":"STARTS_WITH","value":12}]}]}`,
	`{"operator":"AND","rules":[]}`,
	`{"operator":"and","rules":[{"field":"a","operator":"IS_EMPTY"}]}`,
	`{"field":"1a","operator":"=","value":1}`,
	`{"field":"a..b[99].c","operator":"ENDS_WITH","value":-0}`,
	`[1,2]`,
	`{"field":"a","operator":"=","value":1e400}`,
	nest(11),
}

// FuzzParse: Parse never panics; what it accepts evaluates without
// panicking; what it refuses is refused with an *Error.
func FuzzParse(f *testing.F) {
	for _, seed := range parseSeeds {
		f.Add([]byte(seed))
	}
	data := make([]map[string]any, len(fuzzData))
	for i, d := range fuzzData {
		data[i] = decode(f, d)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := condition.Parse(raw)
		if err != nil {
			var ce *condition.Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse(%q) error %T %v is not a *condition.Error", raw, err, err)
			}
			if c != nil {
				t.Fatalf("Parse(%q) returned a condition with its error", raw)
			}
			return
		}
		if c == nil {
			t.Fatalf("Parse(%q) returned neither a condition nor an error", raw)
		}
		for _, d := range data {
			c.Eval(d, fuzzEnv)
			c.Eval(d, nil)
		}
	})
}

// fuzzConditions cover every operator, field references, {{…}} values
// and groups.
func fuzzConditions(f *testing.F) []*condition.Condition {
	values := []string{`null`, `0`, `"5"`, `"2024-01-15"`, `"{{now}}"`, `"{{user.id}}"`, `["a",1,null]`, `{"k":1}`, `true`, `"^a.*$"`}
	var out []*condition.Condition
	for _, op := range condition.Operators {
		for _, field := range []string{"x", "x.y", "x[0]", "x[1].y"} {
			for _, v := range values {
				out = append(out, parse(f, simple(field, string(op), v)))
			}
			out = append(out, parse(f, `{"field":"`+field+`","operator":"`+string(op)+`","compareToField":"y"}`))
		}
		if op == condition.IsEmpty || op == condition.IsNotEmpty {
			out = append(out, parse(f, simple("x", string(op), "")))
		}
	}
	out = append(out, parse(f, `{"operator":"NOT","rules":[{"operator":"OR","rules":[`+
		`{"field":"x","operator":"MATCHES","compareToField":"y"},{"field":"y","operator":"IN","compareToField":"x"}]},`+
		`{"field":"x","operator":"IS_NOT_EMPTY"}]}`))
	return out
}

// evalSeeds are FuzzEval's and FuzzEvaluatorsAgreeOnData's seeds.
var evalSeeds = append([]string{
	`{"x":5}`,
	`{"x":"5","y":5}`,
	`{"x":" 5 ","y":"5.0"}`,
	`{"x":null,"y":null}`,
	`{"x":[1,"a",null,[2]],"y":"a"}`,
	`{"x":{"y":{"z":1}},"y":{}}`,
	`{"x":[{"y":"2024-01-15T10:00:00Z"},{"y":"2024-02-30"}]}`,
	`{"x":"(a+)+","y":"(a+)+"}`,
	`{"x":"aaaa","y":"[invalid"}`,
	`{"x":-0,"y":1e308}`,
	`{"x":"Infinity","y":"-Infinity"}`,
	`{"x":"0x10","y":"1e400"}`,
	`{"x":"` + strings.Repeat("a", 10001) + `","y":"a+"}`,
	`{"x":true,"y":false}`,
}, fuzzData...)

// FuzzEval: evaluating fixed conditions on any JSON data never panics.
func FuzzEval(f *testing.F) {
	for _, seed := range evalSeeds {
		f.Add([]byte(seed))
	}
	conds := fuzzConditions(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		var data map[string]any
		if err := json.Unmarshal(raw, &data); err != nil {
			return
		}
		for _, c := range conds {
			a := c.Eval(data, fuzzEnv)
			if b := c.Eval(data, fuzzEnv); a != b {
				t.Fatalf("Eval is not deterministic on %s", raw)
			}
		}
	})
}
