package condition

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Env is what an evaluation knows besides the data: the time and the
// context that "{{name}}" values read ("user.id", "tenant.id",
// "entityType", …).
type Env struct {
	// Now is the evaluation time ({{now}}, {{today}}); zero means
	// time.Now().
	Now time.Time
	// Context is read by "{{path}}" values other than now and today.
	Context map[string]any
}

// Eval reports whether data satisfies the condition. data is JSON-shaped:
// maps, slices, strings, float64, bool and nil. A missing field is null.
func (c *Condition) Eval(data map[string]any, env *Env) bool {
	if env == nil {
		env = &Env{}
	}
	return c.root.eval(data, env)
}

type node interface {
	eval(data map[string]any, env *Env) bool
}

// group is AND, OR or NOT over its children. NOT of several children is
// true unless all hold.
type group struct {
	op       string
	children []node
}

func (g *group) eval(data map[string]any, env *Env) bool {
	switch g.op {
	case And:
		for _, c := range g.children {
			if !c.eval(data, env) {
				return false
			}
		}
		return true
	case Or:
		for _, c := range g.children {
			if c.eval(data, env) {
				return true
			}
		}
		return false
	default: // NOT
		for _, c := range g.children {
			if !c.eval(data, env) {
				return true
			}
		}
		return false
	}
}

// compare is one comparison: the field's value on the left; on the right a
// literal, a "{{name}}" reference, or another field.
type compare struct {
	op      Operator
	field   path
	other   *path // compareToField, when set
	literal operand
	ref     *reference     // the value "{{…}}", when it is one
	pattern *regexp.Regexp // MATCHES with a literal pattern, compiled once
}

func (c *compare) eval(data map[string]any, env *Env) bool {
	left := newOperand(c.field.get(data))
	right := c.literal
	switch {
	case c.other != nil:
		right = newOperand(c.other.get(data))
	case c.ref != nil:
		right = newOperand(c.ref.resolve(env))
	}
	switch c.op {
	case Eq, EqEq:
		return equal(left, right)
	case NotEq:
		return !equal(left, right)
	case Gt:
		return compareOperands(left, right) > 0
	case Gte:
		return compareOperands(left, right) >= 0
	case Lt:
		return compareOperands(left, right) < 0
	case Lte:
		return compareOperands(left, right) <= 0
	case In:
		return in(left, right)
	case NotIn:
		return !in(left, right)
	case Contains:
		return contains(left, right)
	case NotContains:
		return !contains(left, right)
	case StartsWith:
		return !left.null() && !right.null() && strings.HasPrefix(left.String(), right.String())
	case EndsWith:
		return !left.null() && !right.null() && strings.HasSuffix(left.String(), right.String())
	case Matches:
		return c.matches(left, right)
	case IsEmpty:
		return left.empty()
	case IsNotEmpty:
		return !left.empty()
	}
	return false
}

func (c *compare) matches(left, right operand) bool {
	if left.null() || right.null() {
		return false
	}
	re := c.pattern
	if re == nil && (c.other != nil || c.ref != nil) {
		re = compilePattern(right.String())
	}
	if re == nil {
		return false
	}
	s := left.String()
	return len(s) <= MaxMatchInput && re.MatchString(s)
}

// forbiddenKeys are never followed: a path through one is always null.
var forbiddenKeys = []string{"__proto__", "constructor", "prototype"}

// path is a compiled field path: "items[0].qty" is items, 0, qty.
type path struct {
	segs []string
	// dead paths go through a forbidden key and are always null.
	dead bool
}

func newPath(p string) path {
	p = strings.NewReplacer("[", ".", "]", "").Replace(p)
	segs := strings.FieldsFunc(p, func(r rune) bool { return r == '.' })
	for _, s := range segs {
		if slices.Contains(forbiddenKeys, s) {
			return path{dead: true}
		}
	}
	return path{segs: segs}
}

// get follows the path through maps and slices; anything missing is nil.
func (p path) get(v any) any {
	if p.dead {
		return nil
	}
	for _, seg := range p.segs {
		switch t := v.(type) {
		case map[string]any:
			v = t[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}

// reference is a value written as "{{name}}": {{now}} (an ISO timestamp
// in UTC with milliseconds), {{today}} (YYYY-MM-DD) or a path into
// Env.Context.
type reference struct {
	name string
	path path
}

func (r *reference) resolve(env *Env) any {
	now := env.Now
	if now.IsZero() {
		now = time.Now()
	}
	switch r.name {
	case "now":
		return now.UTC().Format("2006-01-02T15:04:05.000Z")
	case "today":
		return now.UTC().Format("2006-01-02")
	}
	return r.path.get(env.Context)
}

// kind is the JSON type of an operand.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// operand is a value with its JSON kind, decoded once.
type operand struct {
	kind kind
	b    bool
	num  float64
	str  string
	arr  []any
	obj  map[string]any
}

func newOperand(v any) operand {
	switch t := v.(type) {
	case nil:
		return operand{}
	case bool:
		return operand{kind: kindBool, b: t}
	case float64:
		return operand{kind: kindNumber, num: t}
	case int:
		return operand{kind: kindNumber, num: float64(t)}
	case int64:
		return operand{kind: kindNumber, num: float64(t)}
	case string:
		return operand{kind: kindString, str: t}
	case []any:
		return operand{kind: kindArray, arr: t}
	case map[string]any:
		return operand{kind: kindObject, obj: t}
	}
	return operand{kind: kindString, str: "unsupported"}
}

func (o operand) null() bool { return o.kind == kindNull }

// number is JavaScript's Number(v): NaN when not a number. Strings are
// trimmed, and the empty string is 0, as in JavaScript.
func (o operand) number() float64 {
	switch o.kind {
	case kindNumber:
		return o.num
	case kindBool:
		if o.b {
			return 1
		}
		return 0
	case kindNull:
		return 0
	case kindString:
		s := strings.TrimSpace(o.str)
		switch s {
		case "":
			return 0
		case "Infinity", "+Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
		// ParseFloat also reads hex, underscores, "inf" and "nan", which
		// Number() does not (hex integers aside): letters other than an
		// exponent make it NaN.
		if strings.IndexFunc(s, func(r rune) bool { return r != 'e' && r != 'E' && unicode.IsLetter(r) || r == '_' }) >= 0 {
			return math.NaN()
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	return math.NaN()
}

// String is JavaScript's String(v).
func (o operand) String() string {
	switch o.kind {
	case kindNull:
		return "null"
	case kindBool:
		return strconv.FormatBool(o.b)
	case kindNumber:
		return formatNumber(o.num)
	case kindString:
		return o.str
	case kindArray:
		parts := make([]string, len(o.arr))
		for i, e := range o.arr {
			if e != nil {
				parts[i] = newOperand(e).String()
			}
		}
		return strings.Join(parts, ",")
	}
	return "[object Object]"
}

// formatNumber writes a number the way JavaScript does for everyday
// values: integers without a fraction, others in shortest form.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// empty is IS_EMPTY: null, a blank string, an empty array or object.
func (o operand) empty() bool {
	switch o.kind {
	case kindNull:
		return true
	case kindString:
		return strings.TrimSpace(o.str) == ""
	case kindArray:
		return len(o.arr) == 0
	case kindObject:
		return len(o.obj) == 0
	}
	return false
}

// equal is = and ==: two nulls are equal, a null and anything else are
// not; if either side is a number both are compared as numbers; otherwise
// strings and booleans compare strictly (case-sensitive). Arrays and
// objects are never equal.
func equal(l, r operand) bool {
	switch {
	case l.null() && r.null():
		return true
	case l.null() || r.null():
		return false
	case l.kind == kindNumber || r.kind == kindNumber:
		return l.number() == r.number() // NaN is equal to nothing
	case l.kind != r.kind:
		return false
	case l.kind == kindString:
		return l.str == r.str
	case l.kind == kindBool:
		return l.b == r.b
	}
	return false
}

// isoDate matches the start of an ISO date or date-time.
func isoDate(s string) (time.Time, bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// compareOperands orders two values for > >= < <=: nulls first; two ISO
// dates by time; two numbers (or numeric strings) numerically; anything
// else as strings.
func compareOperands(l, r operand) int {
	switch {
	case l.null() && r.null():
		return 0
	case l.null():
		return -1
	case r.null():
		return 1
	}
	if l.kind == kindString && r.kind == kindString {
		if lt, ok := isoDate(l.str); ok {
			if rt, ok := isoDate(r.str); ok {
				return lt.Compare(rt)
			}
		}
	}
	ln, rn := l.number(), r.number()
	if !math.IsNaN(ln) && !math.IsNaN(rn) {
		switch {
		case ln < rn:
			return -1
		case ln > rn:
			return 1
		}
		return 0
	}
	return strings.Compare(l.String(), r.String())
}

// in is IN: the right side is an array holding a value equal to the left.
func in(l, r operand) bool {
	if r.kind != kindArray {
		return false
	}
	for _, e := range r.arr {
		if equal(newOperand(e), l) {
			return true
		}
	}
	return false
}

// contains is CONTAINS: an array left side holds an element equal to the
// right; a string left side contains the right as text.
func contains(l, r operand) bool {
	switch l.kind {
	case kindArray:
		for _, e := range l.arr {
			if equal(newOperand(e), r) {
				return true
			}
		}
	case kindString:
		return strings.Contains(l.str, r.String())
	}
	return false
}
