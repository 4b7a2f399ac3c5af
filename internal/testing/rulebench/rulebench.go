// Package rulebench is the fixture the business-rules benchmarks
// share (rules, rules/condition and httpapi): a 20-field entity, ten rules
// of three comparisons each, the same comparisons written by hand as Go if
// statements (the baseline), and a set of those rules. Only tests import
// it; it is no part of the library.
package rulebench

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tenantkit/tenantkit/rules"
)

// Data is a 20-field entity as a host receives it: 10 numbers and 10
// strings. Every rule below holds on it, so a benchmark does all 30
// comparisons (no AND short-circuits).
const Data = `{
	"amount": 1250.5, "quantity": 12, "discount": 5, "weight": 3.2, "score": 88,
	"age": 41, "priority": 3, "total": 2400, "limit": 5000, "count": 7,
	"status": "ACTIVE", "country": "PL", "currency": "EUR", "channel": "web", "tier": "gold",
	"region": "EU", "category": "books", "source": "api", "type": "order", "lang": "pl"
}`

// Rules are the 10 rules: each an AND of a numeric >, a string = and
// an IN on a small array.
var Rules = [10][3]string{
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

// Group returns rule i's condition: an AND group of its three
// comparisons, as JSON.
func Group(i int) string {
	r := Rules[i]
	return fmt.Sprintf(`{"operator":"AND","rules":[%s,%s,%s]}`, r[0], r[1], r[2])
}

// HandWritten is the same 30 comparisons as a host would write them over
// map[string]any; it reports which of the ten rules hold.
func HandWritten(data map[string]any) (held [10]bool) {
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
			held[0] = true
		}
	}
	if num("quantity", 10) && str("country", "PL") {
		if c, ok := data["currency"].(string); ok && (c == "USD" || c == "EUR" || c == "PLN") {
			held[1] = true
		}
	}
	if num("discount", 1) && str("currency", "EUR") {
		if c, ok := data["channel"].(string); ok && (c == "web" || c == "app" || c == "pos") {
			held[2] = true
		}
	}
	if num("weight", 2.5) && str("channel", "web") {
		if c, ok := data["tier"].(string); ok && (c == "silver" || c == "gold" || c == "platinum") {
			held[3] = true
		}
	}
	if num("score", 50) && str("tier", "gold") {
		if c, ok := data["region"].(string); ok && (c == "US" || c == "APAC" || c == "EU") {
			held[4] = true
		}
	}
	if num("age", 18) && str("region", "EU") {
		if c, ok := data["category"].(string); ok && (c == "books" || c == "music" || c == "games") {
			held[5] = true
		}
	}
	if num("priority", 1) && str("category", "books") {
		if c, ok := data["source"].(string); ok && (c == "ui" || c == "import" || c == "api") {
			held[6] = true
		}
	}
	if num("total", 2000) && str("source", "api") {
		if c, ok := data["type"].(string); ok && (c == "order" || c == "quote" || c == "invoice") {
			held[7] = true
		}
	}
	if num("limit", 4000) && str("type", "order") {
		if c, ok := data["lang"].(string); ok && (c == "en" || c == "de" || c == "pl") {
			held[8] = true
		}
	}
	if num("count", 5) && str("lang", "pl") {
		if c, ok := data["status"].(string); ok && (c == "NEW" || c == "ACTIVE" || c == "CLOSED") {
			held[9] = true
		}
	}
	return held
}

// SetID is the set CreateSet stores.
const SetID = "BENCH"

// CreateSet stores, in ctx's scope, the ten rules as members of the set
// SetID at sequence 10, 20, … 100: the first a GUARD (ALLOW_TRANSITION
// when it holds, BLOCK_TRANSITION and SHOW_ERROR when not), the others
// VALIDATION rules (SHOW_INFO when they hold, SHOW_ERROR when not), all
// for entity type "order" and event "beforeUpdate".
func CreateSet(ctx context.Context, svc *rules.Service) error {
	if _, err := svc.CreateSet(ctx, rules.SetInput{ID: SetID, Name: "Benchmark set"}); err != nil {
		return err
	}
	yes, priority, version := true, 100, 1
	for i := range Rules {
		in := rules.RuleInput{RuleID: fmt.Sprintf("RULE_%d", i), RuleName: fmt.Sprintf("Rule %d", i), RuleType: rules.Validation,
			EntityType: "order", EventType: "beforeUpdate", ConditionExpression: json.RawMessage(Group(i)),
			SuccessActions: json.RawMessage(`[{"type":"SHOW_INFO","config":{"message":"Order checked"}}]`),
			FailureActions: json.RawMessage(`[{"type":"SHOW_ERROR","config":{"message":"Order refused"}}]`),
			Enabled:        &yes, Priority: &priority, Version: &version}
		if i == 0 {
			in.RuleType = rules.Guard
			in.SuccessActions = json.RawMessage(`[{"type":"ALLOW_TRANSITION"}]`)
			in.FailureActions = json.RawMessage(`[{"type":"BLOCK_TRANSITION"},{"type":"SHOW_ERROR","config":{"message":"Order refused"}}]`)
		}
		if _, err := svc.CreateRule(ctx, in); err != nil {
			return err
		}
		sequence := 10 * (i + 1)
		if _, err := svc.AddMember(ctx, SetID, rules.MemberInput{RuleID: in.RuleID, Sequence: &sequence}); err != nil {
			return err
		}
	}
	return nil
}
