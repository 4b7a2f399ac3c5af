package condition

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Safety limits, checked before anything else.
const (
	MaxDepth         = 10
	MaxRulesPerGroup = 50
	MaxFieldPath     = 200
)

// Limits of MATCHES: a longer pattern or input never matches.
const (
	MaxPatternLength = 200
	MaxMatchInput    = 10000
)

// Operator is a comparison operator.
type Operator string

// The comparison operators.
const (
	Eq          Operator = "="
	EqEq        Operator = "=="
	NotEq       Operator = "!="
	Gt          Operator = ">"
	Gte         Operator = ">="
	Lt          Operator = "<"
	Lte         Operator = "<="
	In          Operator = "IN"
	NotIn       Operator = "NOT_IN"
	Contains    Operator = "CONTAINS"
	NotContains Operator = "NOT_CONTAINS"
	StartsWith  Operator = "STARTS_WITH"
	EndsWith    Operator = "ENDS_WITH"
	Matches     Operator = "MATCHES"
	IsEmpty     Operator = "IS_EMPTY"
	IsNotEmpty  Operator = "IS_NOT_EMPTY"
)

// Operators lists every comparison operator.
var Operators = []Operator{Eq, EqEq, NotEq, Gt, Gte, Lt, Lte, In, NotIn, Contains, NotContains,
	StartsWith, EndsWith, Matches, IsEmpty, IsNotEmpty}

// The logical operators of a group.
const (
	And = "AND"
	Or  = "OR"
	Not = "NOT"
)

// Error is why an expression is refused. Path locates the offending part
// ("rules[1].operator"); it is empty for the expression as a whole.
type Error struct {
	Path    string // see the type comment
	Message string
}

// Error returns "Invalid condition expression: ", the path when there
// is one, and the message.
func (e *Error) Error() string {
	if e.Path == "" {
		return "Invalid condition expression: " + e.Message
	}
	return "Invalid condition expression: " + e.Path + ": " + e.Message
}

// errSafety is the message of an expression beyond the safety limits.
var errSafety = fmt.Sprintf("Condition expression exceeds safety limits (max depth: %d, max rules per group: %d, max field path length: %d)",
	MaxDepth, MaxRulesPerGroup, MaxFieldPath)

var (
	fieldPattern  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.\[\]]*$`)
	nestedQuantor = regexp.MustCompile(`\(.*[+*]\).*[+*]`)
)

// Condition is a parsed, validated condition expression, ready to
// evaluate many times. It is immutable and safe for concurrent use.
type Condition struct {
	root node
}

// ReadsContext reports whether evaluating c reads Env.Context: whether it
// has a "{{name}}" value other than {{now}} and {{today}}. A caller may
// leave Env.Context nil for a condition that does not.
func (c *Condition) ReadsContext() bool { return readsContext(c.root) }

func readsContext(n node) bool {
	switch t := n.(type) {
	case *group:
		for _, child := range t.children {
			if readsContext(child) {
				return true
			}
		}
		return false
	case *compare:
		return t.ref != nil && t.ref.name != "now" && t.ref.name != "today"
	}
	return true // a node this does not know: assume it does
}

// Parse validates a condition expression (JSON) and compiles it. Every
// refusal is an *Error.
func Parse(raw []byte) (*Condition, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &Error{Message: "not valid JSON"}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &Error{Message: "not valid JSON (data after the expression)"}
	}
	return ParseValue(v)
}

// ParseValue is Parse for an expression already decoded from JSON
// (numbers as float64 or json.Number).
func ParseValue(v any) (*Condition, error) {
	if !withinLimits(v, 0) {
		return nil, &Error{Message: errSafety}
	}
	root, err := compile(v, "")
	if err != nil {
		return nil, err
	}
	return &Condition{root: root}, nil
}

// withinLimits checks depth, group sizes and field path lengths.
func withinLimits(v any, depth int) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return true
	}
	if depth > MaxDepth {
		return false
	}
	if f, ok := m["field"].(string); ok && len(f) > MaxFieldPath {
		return false
	}
	for _, key := range []string{"valueField", "compareToField"} {
		if f, ok := m[key].(string); ok && len(f) > MaxFieldPath {
			return false
		}
	}
	rules, ok := m["rules"].([]any)
	if !ok {
		return true
	}
	if len(rules) > MaxRulesPerGroup {
		return false
	}
	for _, r := range rules {
		if !withinLimits(r, depth+1) {
			return false
		}
	}
	return true
}

func compile(v any, path string) (node, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{Path: path, Message: "must be an object (a condition or a group)"}
	}
	at := func(key string) string {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	if rules, isGroup := m["rules"]; isGroup {
		op, _ := m["operator"].(string)
		if op != And && op != Or && op != Not {
			return nil, &Error{Path: at("operator"), Message: "must be AND, OR or NOT"}
		}
		list, ok := rules.([]any)
		if !ok || len(list) == 0 {
			return nil, &Error{Path: at("rules"), Message: "must be a non-empty array of conditions"}
		}
		g := &group{op: op, children: make([]node, len(list))}
		for i, r := range list {
			child, err := compile(r, fmt.Sprintf("%s[%d]", at("rules"), i))
			if err != nil {
				return nil, err
			}
			g.children[i] = child
		}
		return g, nil
	}
	if _, isSimple := m["field"]; !isSimple {
		return nil, &Error{Path: path, Message: "must have field and operator, or operator and rules"}
	}
	field, ok := m["field"].(string)
	if !ok || !fieldPattern.MatchString(field) {
		return nil, &Error{Path: at("field"), Message: "must be a field path (letters, digits, _, dots and [n] indices)"}
	}
	opName, _ := m["operator"].(string)
	op := Operator(opName)
	if !slices.Contains(Operators, op) {
		return nil, &Error{Path: at("operator"), Message: "must be one of " + operatorList()}
	}
	c := &compare{op: op, field: newPath(field)}
	otherKey := "compareToField"
	other, hasOther := m[otherKey]
	if !hasOther {
		otherKey = "valueField"
		other, hasOther = m[otherKey]
	}
	value, hasValue := m["value"]
	switch {
	case hasOther:
		name, ok := other.(string)
		if !ok || !fieldPattern.MatchString(name) {
			return nil, &Error{Path: at(otherKey), Message: "must be a field path"}
		}
		other := newPath(name)
		c.other = &other
	case hasValue:
		c.literal = newOperand(normalise(value))
		if c.literal.kind == kindArray {
			c.literal.items = make([]operand, len(c.literal.arr))
			for i, e := range c.literal.arr {
				c.literal.items[i] = newOperand(e)
			}
		}
		if s, ok := value.(string); ok {
			if name, isRef := strings.CutPrefix(s, "{{"); isRef && strings.HasSuffix(name, "}}") {
				name = strings.TrimSpace(strings.TrimSuffix(name, "}}"))
				c.ref = &reference{name: name, path: newPath(name)}
			}
		}
		if op == Matches && c.ref == nil && c.literal.kind != kindNull {
			c.pattern = compilePattern(c.literal.String())
		}
	case op == IsEmpty || op == IsNotEmpty:
	default:
		return nil, &Error{Path: at("value"), Message: "is required (use null to compare with null)"}
	}
	return c, nil
}

func operatorList() string {
	names := make([]string, len(Operators))
	for i, o := range Operators {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// normalise turns json.Number into float64 throughout a decoded value, so
// literals and data share one representation.
func normalise(v any) any {
	switch t := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return string(t)
		}
		return f
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalise(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = normalise(e)
		}
		return out
	}
	return v
}

// compilePattern compiles a MATCHES pattern under the limits, or returns
// nil: a pattern that is too long, looks like a nested quantifier, or is
// not valid RE2 never matches.
func compilePattern(p string) *regexp.Regexp {
	if longer(p, MaxPatternLength) || nestedQuantor.MatchString(p) {
		return nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil
	}
	return re
}
