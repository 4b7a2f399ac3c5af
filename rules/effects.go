package rules

import (
	"errors"
	"maps"
	"strings"

	"github.com/tenantkit/tenantkit/internal/netguard"
	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
)

// Events of executions (not in a dry run).
const (
	// EventNotificationCreated is a NOTIFY action carried out.
	EventNotificationCreated = "business_rules.notification.created"
	// EventEmitted is an EMIT_EVENT action carried out; data.event is the
	// event name the rule gave.
	EventEmitted = "business_rules.event.emitted"
	// EventExecutionFailed is a rule whose condition could not be
	// evaluated.
	EventExecutionFailed = "business_rules.rule.execution_failed"
)

// writes are an execution's durable effects: its execution log rows,
// events and webhook calls, committed together in one transaction (with
// other executions' writes, see logWriter).
type writes struct {
	scope     store.Scope
	execution ExecutionRecord // its Rules are the log rows; none: nothing to log
	events    []pendingEvent
	calls     []WebhookCall
	// input is the redacted data as JSON, reused by log rows until a
	// SET_FIELD changes the data.
	input string
	// answerData is the input's data as written in input (no SET_FIELD
	// changed it and nothing in it was redacted), for the answer to
	// reuse (Result.AppendReturnedJSON); "" otherwise.
	answerData string
	// dataChanged reports that a SET_FIELD changed the data.
	dataChanged bool
	// outputs makes the log rows' outputs.
	outputs outputs
	// ids holds the ids of log rows idsFrom and on (nextRowID).
	ids     string
	idsFrom int
}

type pendingEvent struct {
	typ  string
	data any
}

// ruleEventData identifies the rule and execution in an event.
type ruleEventData struct {
	RuleID     string `json:"ruleId"`
	RuleName   string `json:"ruleName"`
	EntityType string `json:"entityType"`
	EntityID   string `json:"entityId"`
	EventType  string `json:"eventType"`
}

func (x *execution) ruleEvent(c *action.Context) ruleEventData {
	return ruleEventData{c.RuleID, c.RuleName, x.in.EntityType, x.in.EntityID, x.in.EventType}
}

// carryOut performs a planned action outside a dry run. What has a
// durable effect (events, webhook calls) is added to the execution's
// writes; SET_FIELD changes the execution's copy of the data.
func (x *execution) carryOut(o action.Outcome, c *action.Context) ActionResult {
	typ := action.Type(o["type"].(string))
	res := ActionResult{Type: typ, Success: true}
	var err error
	switch typ {
	case action.SetField:
		err = x.setField(o["field"].(string), o["value"])
		c.Data = x.data
	case action.Notify:
		rs, _ := o["recipients"].([]string)
		if len(rs) == 0 {
			err = errors.New("NOTIFY needs at least one recipient")
			break
		}
		template, _ := o["template"].(string)
		x.writes.events = append(x.writes.events, pendingEvent{EventNotificationCreated, struct {
			ruleEventData
			Recipients []string `json:"recipients"`
			Subject    string   `json:"subject"`
			Message    string   `json:"message"`
			Template   string   `json:"template,omitempty"`
		}{x.ruleEvent(c), rs, o["subject"].(string), o["message"].(string), template}})
	case action.EmitEvent:
		x.writes.events = append(x.writes.events, pendingEvent{EventEmitted, struct {
			ruleEventData
			Event   string `json:"event"`
			Payload any    `json:"payload"`
		}{x.ruleEvent(c), o["event"].(string), o["payload"]}})
	case action.CallWebhook:
		call := WebhookCall{TenantID: x.sc.TenantID, RuleID: c.RuleID, ExecutionID: x.id, URL: o["url"].(string),
			Method: o["method"].(string), Headers: o["headers"].(map[string]string), Body: o["body"], MessageID: newCallMessageID()}
		if err = checkWebhookURL(call.URL); err == nil {
			x.writes.calls = append(x.writes.calls, call)
		}
	}
	// ALLOW_TRANSITION, BLOCK_TRANSITION and SHOW_* are reported; LOG is
	// written with the rule's log row.
	if err != nil {
		res.Success, res.Error = false, err.Error()
	}
	return res
}

// setField sets a field (a dot path, missing objects created) in the
// execution's data, copying every object on the path first: the caller's
// data is never modified.
func (x *execution) setField(path string, value any) error {
	steps := strings.Split(path, ".")
	for _, s := range steps {
		if s == "" || s == "__proto__" || s == "constructor" || s == "prototype" {
			return errors.New("SET_FIELD field must be a dot path of names")
		}
	}
	root := maps.Clone(x.data)
	m := root
	for _, s := range steps[:len(steps)-1] {
		var next map[string]any
		switch v := m[s].(type) {
		case nil:
			next = map[string]any{}
		case map[string]any:
			next = maps.Clone(v)
		default:
			return errors.New("SET_FIELD field " + path + " goes through a value that is not an object")
		}
		m[s] = next
		m = next
	}
	m[steps[len(steps)-1]] = value
	x.data = root
	x.writes.input = "" // later log rows show the changed data
	x.writes.answerData, x.writes.dataChanged = "", true
	return nil
}

// checkWebhookURL refuses what can never be sent: not http(s), or a host
// that is not valid once canonicalised (netguard.CheckURL). Private
// addresses are refused when the call is made (after resolution). The
// error, shown in the execution's results, is the same whatever the URL.
func checkWebhookURL(raw string) error {
	if netguard.CheckURL(raw, true) != nil {
		return errors.New("CALL_WEBHOOK url must be an http or https URL with a valid host")
	}
	return nil
}

// rowID is the id of an execution's i-th rule log row (i < 65,536,
// maxLoggedRules): the execution id (a UUIDv7 ending in 0000) with i in its
// last four hex digits, so that the rows of one execution sort in the
// order their rules ran.
func rowID(executionID string, i int) string {
	return executionID[:len(executionID)-4] + string(appendRowIndex(make([]byte, 0, 4), i))
}

// appendRowIndex appends i (< 65,536) as rowID writes it: four hex digits.
func appendRowIndex(b []byte, i int) []byte {
	const hex = "0123456789abcdef"
	return append(b, hex[i>>12], hex[i>>8&0xf], hex[i>>4&0xf], hex[i&0xf])
}

// rowIDs is the most log rows' ids nextRowID makes at once.
const rowIDs = 16

// nextRowID returns rowID(x.id, i), the id of the execution's i-th log
// row. The ids are made several at a time (as many as the rules
// newExecution expects, at most rowIDs), as parts of one string, so that
// an execution of ten rules allocates one string for its rows' ids
// rather than ten.
func (w *writes) nextRowID(x *execution, i int) string {
	n := len(x.id)
	if i < w.idsFrom || i >= w.idsFrom+len(w.ids)/n {
		count := min(rowIDs, maxLoggedRules-i)
		if left := cap(w.execution.Rules) - i; left > 0 {
			count = min(count, left)
		}
		var b strings.Builder
		b.Grow(count * n)
		var digits [4]byte
		for j := range count {
			b.WriteString(x.id[:n-4])
			b.Write(appendRowIndex(digits[:0], i+j))
		}
		w.ids, w.idsFrom = b.String(), i
	}
	j := i - w.idsFrom
	return w.ids[j*n : (j+1)*n]
}

// inputContext is the log rows' input: the data as the next rule sees it
// (secrets redacted), the entity and event, and the acting user. Data that
// JSON cannot hold (NaN, infinities, channels) or that holds NUL characters
// (PostgreSQL refuses them) is a validation error on data.
func (w *writes) inputContext(x *execution) (string, error) {
	if w.input == "" {
		b, dataEnd, err := appendInput(make([]byte, 0, 256+32*len(x.data)), x)
		if err := storableJSON("data", b, err); err != nil {
			return "", err
		}
		w.input = string(b)
		if dataEnd > 0 && !w.dataChanged {
			w.answerData = w.input[inputDataAt:dataEnd]
		}
	}
	return w.input, nil
}

// storableJSON checks the JSON of an input field (err is its marshalling
// error): the log and events can hold only JSON without NUL characters.
func storableJSON(field string, b []byte, err error) error {
	switch {
	case err != nil:
		return store.Invalid(field, "must be JSON data (no NaN, infinities, channels or functions)")
	case store.JSONHasNUL(b):
		return store.Invalid(field, "must not contain the NUL character")
	}
	return nil
}

// log adds the rule's log row and, for an evaluation that failed, the
// failure event; it returns the row's id.
func (w *writes) log(x *execution, c *compiledRule, res *RuleResult, input string) string {
	executed := res.ActionsExecuted
	if executed == nil {
		executed = []ActionResult{}
	}
	out := w.outputs.output(res.ConditionResult, res.ActionsPlanned, executed)
	if len(w.execution.Rules) == 0 {
		entityID := x.in.EntityID
		if entityID == "" {
			entityID = "unknown"
		}
		w.execution = ExecutionRecord{ID: x.id, TenantID: x.sc.TenantID, OrganizationID: x.sc.OrganizationID, SetID: x.setID,
			EntityType: x.in.EntityType, EntityID: entityID, EventType: x.in.EventType, Input: input, ExecutedBy: x.sc.ActorID,
			ExecutedAt: x.now, Rules: w.execution.Rules} // Rules: the capacity newExecution gave
	}
	rowInput := input
	if input == w.execution.Input {
		rowInput = "" // the execution's
	}
	row := RuleRecord{ID: w.nextRowID(x, len(w.execution.Rules)), RuleUUID: c.rule.ID, RuleID: c.rule.RuleID,
		RuleName: c.rule.RuleName, RuleType: c.rule.RuleType, Result: res.Result, Input: rowInput,
		Output: out, ErrorMessage: res.Error, ExecutionTimeMs: res.ExecutionTimeMs}
	w.execution.Rules = append(w.execution.Rules, row)
	if res.Result == StatusError {
		w.events = append(w.events, pendingEvent{EventExecutionFailed, struct {
			ruleEventData
			Error string `json:"error"`
			LogID string `json:"logId"`
		}{ruleEventData{c.rule.RuleID, c.rule.RuleName, x.in.EntityType, x.in.EntityID, x.in.EventType}, res.Error, row.ID}})
	}
	return row.ID
}
