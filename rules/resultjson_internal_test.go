package rules

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"unsafe"

	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
)

// reflectedRuleResult is a RuleResult as encoding/json writes it through
// field tags: the reference the hand-written encoder must match.
type reflectedRuleResult struct {
	RuleID          string           `json:"ruleId"`
	RuleName        string           `json:"ruleName"`
	RuleType        Type             `json:"ruleType"`
	Sequence        *int             `json:"sequence,omitempty"`
	Result          Status           `json:"result"`
	Reason          string           `json:"reason,omitempty"`
	ConditionResult *bool            `json:"conditionResult,omitempty"`
	ActionsPlanned  []action.Outcome `json:"actionsPlanned,omitzero"`
	ActionsExecuted []ActionResult   `json:"actionsExecuted,omitzero"`
	ExecutionTimeMs *float64         `json:"executionTimeMs,omitempty"`
	Error           string           `json:"error,omitempty"`
	LogID           string           `json:"logId,omitempty"`
}

func reflected(r *RuleResult) reflectedRuleResult {
	j := reflectedRuleResult{RuleID: r.RuleID, RuleName: r.RuleName, RuleType: r.RuleType, Sequence: r.Sequence, Result: r.Result, Reason: r.Reason}
	if r.Result != StatusSkipped {
		j.ConditionResult, j.ExecutionTimeMs = &r.ConditionResult, &r.ExecutionTimeMs
		j.ActionsPlanned, j.ActionsExecuted, j.Error, j.LogID = r.ActionsPlanned, r.ActionsExecuted, r.Error, r.LogID
		if j.ActionsPlanned == nil {
			j.ActionsPlanned = []action.Outcome{}
		}
	}
	return j
}

func reflectedResult(r *Result) ([]byte, error) {
	type plain Result
	rules := make([]reflectedRuleResult, len(r.ExecutedRules))
	for i := range r.ExecutedRules {
		rules[i] = reflected(&r.ExecutedRules[i])
	}
	if r.ExecutedRules == nil {
		rules = nil
	}
	return json.Marshal(struct {
		*plain
		ExecutedRules []reflectedRuleResult `json:"executedRules"`
	}{(*plain)(r), rules})
}

// The hand-written JSON of results is encoding/json's, byte for byte.
func TestResultJSONAsEncodingJSON(t *testing.T) {
	seq := 3
	evaluated := RuleResult{RuleID: "R-1", RuleName: "Big <order> & \u2028", RuleType: Validation, Sequence: &seq, Result: StatusSuccess,
		ConditionResult: true, ActionsPlanned: []action.Outcome{{"type": "SHOW_ERROR", "message": "too big", "n": 1.5, "list": []any{"a", nil}}, nil},
		ActionsExecuted: []ActionResult{{Type: "SHOW_ERROR", Success: true}, {Type: "CALL_WEBHOOK", Error: "refused"}},
		ExecutionTimeMs: 0.012345, Error: "", LogID: "log-1"}
	failed := RuleResult{RuleID: "R-2", RuleName: "", RuleType: Action, Result: StatusError, Error: "bad \"path\"", ExecutionTimeMs: 1e-7}
	skipped := RuleResult{RuleID: "R-3", RuleName: "Skipped", RuleType: Guard, Sequence: &seq, Result: StatusSkipped, Reason: "disabled",
		ConditionResult: true, ActionsPlanned: []action.Outcome{{"type": "LOG"}}, ExecutionTimeMs: 5, LogID: "x"}
	for _, r := range []*Result{
		{},
		{SetID: "S", SetName: "Set <1>", Allowed: true, ExecutedRules: []RuleResult{evaluated, failed, skipped}, TotalExecutionTimeMs: 12.5,
			Data: map[string]any{"total": 2500.0, "status": "NEW", "nested": map[string]any{"b": true, "a": []any{1.0}}}, LogIDs: []string{"a", "b"}},
		{ExecutedRules: []RuleResult{}, Data: map[string]any{}, LogIDs: []string{}},
		{ExecutedRules: []RuleResult{{Result: StatusFailure}}, TotalExecutionTimeMs: 1e21},
	} {
		want, werr := reflectedResult(r)
		got, gerr := r.MarshalJSON()
		if werr != nil || gerr != nil || !bytes.Equal(got, want) {
			t.Errorf("wrote\n%s (%v)\nencoding/json\n%s (%v)", got, gerr, want, werr)
		}
		for i := range r.ExecutedRules {
			want, _ := json.Marshal(reflected(&r.ExecutedRules[i]))
			got, err := json.Marshal(r.ExecutedRules[i])
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("rule: wrote\n%s (%v)\nencoding/json\n%s", got, err, want)
			}
		}
	}
	if _, err := (&Result{Data: map[string]any{"x": math.NaN()}}).MarshalJSON(); err == nil {
		t.Error("a NaN in data was written")
	}
}

// A log row's input and output are what json.Marshal wrote for them.
func TestLogJSONAsEncodingJSON(t *testing.T) {
	for _, data := range []map[string]any{
		{},
		nil,
		{"total": 2500.0, "password": "secret", "apiKey": "k", "nested": map[string]any{"token": "t", "x": []any{"<&>", nil, true}}},
		{"bad": math.Inf(1)},
	} {
		x := &execution{sc: store.Scope{ActorID: "user <1>"}, in: &Input{EntityType: "order", EntityID: "o\u2028", EventType: "beforeUpdate"}, data: data}
		want, werr := json.Marshal(map[string]any{"data": Redact(x.data), "entityType": x.in.EntityType, "entityId": x.in.EntityID,
			"eventType": x.in.EventType, "user": map[string]any{"id": x.sc.ActorID}})
		got, gerr := inputJSON(x)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Errorf("input: wrote\n%s (%v)\nencoding/json\n%s (%v)", got, gerr, want, werr)
		}
	}
	for _, c := range []struct {
		planned  []action.Outcome
		executed []ActionResult
	}{
		{nil, []ActionResult{}},
		{[]action.Outcome{}, nil},
		{[]action.Outcome{}, []ActionResult{}},
		{[]action.Outcome{{"type": "SET_FIELD", "field": "a", "value": 1.0}}, []ActionResult{{Type: "SET_FIELD", Success: true}, {Type: "NOTIFY", Error: "x"}}},
	} {
		for _, held := range []bool{true, false} {
			want, _ := json.Marshal(struct {
				ConditionResult bool             `json:"conditionResult"`
				ActionsPlanned  []action.Outcome `json:"actionsPlanned"`
				ActionsExecuted []ActionResult   `json:"actionsExecuted"`
			}{held, c.planned, c.executed})
			got, err := outputJSON(held, c.planned, c.executed)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("output: wrote\n%s (%v)\nencoding/json\n%s", got, err, want)
			}
			// The log row's string, constant for the common outputs.
			if s := outputString(held, c.planned, c.executed); s != string(want) {
				t.Errorf("output string: wrote\n%s\nencoding/json\n%s", s, want)
			}
		}
	}
	// A rule row's id is its execution's with its index in the last four
	// hex digits.
	for i, want := range map[int]string{0: "0000", 9: "0009", 10: "000a", 0x1f3: "01f3", 0xffff: "ffff"} {
		if got := rowID("01a223b1-0d8e-759c-853a-30cc52560000", i); got != "01a223b1-0d8e-759c-853a-30cc5256"+want {
			t.Errorf("rowID(_, %d) = %s, want the last four digits %s", i, got, want)
		}
	}
}

// An execution's log outputs are outputString's whatever their order,
// repeats and number (more than outputs keeps), and equal outputs share
// one string.
func TestExecutionOutputs(t *testing.T) {
	planned := func(msg string) []action.Outcome {
		return []action.Outcome{{"type": "SHOW_INFO", "severity": "info", "message": msg}}
	}
	done := []ActionResult{{Type: action.ShowInfo, Success: true}}
	var o outputs
	var first string
	for i, msg := range []string{"a", "a", "b", "c", "<d>", "e", "f", "a", "f", "b"} {
		for _, held := range []bool{true, false} {
			got := o.output(held, planned(msg), done)
			if want := outputString(held, planned(msg), done); got != want {
				t.Errorf("output %d: %s, want %s", i, got, want)
			}
			if i == 0 && held {
				first = got
			}
		}
		if got := o.output(true, []action.Outcome{}, []ActionResult{}); got != `{"conditionResult":true,"actionsPlanned":[],"actionsExecuted":[]}` {
			t.Errorf("no actions: %s", got)
		}
	}
	if again := o.output(true, planned("a"), done); unsafe.StringData(again) != unsafe.StringData(first) {
		t.Error("an output equal to an earlier one is a new string")
	}
}

// The ids of an execution's log rows are rowID's, however many rows it
// logs and whatever the rules it expected.
func TestNextRowID(t *testing.T) {
	const id = "01a223b1-0d8e-759c-853a-30cc52560000"
	for _, expected := range []int{0, 1, 3, 10, 16, 17, 40} {
		w := &writes{execution: ExecutionRecord{Rules: make([]RuleRecord, 0, expected)}}
		x := &execution{id: id}
		for i := range 50 {
			if got, want := w.nextRowID(x, i), rowID(id, i); got != want {
				t.Fatalf("%d rules expected: row %d's id is %s, want %s", expected, i, got, want)
			}
		}
	}
}

// Rules whose actions are plain texts do without the context names; a
// placeholder anywhere in an action's settings needs them.
func TestActionsReadContext(t *testing.T) {
	for _, c := range []struct {
		config map[string]any
		reads  bool
	}{
		{nil, false},
		{map[string]any{"message": "Order checked", "n": 1.5, "flag": true, "none": nil}, false},
		{map[string]any{"message": "Hello {{user.id}}"}, true},
		{map[string]any{"recipients": []any{"a@example.com", "{{data.email}}"}}, true},
		{map[string]any{"recipients": []string{"{{user.id}}"}}, true},
		{map[string]any{"headers": map[string]any{"X-Tenant": "{{tenant.id}}"}}, true},
		{map[string]any{"headers": map[string]string{"X-Tenant": "{{tenant.id}}"}}, true},
		{map[string]any{"body": map[string]any{"a": []any{map[string]any{"b": "{{entityId}}"}}}}, true},
		{map[string]any{"body": map[string]any{"a": []any{map[string]any{"b": "plain"}}}}, false},
		{map[string]any{"value": struct{ S string }{"{{x}}"}}, true}, // unknown: may
	} {
		as := []action.Action{{Type: action.ShowInfo, Config: c.config}}
		if got := actionsReadContext(as); got != c.reads {
			t.Errorf("actionsReadContext(%v) = %v, want %v", c.config, got, c.reads)
		}
		r := &Rule{SuccessActions: as}
		if got := compile(r).readsContext; got != c.reads {
			t.Errorf("a rule with the actions %v reads the context: %v, want %v", c.config, got, c.reads)
		}
	}
}

// The rules' ActionsPlanned and ActionsExecuted, cut from an execution's
// shared slices, are independent: an append to one leaves the next rule's
// as they were, and a rule without actions has empty ones, not nil (the
// results and the log write []).
func TestActionSlices(t *testing.T) {
	x := &execution{results: make([]RuleResult, 0, 3)}
	if p, e := x.plannedSlice(0), x.executedSlice(0); p == nil || e == nil {
		t.Fatalf("no actions: planned %#v, executed %#v", p, e)
	}
	var planned [][]action.Outcome
	var executed [][]ActionResult
	for i := range 9 { // beyond the first shared slices' room
		p := x.plannedSlice(1 + i%2)
		for j := range p {
			p[j] = action.Outcome{"i": i}
		}
		e := x.executedSlice(1 + i%2)
		for range 1 + i%2 {
			e = append(e, ActionResult{Type: action.Type(strconv.Itoa(i))})
		}
		if len(p) != 1+i%2 || cap(p) != len(p) || cap(e) != len(e) {
			t.Fatalf("rule %d: planned %d (cap %d), executed %d (cap %d)", i, len(p), cap(p), len(e), cap(e))
		}
		planned, executed = append(planned, p), append(executed, e)
	}
	for i := range planned {
		_ = append(planned[i], action.Outcome{"i": -1})
		_ = append(executed[i], ActionResult{Type: "appended"})
	}
	for i := range planned {
		for j := range planned[i] {
			if planned[i][j]["i"] != i || executed[i][j].Type != action.Type(strconv.Itoa(i)) {
				t.Errorf("rule %d's action %d: planned %v, executed %v", i, j, planned[i][j], executed[i][j])
			}
		}
	}
}
