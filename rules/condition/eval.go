package condition

import (
	"encoding/json"
	"errors"
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
		env = &noEnv
	}
	return c.root.eval(data, env)
}

// noEnv stands in for a nil *Env; it is never written.
var noEnv Env

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
	l := newOperand(c.field.get(data))
	left, right := &l, &c.literal
	var r operand
	switch {
	case c.other != nil:
		r = newOperand(c.other.get(data))
		right = &r
	case c.ref != nil:
		r = newOperand(c.ref.resolve(env))
		right = &r
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

func (c *compare) matches(left, right *operand) bool {
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
	return !longer(s, MaxMatchInput) && re.MatchString(s)
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
	segs := strings.Split(strings.NewReplacer("[", ".", "]", "").Replace(p), ".")
	for _, s := range segs {
		// An empty step ("a..b", "a.", "[]") names nothing, as in
		// JavaScript, where it is the key "".
		if s == "" || slices.Contains(forbiddenKeys, s) {
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
			if seg == "length" { // an array's own property
				v = float64(len(t))
				continue
			}
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(t) || strconv.Itoa(i) != seg { // "01" is not an index
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
	if r.path.dead {
		return nil
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
	// items are arr's elements as operands, decoded once for literals.
	items []operand
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
	case json.Number: // data decoded with UseNumber
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return operand{kind: kindString, str: string(t)}
		}
		return operand{kind: kindNumber, num: f}
	case string:
		return operand{kind: kindString, str: t}
	case []any:
		return operand{kind: kindArray, arr: t}
	case map[string]any:
		return operand{kind: kindObject, obj: t}
	}
	return operand{kind: kindString, str: "unsupported"}
}

func (o *operand) null() bool { return o.kind == kindNull }

// number is JavaScript's Number(v): NaN when not a number. Strings are
// trimmed, and the empty string is 0, as in JavaScript.
func (o *operand) number() float64 {
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
		if n, ok := radixNumber(s); ok {
			return n
		}
		// ParseFloat also reads hex floats, underscores, "inf" and "nan",
		// which Number() does not: letters other than an exponent make it
		// NaN.
		if strings.IndexFunc(s, func(r rune) bool { return r != 'e' && r != 'E' && unicode.IsLetter(r) || r == '_' }) >= 0 {
			return math.NaN()
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range is ±Infinity or 0, as in JavaScript
			return math.NaN()
		}
		return f
	}
	return math.NaN()
}

// radixNumber reads Number()'s 0x, 0o and 0b integers (unsigned, as in
// JavaScript).
func radixNumber(s string) (float64, bool) {
	if len(s) < 3 || s[0] != '0' {
		return 0, false
	}
	base := 0
	switch s[1] {
	case 'x', 'X':
		base = 16
	case 'o', 'O':
		base = 8
	case 'b', 'B':
		base = 2
	default:
		return 0, false
	}
	n, err := strconv.ParseUint(s[2:], base, 64)
	if err != nil {
		return math.NaN(), true
	}
	return float64(n), true
}

// String is JavaScript's String(v).
func (o *operand) String() string {
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
				item := newOperand(e)
				parts[i] = item.String()
			}
		}
		return strings.Join(parts, ",")
	}
	return "[object Object]"
}

// formatNumber writes a number as JavaScript's String() does: plain
// decimals from 1e-6 up to 1e21, exponent form ("1e-7", "1.5e+21")
// outside, and 0 for negative zero.
func formatNumber(f float64) string {
	switch {
	case f == 0:
		return "0"
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // "1e-07", "1.5e+21"
	mant, exp, _ := strings.Cut(s, "e")
	sign, digits := exp[:1], strings.TrimLeft(exp[1:], "0")
	return mant + "e" + sign + digits
}

// longer reports whether s has more than n characters (UTF-16 code units,
// as JavaScript counts them).
func longer(s string, n int) bool {
	if len(s) <= n {
		return false // a code unit takes at least one byte
	}
	units := 0
	for _, r := range s {
		units++
		if r > 0xFFFF {
			units++
		}
		if units > n {
			return true
		}
	}
	return false
}

// empty is IS_EMPTY: null, a blank string, an empty array or object.
func (o *operand) empty() bool {
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
func equal(l, r *operand) bool {
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

// isoDate reads an ISO date ("2024-01-15") or date-time
// ("2024-01-15T10:00", "…:05", "…:05.123", with "Z" or an offset; without
// one it is UTC). Only the layout that fits the text's shape is tried, so
// a string that is not a date costs no parse.
func isoDate(s string) (time.Time, bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' || !digits(s[:4]) || !digits(s[5:7]) || !digits(s[8:10]) {
		return time.Time{}, false
	}
	layout := "2006-01-02"
	switch {
	case len(s) == 10:
	case s[10] != 'T':
		return time.Time{}, false
	case strings.HasSuffix(s, "Z") || strings.LastIndexAny(s, "+-") > 10:
		layout = time.RFC3339Nano
	case len(s) == 16:
		layout = "2006-01-02T15:04"
	default:
		layout = "2006-01-02T15:04:05.999999999"
	}
	t, err := time.Parse(layout, s)
	return t, err == nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// compareOperands orders two values for > >= < <=: nulls first; two ISO
// dates by time; two numbers (or numeric strings) numerically; anything
// else as strings.
func compareOperands(l, r *operand) int {
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
func in(l, r *operand) bool {
	if r.kind != kindArray {
		return false
	}
	return r.has(l)
}

// has reports whether the array o holds an element equal to v.
func (o *operand) has(v *operand) bool {
	if o.items != nil {
		for i := range o.items {
			if equal(&o.items[i], v) {
				return true
			}
		}
		return false
	}
	for _, e := range o.arr {
		if item := newOperand(e); equal(&item, v) {
			return true
		}
	}
	return false
}

// contains is CONTAINS: an array left side holds an element equal to the
// right; a string left side contains the right as text.
func contains(l, r *operand) bool {
	switch l.kind {
	case kindArray:
		return l.has(r)
	case kindString:
		return strings.Contains(l.str, r.String())
	}
	return false
}
