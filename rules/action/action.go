package action

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/internal/netguard"
)

// Type names what an action does.
type Type string

// The action types.
const (
	AllowTransition Type = "ALLOW_TRANSITION"
	BlockTransition Type = "BLOCK_TRANSITION"
	Log             Type = "LOG"
	ShowError       Type = "SHOW_ERROR"
	ShowWarning     Type = "SHOW_WARNING"
	ShowInfo        Type = "SHOW_INFO"
	Notify          Type = "NOTIFY"
	SetField        Type = "SET_FIELD"
	CallWebhook     Type = "CALL_WEBHOOK"
	EmitEvent       Type = "EMIT_EVENT"
)

// Types lists every action type.
var Types = []Type{AllowTransition, BlockTransition, Log, ShowError, ShowWarning, ShowInfo,
	Notify, SetField, CallWebhook, EmitEvent}

// Action is one step a rule's outcome calls for: {type, config}.
type Action struct {
	Type   Type           `json:"type"`             // one of the action types (SET_FIELD, NOTIFY, ...)
	Config map[string]any `json:"config,omitempty"` // the type's settings (field and value for SET_FIELD, ...)
}

// Limits of a rule's action lists.
const (
	MaxActions       = 50
	MaxMessageLength = 5000
)

// webhookMethods are the methods CALL_WEBHOOK accepts.
var webhookMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// logLevels are the levels LOG accepts.
var logLevels = []string{"debug", "info", "warn", "error"}

// Error is why an action list is refused. Path locates the part
// ("[1].config.message"), relative to the list.
type Error struct {
	Path    string // see the type comment
	Message string
}

// Error returns the message, prefixed with the path when there is one.
func (e *Error) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// Options tune ValidateWith.
type Options struct {
	// AllowPrivateURLs accepts CALL_WEBHOOK urls whose host is plainly not
	// public (see ValidateWith).
	AllowPrivateURLs bool
}

// Validate checks an action list: known types, the config keys each type
// requires (present and of the right kind; false, 0 and "" are values),
// methods, levels and sizes. The first problem is returned as an *Error.
//
// It is ValidateWith with private URLs allowed: a CALL_WEBHOOK url must be
// http or https with a valid host (canonicalised by netguard.CheckURL, so
// a malformed numeric host such as 0x7f.1.2.3.4 is refused), and private
// destinations are refused when the call connects.
func Validate(actions []Action) error {
	return ValidateWith(actions, Options{AllowPrivateURLs: true})
}

// ValidateWith is Validate with options. Unless opts.AllowPrivateURLs, a
// CALL_WEBHOOK url whose host has no placeholder is also refused when
// netguard.CheckURL finds it plainly not public (a non-public IP literal
// in any notation, localhost, a single-label name, ...).
func ValidateWith(actions []Action, opts Options) error {
	if len(actions) > MaxActions {
		return &Error{Message: fmt.Sprintf("at most %d actions", MaxActions)}
	}
	for i, a := range actions {
		if err := validate(a, opts); err != nil {
			err.Path = fmt.Sprintf("[%d]%s", i, err.Path)
			return err
		}
	}
	return nil
}

func validate(a Action, opts Options) *Error {
	if !slices.Contains(Types, a.Type) {
		return &Error{Path: ".type", Message: "must be one of " + typeList()}
	}
	cfg := a.Config
	text := func(key string, required bool) *Error {
		v, ok := cfg[key]
		if !ok || v == nil {
			if required {
				return &Error{Path: ".config." + key, Message: "is required"}
			}
			return nil
		}
		s, isText := v.(string)
		switch {
		case !isText:
			return &Error{Path: ".config." + key, Message: "must be text"}
		case required && strings.TrimSpace(s) == "":
			return &Error{Path: ".config." + key, Message: "is required"}
		case len([]rune(s)) > MaxMessageLength:
			return &Error{Path: ".config." + key, Message: fmt.Sprintf("must be at most %d characters", MaxMessageLength)}
		}
		return nil
	}
	switch a.Type {
	case AllowTransition, BlockTransition:
		return text("message", false)
	case Log:
		if err := text("message", true); err != nil {
			return err
		}
		if lvl, ok := cfg["level"]; ok && lvl != nil {
			if s, _ := lvl.(string); !slices.Contains(logLevels, s) {
				return &Error{Path: ".config.level", Message: "must be one of " + strings.Join(logLevels, ", ")}
			}
		}
	case ShowError, ShowWarning, ShowInfo:
		return text("message", true)
	case Notify:
		if err := text("message", true); err != nil {
			return err
		}
		if len(recipients(cfg["recipients"])) == 0 {
			return &Error{Path: ".config.recipients", Message: "is required: an array of recipients or a comma-separated list"}
		}
		if err := text("subject", false); err != nil {
			return err
		}
		return text("template", false)
	case SetField:
		if err := text("field", true); err != nil {
			return err
		}
		if _, ok := cfg["value"]; !ok {
			return &Error{Path: ".config.value", Message: "is required (null, false, 0 and \"\" are values)"}
		}
	case CallWebhook:
		if err := text("url", true); err != nil {
			return err
		}
		switch err := webhookURL(cfg["url"].(string), opts.AllowPrivateURLs); {
		case errors.Is(err, netguard.ErrBlocked):
			return &Error{Path: ".config.url", Message: "must not target a private, loopback or link-local address"}
		case err != nil:
			return &Error{Path: ".config.url", Message: "must be an http or https URL with a host, or a {{placeholder}}"}
		}
		if m, ok := cfg["method"]; ok && m != nil {
			if s, _ := m.(string); !slices.Contains(webhookMethods, strings.ToUpper(s)) {
				return &Error{Path: ".config.method", Message: "must be one of " + strings.Join(webhookMethods, ", ")}
			}
		}
		if h, ok := cfg["headers"]; ok && h != nil {
			hm, isMap := h.(map[string]any)
			if !isMap {
				return &Error{Path: ".config.headers", Message: "must be an object of text values"}
			}
			for k, v := range hm {
				if _, isText := v.(string); !isText {
					return &Error{Path: ".config.headers." + k, Message: "must be text"}
				}
			}
		}
	case EmitEvent:
		key := "eventName"
		if _, ok := cfg[key]; !ok {
			if _, ok := cfg["event"]; ok {
				key = "event"
			}
		}
		name := eventName(cfg)
		if name == "" {
			return &Error{Path: ".config." + key, Message: "is required"}
		}
		if !eventPattern(name) {
			return &Error{Path: ".config." + key, Message: "must be dot-separated segments of lowercase letters, digits and _"}
		}
	}
	return nil
}

// webhookURL accepts an http or https URL with a valid host, placeholders
// included ("https://{{tenant.domain}}/hooks"), or a text that is wholly a
// placeholder (checked once resolved, when the request is made). A host
// with no placeholder is canonicalised and checked by netguard.CheckURL
// (with allowPrivate); a host with one is checked once resolved.
func webhookURL(s string, allowPrivate bool) error {
	if _, whole := wholePlaceholder(s); whole {
		return nil
	}
	x := placeholders.ReplaceAllString(s, "x")
	u, err := url.Parse(x)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return netguard.ErrInvalidURL
	}
	if y, err := url.Parse(placeholders.ReplaceAllString(s, "y")); err != nil || y.Hostname() != u.Hostname() {
		return nil // the host has a placeholder
	}
	return netguard.CheckURL(x, allowPrivate)
}

var placeholders = regexp.MustCompile(`\{\{[^{}]*\}\}`)

func typeList() string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// eventName is EMIT_EVENT's event: config.eventName, or config.event (an
// older name for the same key) when eventName is absent or empty.
func eventName(cfg map[string]any) string {
	if s, _ := cfg["eventName"].(string); s != "" {
		return s
	}
	s, _ := cfg["event"].(string)
	return s
}

func eventPattern(s string) bool {
	for seg := range strings.SplitSeq(s, ".") {
		if seg == "" {
			return false
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
				return false
			}
		}
	}
	return true
}

// recipients reads NOTIFY's recipients: an array of text, or one text of
// comma-separated entries; blanks are dropped.
func recipients(v any) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	switch t := v.(type) {
	case string:
		for part := range strings.SplitSeq(t, ",") {
			add(part)
		}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				add(s)
			}
		}
	case []string:
		for _, s := range t {
			add(s)
		}
	}
	return out
}

// Context is what placeholders read: the rule, the entity and event, the
// data, and the time.
type Context struct {
	RuleID, RuleName                string
	EntityType, EntityID, EventType string
	Data                            map[string]any // the entity data placeholders read ("{{data.total}}")
	// Extra holds further names ("user", "tenant", "organization", …).
	Extra map[string]any
	// Now is the time of {{now}} and {{today}}; zero means time.Now().
	Now time.Time
}

// Outcome is what an action amounts to, the entry an execution reports
// for it: the type and the action's resolved settings.
type Outcome map[string]any

// severities are the SHOW_* actions' severities.
var severities = map[Type]string{ShowError: "error", ShowWarning: "warning", ShowInfo: "info"}

// Plan resolves an action's placeholders and returns what it amounts to:
// the message to show, the field and value to set, the request to send,
// the event to emit. It has no side effects; an engine carries the
// outcome out (or, in a dry run, only lists it).
func Plan(a Action, c *Context) Outcome {
	cfg := a.Config
	out := make(Outcome, 6) // one allocation: no outcome has more than six keys
	out["type"] = string(a.Type)
	str := func(key, def string) string {
		s, _ := cfg[key].(string)
		if s == "" {
			s = def
		}
		return Interpolate(s, c)
	}
	switch a.Type {
	case AllowTransition:
		out["allowed"], out["message"] = true, str("message", "Transition allowed")
	case BlockTransition:
		out["allowed"], out["message"] = false, str("message", "Transition blocked")
	case Log:
		out["level"], out["message"] = str("level", "info"), str("message", "")
	case ShowError, ShowWarning, ShowInfo:
		out["severity"] = severities[a.Type]
		out["message"] = str("message", "")
	case Notify:
		rs := []string{}
		for _, r := range recipients(cfg["recipients"]) {
			// a placeholder may resolve to blank text: no recipient
			if r = strings.TrimSpace(Interpolate(r, c)); r != "" {
				rs = append(rs, r)
			}
		}
		out["recipients"], out["subject"], out["message"] = rs, str("subject", ""), str("message", "")
		if t, ok := cfg["template"].(string); ok {
			out["template"] = t
		}
	case SetField:
		out["field"], out["value"] = str("field", ""), Resolve(cfg["value"], c)
	case CallWebhook:
		headers := map[string]string{}
		if h, ok := cfg["headers"].(map[string]any); ok {
			for k, v := range h {
				if s, ok := v.(string); ok {
					headers[k] = Interpolate(s, c)
				}
			}
		}
		out["url"], out["method"] = str("url", ""), strings.ToUpper(str("method", "POST"))
		out["headers"], out["body"] = headers, Resolve(cfg["body"], c)
	case EmitEvent:
		out["event"], out["payload"] = eventName(cfg), Resolve(cfg["payload"], c)
	}
	return out
}

// Resolve returns v with its placeholders resolved: a text that is wholly
// one placeholder becomes the value it names, keeping its type (so
// "{{data.total}}" gives the number); other texts are interpolated;
// arrays and objects are resolved element by element, into new values.
func Resolve(v any, c *Context) any {
	switch t := v.(type) {
	case string:
		if name, ok := wholePlaceholder(t); ok {
			if val, found := lookup(name, c); found {
				return clone(val) // the outcome must not share the data's maps
			}
			return t
		}
		return Interpolate(t, c)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Resolve(e, c)
		}
		return out
	case map[string]any:
		out := maps.Clone(t)
		for k, e := range t {
			out[k] = Resolve(e, c)
		}
		return out
	}
	return v
}

// clone deep-copies maps and slices of a JSON-shaped value.
func clone(v any) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = clone(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = clone(e)
		}
		return out
	}
	return v
}

func wholePlaceholder(s string) (string, bool) {
	inner, ok := strings.CutPrefix(s, "{{")
	if !ok || !strings.HasSuffix(inner, "}}") || strings.Contains(inner[:len(inner)-2], "{{") ||
		strings.Contains(inner[:len(inner)-2], "}}") {
		return "", false
	}
	return strings.TrimSpace(inner[:len(inner)-2]), true
}

// Interpolate replaces each {{name}} in s with the text of the value it
// names; a name that resolves to nothing (or null) stays as written.
func Interpolate(s string, c *Context) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	var b strings.Builder
	for {
		start := strings.Index(s, "{{")
		if start < 0 {
			break
		}
		end := strings.Index(s[start+2:], "}}")
		if end < 0 {
			break
		}
		end += start + 2
		b.WriteString(s[:start])
		if v, ok := lookup(strings.TrimSpace(s[start+2:end]), c); ok {
			b.WriteString(text(v))
		} else {
			b.WriteString(s[start : end+2])
		}
		s = s[end+2:]
	}
	b.WriteString(s)
	return b.String()
}

// lookup resolves a placeholder name: ruleId, ruleName, entityType,
// entityId, eventType (each only when set), now, today, a "data.x.y" path,
// a name in Extra ("user.id"), or a bare data key ("total"). A null or
// missing value is not found, so its placeholder stays as written.
func lookup(name string, c *Context) (any, bool) {
	if c == nil {
		return nil, false
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	switch name {
	case "ruleId":
		return c.RuleID, c.RuleID != ""
	case "ruleName":
		return c.RuleName, c.RuleName != ""
	case "entityType":
		return c.EntityType, c.EntityType != ""
	case "entityId":
		return c.EntityID, c.EntityID != ""
	case "eventType":
		return c.EventType, c.EventType != ""
	case "now":
		return now.UTC().Format("2006-01-02T15:04:05.000Z"), true
	case "today":
		return now.UTC().Format("2006-01-02"), true
	}
	segs := strings.Split(name, ".")
	var v any
	switch {
	case name == "data":
		return c.Data, c.Data != nil
	case segs[0] == "data":
		v = path(c.Data, segs[1:])
	case c.Extra[segs[0]] != nil:
		v = path(c.Extra, segs)
	default:
		v = path(c.Data, segs)
	}
	return v, v != nil
}

func path(v any, segs []string) any {
	for _, s := range segs {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[s]
	}
	return v
}

// text is a value as placeholder text: strings as they are, numbers
// without a needless fraction or exponent, arrays and objects as JSON.
func text(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case map[string]any, []any:
		if b, err := json.Marshal(t); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v)
}
