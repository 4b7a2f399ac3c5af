package rulesapi

import (
	"net/http"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/internal/jsondec"
	"github.com/tenantkit/tenantkit/rules"
)

// DecodeRuleInput is decode[rules.Input] for the execute endpoints, the
// hottest body of the API: a body that is a plain object of rules.Input's
// fields, each spelled as documented with a value of its type (or null),
// is read by jsondec in one pass without reflection; any other body
// (another spelling, which encoding/json matches without regard to case,
// a field given twice, a wrong type, malformed JSON) is decoded by
// decode's encoding/json path, whose value or error is the answer.
func DecodeRuleInput(r *http.Request) (rules.Input, error) {
	body, err := apikit.ReadBody(r)
	if err != nil {
		return rules.Input{}, err
	}
	if in, ok := RuleInputFast(body); ok {
		return in, nil
	}
	return apikit.DecodeBody[rules.Input](body)
}

// RuleInputFast reads body as encoding/json reads it into a rules.Input,
// or reports false. A body that repeats a field is not read here
// (jsondec.ObjectOnce): encoding/json merges two "data" objects. The
// decoded strings share one copy of body (jsondec.ObjectOnceShared): an
// execution's input lives as long as its request.
func RuleInputFast(body []byte) (rules.Input, bool) {
	var in rules.Input
	m, ok := jsondec.ObjectOnceShared(body)
	if !ok {
		return in, false
	}
	for k, v := range m {
		switch k {
		case "entityType":
			ok = setString(&in.EntityType, v)
		case "entityId":
			ok = setString(&in.EntityID, v)
		case "eventType":
			ok = setString(&in.EventType, v)
		case "data":
			ok = setObject(&in.Data, v)
		case "context":
			ok = setObject(&in.Context, v)
		case "dryRun":
			switch b := v.(type) {
			case bool:
				in.DryRun = b
			case nil:
			default:
				ok = false
			}
		default:
			ok = false // unknown, or a spelling encoding/json may match
		}
		if !ok {
			return rules.Input{}, false
		}
	}
	return in, true
}

// setString sets *dst to a string value; null leaves it, as
// encoding/json does.
func setString(dst *string, v any) bool {
	switch s := v.(type) {
	case string:
		*dst = s
		return true
	case nil:
		return true
	}
	return false
}

// setObject sets *dst to an object value; null is a nil map, as
// encoding/json makes it.
func setObject(dst *map[string]any, v any) bool {
	switch o := v.(type) {
	case map[string]any:
		*dst = o
		return true
	case nil:
		*dst = nil
		return true
	}
	return false
}
