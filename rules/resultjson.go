package rules

import (
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
// only its identifying fields, Result and Reason.

// MarshalJSON writes the result with its rules as RuleResult.MarshalJSON
// writes them.
func (r *Result) MarshalJSON() ([]byte, error) {
	return r.appendJSON(make([]byte, 0, 512+384*len(r.ExecutedRules)))
}

// AppendJSON appends what MarshalJSON returns to b: for a caller that
// writes results into a buffer of its own (an HTTP answer's, reused
// across requests). On an error it returns nil and the error.
func (r *Result) AppendJSON(b []byte) ([]byte, error) {
	return r.appendJSON(b)
}

func (r *Result) appendJSON(b []byte) ([]byte, error) {
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
		if b, err = jsonenc.AppendObject(b, r.Data); err != nil {
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
		for i := range r.ExecutedRules {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = r.ExecutedRules[i].appendJSON(b); err != nil {
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
	b = append(b, `,"conditionResult":`...)
	b = appendBool(b, r.ConditionResult)
	b = append(b, `,"actionsPlanned":`...)
	var err error
	if b, err = appendOutcomes(b, r.ActionsPlanned); err != nil {
		return nil, err
	}
	if r.ActionsExecuted != nil {
		b = append(b, `,"actionsExecuted":`...)
		b = appendActionResults(b, r.ActionsExecuted)
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
	b := make([]byte, 0, 256+32*len(x.data))
	b = append(b, `{"data":`...)
	b, err := jsonenc.AppendObject(b, Redact(x.data))
	if err != nil {
		return nil, err
	}
	b = append(b, `,"entityId":`...)
	b = jsonenc.AppendString(b, x.in.EntityID)
	b = append(b, `,"entityType":`...)
	b = jsonenc.AppendString(b, x.in.EntityType)
	b = append(b, `,"eventType":`...)
	b = jsonenc.AppendString(b, x.in.EventType)
	b = append(b, `,"user":{"id":`...)
	b = jsonenc.AppendString(b, x.sc.ActorID)
	return append(b, "}}"...), nil
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
// others).
type outputs struct {
	buf  []byte
	seen [4]string
	n    int // outputs made; seen holds the first len(seen)
}

// output is outputJSON(conditionResult, planned, executed) as a string.
func (o *outputs) output(conditionResult bool, planned []action.Outcome, executed []ActionResult) string {
	if len(planned) == 0 && planned != nil && len(executed) == 0 && executed != nil {
		if conditionResult {
			return `{"conditionResult":true,"actionsPlanned":[],"actionsExecuted":[]}`
		}
		return `{"conditionResult":false,"actionsPlanned":[],"actionsExecuted":[]}`
	}
	if o.buf == nil {
		o.buf = make([]byte, 0, 512)
	}
	b, err := appendOutput(o.buf[:0], conditionResult, planned, executed)
	if err != nil {
		return ""
	}
	o.buf = b
	for _, s := range o.seen[:min(o.n, len(o.seen))] {
		if s == string(b) {
			return s
		}
	}
	s := string(b)
	if o.n < len(o.seen) {
		o.seen[o.n] = s
	}
	o.n++
	return s
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
