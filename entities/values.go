package entities

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

// Limits of a record's values.
const (
	maxRecordFields = 128
	maxTextValue    = 100_000 // characters of one text value
	maxRegexInput   = 10_000  // characters a regex rule looks at
)

// reservedKeys are value keys that name record columns, not fields; they
// are dropped from input.
var reservedKeys = map[string]bool{"id": true, "created_at": true, "createdAt": true, "updated_at": true, "updatedAt": true,
	"deleted_at": true, "deletedAt": true}

// fieldName is how errors name a field: "cf_<key>".
func fieldName(key string) string { return "cf_" + key }

// cleanValues checks values against the entity's definitions (by key) and
// returns them normalised: keys without the cf_ prefix, reserved keys
// dropped, each value coerced to its kind's stored form (numbers for
// integer, float and currency fields, booleans, text). Undeclared keys,
// values of the wrong kind and values breaking a validation rule are
// errors naming "cf_<key>"; nothing is returned then.
func cleanValues(defs map[string]*Definition, values map[string]any) (map[string]any, error) {
	var v store.ValidationError
	out := make(map[string]any, len(values))
	for raw, x := range values {
		key := strings.TrimPrefix(raw, "cf_")
		if reservedKeys[key] || reservedKeys[raw] {
			continue
		}
		d := defs[key]
		if d == nil {
			v.Add(fieldName(key), "Unknown custom field")
			continue
		}
		clean, msg := coerce(d, x)
		if msg == "" {
			msg = checkRules(d, clean)
		}
		if msg != "" {
			v.Add(fieldName(key), msg)
			continue
		}
		out[key] = clean
	}
	if len(out) > maxRecordFields {
		v.Add("_customFields", fmt.Sprintf("Too many custom fields (at most %d)", maxRecordFields))
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// missingRequired names the required fields absent from a new record.
func missingRequired(defs map[string]*Definition, values map[string]any) error {
	var v store.ValidationError
	for key, d := range defs {
		if _, ok := values[key]; ok {
			continue
		}
		if r := ruleNamed(d, "required"); r != nil {
			v.Add(fieldName(key), ruleMessage(r, "This field is required"))
		}
	}
	return v.Err()
}

// isFilterable reports whether d marks its field filterable.
func isFilterable(d *Definition) bool {
	f, _ := d.ConfigJSON["filterable"].(bool)
	return f
}

func multi(d *Definition) bool {
	m, _ := d.ConfigJSON["multi"].(bool)
	return m
}

// coerce returns x in the stored form of d's kind, or a message saying
// why it cannot be. null is kept (it clears the value). A multi field
// takes a list of values (a single value becomes a one-element list).
func coerce(d *Definition, x any) (any, string) {
	if x == nil {
		return nil, ""
	}
	if multi(d) || d.Kind == "attachment" {
		list, ok := asList(x)
		if !ok {
			list = []any{x}
		}
		out := make([]any, len(list))
		for i, item := range list {
			c, msg := coerceOne(d, item)
			if msg != "" {
				return nil, msg
			}
			out[i] = c
		}
		return out, ""
	}
	if _, isList := asList(x); isList {
		return nil, "Must be a single value"
	}
	return coerceOne(d, x)
}

// asList reads a list value: a decoded JSON list, or a Go slice of
// strings or numbers from a Go caller.
func asList(x any) ([]any, bool) {
	switch v := x.(type) {
	case []any:
		return v, true
	case []string:
		return toAny(v), true
	case []float64:
		return toAny(v), true
	case []int:
		return toAny(v), true
	case []int64:
		return toAny(v), true
	}
	return nil, false
}

func toAny[T any](list []T) []any {
	out := make([]any, len(list))
	for i, e := range list {
		out[i] = e
	}
	return out
}

func coerceOne(d *Definition, x any) (any, string) {
	if n, ok := x.(json.Number); ok {
		f, err := n.Float64()
		if err != nil {
			return nil, "Must be a number"
		}
		x = f
	}
	switch d.Kind {
	case "integer":
		f, ok := number(x)
		if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, "Must be a whole number"
		}
		return f, ""
	case "float", "currency":
		f, ok := number(x)
		if !ok {
			return nil, "Must be a number"
		}
		return f, ""
	case "boolean":
		switch b := x.(type) {
		case bool:
			return b, ""
		case string:
			if p, err := strconv.ParseBool(strings.TrimSpace(b)); err == nil {
				return p, ""
			}
		}
		return nil, "Must be true or false"
	case "select":
		if f, ok := number(x); ok {
			if _, isStr := x.(string); !isStr {
				x = f
			}
		}
		switch x.(type) {
		case string, float64:
		default:
			return nil, "Must be one of the options"
		}
		if s, ok := x.(string); ok && !store.Storable(s) {
			return nil, "Must be valid text"
		}
		if opts, ok := d.ConfigJSON["options"].([]any); ok && len(opts) > 0 {
			o, found := matchOption(opts, x)
			if !found {
				return nil, "Must be one of the options"
			}
			return o, "" // stored as the option is written, so filters find it
		}
		return x, ""
	case "date":
		s, ok := x.(string)
		if !ok {
			return nil, "Must be a date (YYYY-MM-DD)"
		}
		t, ok := parseDate(s)
		if !ok {
			return nil, "Must be a date (YYYY-MM-DD)"
		}
		return t.Format(time.DateOnly), ""
	case "datetime":
		s, ok := x.(string)
		if !ok {
			return nil, "Must be a date and time (RFC 3339)"
		}
		t, ok := parseDate(s)
		if !ok {
			return nil, "Must be a date and time (RFC 3339)"
		}
		return t.UTC().Format(datetimeLayout), ""
	default: // text, multiline, phone, relation, attachment, dictionary
		s, ok := x.(string)
		if !ok {
			if f, isNum := x.(float64); isNum && d.Kind != "relation" && d.Kind != "attachment" {
				return strconv.FormatFloat(f, 'f', -1, 64), ""
			}
			return nil, "Must be text"
		}
		if !store.Storable(s) {
			return nil, "Must be valid text"
		}
		if utf8.RuneCountInString(s) > maxTextValue {
			return nil, fmt.Sprintf("Must be at most %d characters", maxTextValue)
		}
		return s, ""
	}
}

// number reads a JSON number, a Go number or a numeric string.
func number(x any) (float64, bool) {
	switch n := x.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case float32:
		return number(float64(n))
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case uint:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// matchOption returns the option x stands for ("5" stands for the option
// 5 and the other way round).
func matchOption(opts []any, x any) (any, bool) {
	for _, o := range opts {
		if o == x || fmt.Sprint(o) == fmt.Sprint(x) {
			return o, true
		}
	}
	return nil, false
}

// datetimeLayout is how datetime values are stored: RFC 3339 in UTC with
// a fixed six-digit fraction, so that text order is time order (filters
// and sorting compare the stored text).
const datetimeLayout = "2006-01-02T15:04:05.000000Z"

// parseDate reads YYYY-MM-DD or an RFC 3339 date-time.
func parseDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.DateOnly, time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// rules returns d's validation rules.
func rules(d *Definition) []map[string]any {
	list, _ := d.ConfigJSON["validation"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, r := range list {
		if m, ok := r.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func ruleNamed(d *Definition, name string) map[string]any {
	for _, r := range rules(d) {
		if r["rule"] == name {
			return r
		}
	}
	return nil
}

func ruleMessage(r map[string]any, fallback string) string {
	if m, ok := r["message"].(string); ok && m != "" {
		return m
	}
	return fallback
}

// empty is what "required" refuses: null, blank text, an empty list.
func empty(x any) bool {
	switch v := x.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(v) == ""
	case []any:
		return len(v) == 0
	}
	return false
}

// checkRules applies d's validation rules to a coerced value and returns
// the first failure's message, or "". Every rule but required passes on
// an empty value; on a list, every rule but required applies to each
// element.
func checkRules(d *Definition, x any) string {
	for _, r := range rules(d) {
		name, _ := r["rule"].(string)
		if name == "required" {
			if empty(x) {
				return ruleMessage(r, "This field is required")
			}
			continue
		}
		if empty(x) {
			continue
		}
		items := []any{x}
		if list, ok := x.([]any); ok {
			items = list
		}
		for _, item := range items {
			if !rulePasses(name, r["param"], item) {
				return ruleMessage(r, defaultRuleMessage(name, r["param"]))
			}
		}
	}
	return ""
}

func rulePasses(name string, param, x any) bool {
	switch name {
	case "date":
		_, ok := parseDate(fmt.Sprint(x))
		return ok
	case "integer":
		f, ok := number(asNumberInput(x))
		return ok && f == math.Trunc(f)
	case "float":
		_, ok := number(asNumberInput(x))
		return ok
	case "lt", "lte", "gt", "gte":
		f, ok := number(asNumberInput(x))
		p, pok := param.(float64)
		if !ok || !pok {
			return false
		}
		switch name {
		case "lt":
			return f < p
		case "lte":
			return f <= p
		case "gt":
			return f > p
		}
		return f >= p
	case "eq":
		return x == param
	case "ne":
		return x != param
	case "regex":
		pattern, _ := param.(string)
		re, err := regexp.Compile(pattern)
		if err != nil {
			return false
		}
		s := fmt.Sprint(x)
		if utf8.RuneCountInString(s) > maxRegexInput {
			return false
		}
		return re.MatchString(s)
	}
	return true
}

// asNumberInput turns a value into what number reads (booleans are not
// numbers).
func asNumberInput(x any) any {
	if _, ok := x.(bool); ok {
		return nil
	}
	return x
}

func defaultRuleMessage(name string, param any) string {
	switch name {
	case "date":
		return "Must be a date"
	case "integer":
		return "Must be a whole number"
	case "float":
		return "Must be a number"
	case "lt":
		return fmt.Sprintf("Must be less than %v", param)
	case "lte":
		return fmt.Sprintf("Must be at most %v", param)
	case "gt":
		return fmt.Sprintf("Must be greater than %v", param)
	case "gte":
		return fmt.Sprintf("Must be at least %v", param)
	case "eq":
		return fmt.Sprintf("Must be %v", param)
	case "ne":
		return fmt.Sprintf("Must not be %v", param)
	case "regex":
		return "Has an invalid format"
	}
	return "Is invalid"
}
