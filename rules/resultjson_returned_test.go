package rules_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// AppendReturnedJSON, which reuses the JSON of the execution's log (its
// data, each logged rule's actions), writes what MarshalJSON writes for
// every kind of execution: data to redact in the log (the answer shows it
// unredacted), SET_FIELD changing the data, skipped, failed, erroring and
// blocked rules, placeholders in the actions, dry runs. The log's input
// is still redacted.
func TestAppendReturnedJSON(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		createRule(t, svc, ctx, xRule("GUARD", rules.Guard, condOpen, allowAct, `[{"type":"BLOCK_TRANSITION","config":{"message":"no {{data.status}}"}}]`))
		createRule(t, svc, ctx, xRule("INFO", rules.Validation, `{"field":"total","operator":">","value":100}`,
			`[{"type":"SHOW_INFO","config":{"message":"total {{data.total}} <ok> & \"fine\""}}]`, `[{"type":"SHOW_ERROR","config":{"message":"low"}}]`))
		createRule(t, svc, ctx, xRule("NONE", rules.Validation, condNever, "", ""))
		other := xRule("OTHER", rules.Validation, condOpen, "", "")
		other.EntityType = "invoice" // skipped: another entity type
		createRule(t, svc, ctx, other)
		bad := createRule(t, svc, ctx, xRule("BROKEN", rules.Validation, condOpen, "", ""))
		corruptCondition(t, db, bad.ID)
		createSet(t, svc, ctx, "ANSWER")
		for i, id := range []string{"GUARD", "INFO", "NONE", "OTHER", "BROKEN"} {
			addMember(t, svc, ctx, "ANSWER", id, i)
		}
		createRule(t, svc, ctx, xRule("SETS", rules.Action, condOpen, `[{"type":"SET_FIELD","config":{"field":"status","value":"DONE"}}]`, ""))
		createRule(t, svc, ctx, xRule("AFTER", rules.Validation, `{"field":"status","operator":"=","value":"DONE"}`, `[{"type":"SHOW_INFO","config":{"message":"{{data.status}}"}}]`, ""))
		createSet(t, svc, ctx, "CHANGES")
		addMember(t, svc, ctx, "CHANGES", "SETS", 0)
		addMember(t, svc, ctx, "CHANGES", "AFTER", 1)

		card := luhn("411111111111111")
		for _, c := range []struct {
			name, set string
			data      map[string]any
			dry       bool
			secret    string // a value the log's input must not hold
		}{
			{name: "plain", set: "ANSWER", data: map[string]any{"status": "OPEN", "total": 150.0, "note": "caf\u00e9 <b>\u2028", "list": []any{1.5, nil, true}}},
			{name: "blocked", set: "ANSWER", data: map[string]any{"status": "CLOSED", "total": 50.0}},
			{name: "secret key", set: "ANSWER", data: map[string]any{"status": "OPEN", "total": 150.0, "apiToken": "tok-123"}, secret: "tok-123"},
			{name: "nested secret key", set: "ANSWER", data: map[string]any{"status": "OPEN", "total": 150.0, "customer": map[string]any{"password": "pw-456"}}, secret: "pw-456"},
			{name: "card number", set: "ANSWER", data: map[string]any{"status": "OPEN", "total": 150.0, "cards": []any{card}}, secret: card},
			{name: "empty data", set: "ANSWER", data: map[string]any{}},
			{name: "set field", set: "CHANGES", data: map[string]any{"status": "OPEN", "total": 1.0}},
			{name: "set field with a secret", set: "CHANGES", data: map[string]any{"status": "OPEN", "secret": "s-789"}, secret: "s-789"},
			{name: "dry run", set: "ANSWER", data: map[string]any{"status": "OPEN", "total": 150.0}, dry: true},
		} {
			t.Run(c.name, func(t *testing.T) {
				in := orderInput(c.data)
				in.DryRun = c.dry
				res := execSet(t, svc, ctx, c.set, in)
				want, err := res.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				got, err := res.AppendReturnedJSON([]byte("prefix"))
				if err != nil || string(got) != "prefix"+string(want) {
					t.Fatalf("AppendReturnedJSON\n%s (%v)\nMarshalJSON\n%s", got, err, want)
				}
				if c.secret != "" && !strings.Contains(string(got), c.secret) {
					t.Errorf("the answer lacks the caller's %q: %s", c.secret, got)
				}
				for _, id := range res.LogIDs {
					l, err := svc.GetLog(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if c.secret != "" && strings.Contains(string(l.InputContext), c.secret) {
						t.Errorf("log %s holds %q: %s", id, c.secret, l.InputContext)
					}
				}
			})
		}

		// After a change to the result, AppendJSON writes the change.
		res := execSet(t, svc, ctx, "ANSWER", orderInput(map[string]any{"status": "OPEN", "total": 150.0}))
		res.Data["total"] = 7.0
		res.ExecutedRules[1].ActionsPlanned[0]["message"] = "changed"
		b, err := res.AppendJSON(nil)
		if err != nil || !strings.Contains(string(b), `"total":7`) || !strings.Contains(string(b), `"message":"changed"`) {
			t.Errorf("AppendJSON after a change: %s (%v)", b, err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
	}, rules.Migrations)
}
