package rules

import (
	"math"
	"slices"
	"strconv"

	"github.com/tenantkit/tenantkit/internal/jsonenc"
	"github.com/tenantkit/tenantkit/rules/action"
)

// The JSON of an execution's result, written without reflection
// (internal/jsonenc): the result of a set of ten rules is about 3 KB, and
// encoding it with encoding/json (reflection over the structs, the
// sorted maps of the planned actions and data, then a second pass over
// the Marshaler's output) cost a fifth of a logged execution over HTTP.
// The output is what encoding/json writes for the field tags of Result
// (executedRules last, as the encoder of an embedded struct put it),
// RuleResult and ActionResult (a test compares them): a skipped rule has
// only its identifying fields, Result and Reason. AppendReturnedJSON
// writes the same bytes, taking the data and each logged rule's actions
// from the JSON the execution's log already holds (a test compares it
// with MarshalJSON on both engines).

// MarshalJSON writes the result with its rules as RuleResult.MarshalJSON
// writes them.
func (r *Result) MarshalJSON() ([]byte, error) {
	return r.appendJSON(make([]byte, 0, 512+384*len(r.ExecutedRules)), false)
}

// AppendJSON appends what MarshalJSON returns to b: for a caller that
// writes results into a buffer of its own (an HTTP answer's, reused
// across requests). On an error it returns nil and the error.
func (r *Result) AppendJSON(b []byte) ([]byte, error) {
	return r.appendJSON(b, false)
}

// AppendReturnedJSON appends what AppendJSON appends, for a result as the
// execution returned it: the result of a logged execution reuses the JSON
// its log rows already hold instead of encoding it again (the data,
// unless something in it was redacted, and each logged rule's condition
// result and actions). It is for a caller that answers with the result
// straight away, as the HTTP API does; after a change to the result or to
// anything it holds (Data, the planned actions' maps), use AppendJSON,
// which writes the change.
func (r *Result) AppendReturnedJSON(b []byte) ([]byte, error) {
	return r.appendJSON(b, true)
}

func (r *Result) appendJSON(b []byte, returned bool) ([]byte, error) {
	b = append(b, '{')
	if r.SetID != "" {
		b = append(b, `"setId":`...)
		b = jsonenc.AppendString(b, r.SetID)
		b = append(b, ',')
	}
	if r.SetName != "" {
		b = append(b, `"setName":`...)
		b = jsonenc.AppendString(b, r.SetName)
		b = append(b, ',')
	}
	b = append(b, `"allowed":`...)
	b = appendBool(b, r.Allowed)
	b = append(b, `,"totalExecutionTimeMs":`...)
	var err error
	if b, err = jsonenc.AppendValue(b, r.TotalExecutionTimeMs); err != nil {
		return nil, err
	}
	if r.Data != nil {
		b = append(b, `,"data":`...)
		if returned && r.dataJSON != "" {
			b = append(b, r.dataJSON...)
		} else if b, err = jsonenc.AppendObject(b, r.Data); err != nil {
			return nil, err
		}
	}
	if r.LogIDs != nil {
		b = append(b, `,"logIds":`...)
		b = jsonenc.AppendStrings(b, r.LogIDs)
	}
	b = append(b, `,"executedRules":`...)
	if r.ExecutedRules == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		rows := 0 // the log rows of the rules before i
		for i := range r.ExecutedRules {
			if i > 0 {
				b = append(b, ',')
			}
			rr := &r.ExecutedRules[i]
			output := ""
			if returned && rr.LogID != "" && rows < len(r.logRows) {
				if row := &r.logRows[rows]; row.ID == rr.LogID {
					output = row.Output
				}
				rows++
			}
			if b, err = rr.appendJSONWith(b, output); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// MarshalJSON writes a skipped rule without the fields of an evaluation.
func (r RuleResult) MarshalJSON() ([]byte, error) {
	return r.appendJSON(make([]byte, 0, 384))
}

func (r *RuleResult) appendJSON(b []byte) ([]byte, error) {
	return r.appendJSONWith(b, "")
}

// appendJSONWith is appendJSON with the rule's log row's output (""
// for none): what outputJSON wrote of the condition result and actions
// is what the result writes of them, between the output's braces, when
// both action lists are there (a logged rule's always are).
func (r *RuleResult) appendJSONWith(b []byte, output string) ([]byte, error) {
	b = append(b, `{"ruleId":`...)
	b = jsonenc.AppendString(b, r.RuleID)
	b = append(b, `,"ruleName":`...)
	b = jsonenc.AppendString(b, r.RuleName)
	b = append(b, `,"ruleType":`...)
	b = jsonenc.AppendString(b, string(r.RuleType))
	if r.Sequence != nil {
		b = append(b, `,"sequence":`...)
		b = strconv.AppendInt(b, int64(*r.Sequence), 10)
	}
	b = append(b, `,"result":`...)
	b = jsonenc.AppendString(b, string(r.Result))
	if r.Reason != "" {
		b = append(b, `,"reason":`...)
		b = jsonenc.AppendString(b, r.Reason)
	}
	if r.Result == StatusSkipped {
		return append(b, '}'), nil
	}
	var err error
	if len(output) > 2 && r.ActionsPlanned != nil && r.ActionsExecuted != nil {
		b = append(b, ',')
		b = append(b, output[1:len(output)-1]...)
	} else {
		b = append(b, `,"conditionResult":`...)
		b = appendBool(b, r.ConditionResult)
		b = append(b, `,"actionsPlanned":`...)
		if b, err = appendOutcomes(b, r.ActionsPlanned); err != nil {
			return nil, err
		}
		if r.ActionsExecuted != nil {
			b = append(b, `,"actionsExecuted":`...)
			b = appendActionResults(b, r.ActionsExecuted)
		}
	}
	b = append(b, `,"executionTimeMs":`...)
	if b, err = jsonenc.AppendValue(b, r.ExecutionTimeMs); err != nil {
		return nil, err
	}
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonenc.AppendString(b, r.Error)
	}
	if r.LogID != "" {
		b = append(b, `,"logId":`...)
		b = jsonenc.AppendString(b, r.LogID)
	}
	return append(b, '}'), nil
}

// appendOutcomes writes planned actions: [] for none.
func appendOutcomes(b []byte, outcomes []action.Outcome) ([]byte, error) {
	b = append(b, '[')
	for i, o := range outcomes {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = jsonenc.AppendObject(b, o); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendActionResults writes actions carried out: [] for none.
func appendActionResults(b []byte, results []ActionResult) []byte {
	b = append(b, '[')
	for i := range results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = jsonenc.AppendString(b, string(results[i].Type))
		b = append(b, `,"success":`...)
		b = appendBool(b, results[i].Success)
		if results[i].Error != "" {
			b = append(b, `,"error":`...)
			b = jsonenc.AppendString(b, results[i].Error)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// inputJSON is the JSON of an execution log's input: the data (secrets
// redacted) and what the execution was for, as json.Marshal writes the
// map {data, entityType, entityId, eventType, user: {id}}.
func inputJSON(x *execution) ([]byte, error) {
	b, _, err := appendInput(make([]byte, 0, 256+32*len(x.data)), x)
	return b, err
}

// inputDataAt is where the data's JSON starts in inputJSON's.
const inputDataAt = len(`{"data":`)

// appendInput appends inputJSON(x) to b. When nothing in the data needed
// redacting, dataEnd is where the data's JSON ends (it starts at
// inputDataAt): the data as AppendObject writes it, which the answer
// reuses (Result.AppendReturnedJSON); otherwise dataEnd is 0.
func appendInput(b []byte, x *execution) (_ []byte, dataEnd int, err error) {
	b = append(b, `{"data":`...)
	if d, ok, err := appendUnredacted(b, x.data); err != nil {
		return nil, 0, err
	} else if ok {
		b, dataEnd = d, len(d)
	} else if b, err = jsonenc.AppendObject(b[:inputDataAt], redactMap(x.data, 0)); err != nil {
		return nil, 0, err
	}
	b = append(b, `,"entityId":`...)
	b = jsonenc.AppendString(b, x.in.EntityID)
	b = append(b, `,"entityType":`...)
	b = jsonenc.AppendString(b, x.in.EntityType)
	b = append(b, `,"eventType":`...)
	b = jsonenc.AppendString(b, x.in.EventType)
	b = append(b, `,"user":{"id":`...)
	b = jsonenc.AppendString(b, x.sc.ActorID)
	return append(b, "}}"...), dataEnd, nil
}

// appendUnredacted appends jsonenc.AppendObject(b, m) and true when
// Redact(m) is m, or reports false (b's bytes past its length are then
// garbage) when something in m needs redacting. It checks each key and
// value as it writes it (as needsRedaction does), rather than walking
// the map once to check and again to write.
func appendUnredacted(b []byte, m map[string]any) ([]byte, bool, error) {
	if m == nil {
		return append(b, "null"...), true, nil
	}
	var buf [32]string
	keys := buf[:0]
	for k := range m {
		if secretKey(k) {
			return b, false, nil
		}
		keys = append(keys, k)
	}
	slices.Sort(keys) // AppendObject's order
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, k)
		b = append(b, ':')
		v := m[k]
		if valueNeedsRedaction(v, 1) {
			return b, false, nil
		}
		var err error
		if b, err = jsonenc.AppendValue(b, v); err != nil {
			return nil, false, err
		}
	}
	return append(b, '}'), true, nil
}

// outputString is outputJSON as a string; the outputs of a rule that
// planned no actions, the most common, are constants.
func outputString(conditionResult bool, planned []action.Outcome, executed []ActionResult) string {
	return (&outputs{}).output(conditionResult, planned, executed)
}

// outputs makes an execution's log rows' outputs (outputJSON), each
// written into one buffer the execution reuses, and keeps the first few:
// rules that planned the same actions with the same outcome, common in a
// set, share one string (one allocation for the first, none for the
// others). A rule whose planned actions hold the same texts, booleans and
// numbers as a kept output's, and whose actions carried out report the
// same, has that output without writing it again.
type outputs struct {
	buf  []byte
	seen [4]seenOutput
	n    int // outputs made; seen holds the first len(seen)
}

// seenOutput is an output and what it was written from.
type seenOutput struct {
	s               string
	conditionResult bool
	planned         []action.Outcome
	executed        []ActionResult
}

// output is outputJSON(conditionResult, planned, executed) as a string.
func (o *outputs) output(conditionResult bool, planned []action.Outcome, executed []ActionResult) string {
	if len(planned) == 0 && planned != nil && len(executed) == 0 && executed != nil {
		if conditionResult {
			return `{"conditionResult":true,"actionsPlanned":[],"actionsExecuted":[]}`
		}
		return `{"conditionResult":false,"actionsPlanned":[],"actionsExecuted":[]}`
	}
	seen := o.seen[:min(o.n, len(o.seen))]
	for i := range seen {
		if e := &seen[i]; e.conditionResult == conditionResult && sameOutcomes(e.planned, planned) && sameActionResults(e.executed, executed) {
			return e.s
		}
	}
	if o.buf == nil {
		o.buf = make([]byte, 0, 512)
	}
	b, err := appendOutput(o.buf[:0], conditionResult, planned, executed)
	if err != nil {
		return ""
	}
	o.buf = b
	for i := range seen {
		if seen[i].s == string(b) {
			return seen[i].s
		}
	}
	s := string(b)
	if o.n < len(o.seen) {
		o.seen[o.n] = seenOutput{s, conditionResult, planned, executed}
	}
	o.n++
	return s
}

// sameOutcomes reports whether outcomes a and b certainly write the same
// JSON: both nil or both not, and each pair with the same keys holding
// equal texts, booleans, numbers (bit for bit: 0 and -0 differ) or nulls.
// Other values are not compared: false.
func sameOutcomes(a, b []action.Outcome) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for k, va := range a[i] {
			vb, ok := b[i][k]
			if !ok || !sameScalar(va, vb) {
				return false
			}
		}
	}
	return true
}

// sameScalar reports whether a and b are equal texts, booleans, numbers
// of the same bits, or both nil.
func sameScalar(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	}
	return false
}

// sameActionResults reports whether a and b write the same JSON: both
// nil or both not, with equal elements.
func sameActionResults(a, b []ActionResult) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// outputJSON is the JSON of a log row's output: {conditionResult,
// actionsPlanned (null for none), actionsExecuted}.
func outputJSON(conditionResult bool, planned []action.Outcome, executed []ActionResult) ([]byte, error) {
	return appendOutput(make([]byte, 0, 256), conditionResult, planned, executed)
}

// appendOutput appends outputJSON's JSON to b.
func appendOutput(b []byte, conditionResult bool, planned []action.Outcome, executed []ActionResult) ([]byte, error) {
	b = append(b, `{"conditionResult":`...)
	b = appendBool(b, conditionResult)
	b = append(b, `,"actionsPlanned":`...)
	if planned == nil {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = appendOutcomes(b, planned); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"actionsExecuted":`...)
	if executed == nil {
		b = append(b, "null"...)
	} else {
		b = appendActionResults(b, executed)
	}
	return append(b, '}'), nil
}
