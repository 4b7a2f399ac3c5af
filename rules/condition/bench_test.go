package condition_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tenantkit/tenantkit/rules/condition"
)

// benchData is a 20-field entity as a host receives it: 10 numbers and 10
// strings. Every comparison below holds on it, so both benchmarks do all
// 30 comparisons (no AND short-circuits).
const benchData = `{
	"amount": 1250.5, "quantity": 12, "discount": 5, "weight": 3.2, "score": 88,
	"age": 41, "priority": 3, "total": 2400, "limit": 5000, "count": 7,
	"status": "ACTIVE", "country": "PL", "currency": "EUR", "channel": "web", "tier": "gold",
	"region": "EU", "category": "books", "source": "api", "type": "order", "lang": "pl"
}`

// benchRules are the 10 rules: each an AND of a numeric >, a string = and
// an IN on a small array.
var benchRules = [10][3]string{
	{`{"field":"amount","operator":">","value":1000}`, `{"field":"status","operator":"=","value":"ACTIVE"}`, `{"field":"country","operator":"IN","value":["PL","DE","FR"]}`},
	{`{"field":"quantity","operator":">","value":10}`, `{"field":"country","operator":"=","value":"PL"}`, `{"field":"currency","operator":"IN","value":["USD","EUR","PLN"]}`},
	{`{"field":"discount","operator":">","value":1}`, `{"field":"currency","operator":"=","value":"EUR"}`, `{"field":"channel","operator":"IN","value":["web","app","pos"]}`},
	{`{"field":"weight","operator":">","value":2.5}`, `{"field":"channel","operator":"=","value":"web"}`, `{"field":"tier","operator":"IN","value":["silver","gold","platinum"]}`},
	{`{"field":"score","operator":">","value":50}`, `{"field":"tier","operator":"=","value":"gold"}`, `{"field":"region","operator":"IN","value":["US","APAC","EU"]}`},
	{`{"field":"age","operator":">","value":18}`, `{"field":"region","operator":"=","value":"EU"}`, `{"field":"category","operator":"IN","value":["books","music","games"]}`},
	{`{"field":"priority","operator":">","value":1}`, `{"field":"category","operator":"=","value":"books"}`, `{"field":"source","operator":"IN","value":["ui","import","api"]}`},
	{`{"field":"total","operator":">","value":2000}`, `{"field":"source","operator":"=","value":"api"}`, `{"field":"type","operator":"IN","value":["order","quote","invoice"]}`},
	{`{"field":"limit","operator":">","value":4000}`, `{"field":"type","operator":"=","value":"order"}`, `{"field":"lang","operator":"IN","value":["en","de","pl"]}`},
	{`{"field":"count","operator":">","value":5}`, `{"field":"lang","operator":"=","value":"pl"}`, `{"field":"status","operator":"IN","value":["NEW","ACTIVE","CLOSED"]}`},
}

func benchConditions(b *testing.B) []*condition.Condition {
	conds := make([]*condition.Condition, len(benchRules))
	for i, r := range benchRules {
		conds[i] = parse(b, fmt.Sprintf(`{"operator":"AND","rules":[%s,%s,%s]}`, r[0], r[1], r[2]))
	}
	return conds
}

func benchMap(b *testing.B) map[string]any {
	var data map[string]any
	if err := json.Unmarshal([]byte(benchData), &data); err != nil {
		b.Fatal(err)
	}
	if len(data) != 20 {
		b.Fatalf("%d fields, want 20", len(data))
	}
	return data
}

var sink int

// BenchmarkSetOfTenRules evaluates the 10 parsed conditions once per op.
func BenchmarkSetOfTenRules(b *testing.B) {
	conds := benchConditions(b)
	data := benchMap(b)
	env := &condition.Env{}
	for _, c := range conds {
		if !c.Eval(data, env) {
			b.Fatal("every benchmark rule should hold")
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, c := range conds {
			if c.Eval(data, env) {
				n++
			}
		}
		sink += n
	}
}

// handWritten is the same 30 comparisons as a host would write them over
// map[string]any.
func handWritten(data map[string]any) int {
	n := 0
	num := func(k string, min float64) bool {
		v, ok := data[k].(float64)
		return ok && v > min
	}
	str := func(k, want string) bool {
		v, ok := data[k].(string)
		return ok && v == want
	}
	if num("amount", 1000) && str("status", "ACTIVE") {
		if c, ok := data["country"].(string); ok && (c == "PL" || c == "DE" || c == "FR") {
			n++
		}
	}
	if num("quantity", 10) && str("country", "PL") {
		if c, ok := data["currency"].(string); ok && (c == "USD" || c == "EUR" || c == "PLN") {
			n++
		}
	}
	if num("discount", 1) && str("currency", "EUR") {
		if c, ok := data["channel"].(string); ok && (c == "web" || c == "app" || c == "pos") {
			n++
		}
	}
	if num("weight", 2.5) && str("channel", "web") {
		if c, ok := data["tier"].(string); ok && (c == "silver" || c == "gold" || c == "platinum") {
			n++
		}
	}
	if num("score", 50) && str("tier", "gold") {
		if c, ok := data["region"].(string); ok && (c == "US" || c == "APAC" || c == "EU") {
			n++
		}
	}
	if num("age", 18) && str("region", "EU") {
		if c, ok := data["category"].(string); ok && (c == "books" || c == "music" || c == "games") {
			n++
		}
	}
	if num("priority", 1) && str("category", "books") {
		if c, ok := data["source"].(string); ok && (c == "ui" || c == "import" || c == "api") {
			n++
		}
	}
	if num("total", 2000) && str("source", "api") {
		if c, ok := data["type"].(string); ok && (c == "order" || c == "quote" || c == "invoice") {
			n++
		}
	}
	if num("limit", 4000) && str("type", "order") {
		if c, ok := data["lang"].(string); ok && (c == "en" || c == "de" || c == "pl") {
			n++
		}
	}
	if num("count", 5) && str("lang", "pl") {
		if c, ok := data["status"].(string); ok && (c == "NEW" || c == "ACTIVE" || c == "CLOSED") {
			n++
		}
	}
	return n
}

// BenchmarkHandWrittenIfs does the same 30 comparisons as Go if statements.
func BenchmarkHandWrittenIfs(b *testing.B) {
	data := benchMap(b)
	if handWritten(data) != 10 {
		b.Fatal("every hand-written rule should hold")
	}
	b.ReportAllocs()
	for b.Loop() {
		sink += handWritten(data)
	}
}

// BenchmarkParse is the one-off cost of compiling one rule.
func BenchmarkParse(b *testing.B) {
	r := benchRules[0]
	raw := []byte(fmt.Sprintf(`{"operator":"AND","rules":[%s,%s,%s]}`, r[0], r[1], r[2]))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := condition.Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDateComparison is one ISO-date comparison (see the known
// allocation bug in TestScalarComparisonsDoNotAllocate).
func BenchmarkDateComparison(b *testing.B) {
	c := parse(b, `{"field":"due","operator":"<","value":"2024-02-01"}`)
	data := map[string]any{"due": "2024-01-15"}
	env := &condition.Env{}
	b.ReportAllocs()
	for b.Loop() {
		if !c.Eval(data, env) {
			b.Fatal("should hold")
		}
	}
}
