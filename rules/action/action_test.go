package action_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/rules/action"
)

// ---------------------------------------------------------------------------
// helpers

// decodeActions decodes an action list written as JSON text the way a host
// receiving a rule would: encoding/json into []action.Action.
func decodeActions(t testing.TB, text string) []action.Action {
	t.Helper()
	var as []action.Action
	if err := json.Unmarshal([]byte(text), &as); err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return as
}

// decodeMap decodes a JSON object into map[string]any (numbers as float64).
func decodeMap(t testing.TB, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return m
}

// mustJSON encodes v as JSON text.
func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %#v: %v", v, err)
	}
	return string(b)
}

// accept asserts that Validate accepts the list written as JSON text.
func accept(t *testing.T, list string) {
	t.Helper()
	if err := action.Validate(decodeActions(t, list)); err != nil {
		t.Errorf("Validate(%s) = %v, want nil", list, err)
	}
}

// refuse asserts that Validate refuses the list written as JSON text with
// an *action.Error at path, and returns the error.
func refuse(t *testing.T, list, path string) *action.Error {
	t.Helper()
	err := action.Validate(decodeActions(t, list))
	if err == nil {
		t.Errorf("Validate(%s) = nil, want an error at %q", list, path)
		return nil
	}
	var ae *action.Error
	if !errors.As(err, &ae) {
		t.Errorf("Validate(%s) = %T %v, want *action.Error", list, err, err)
		return nil
	}
	if ae.Path != path {
		t.Errorf("Validate(%s) path = %q (%v), want %q", list, ae.Path, ae, path)
	}
	if ae.Message == "" {
		t.Errorf("Validate(%s) = %q: empty message", list, ae.Error())
	}
	return ae
}

// one writes a one-action list {type, config} as JSON text; config is
// JSON text ("" for none).
func one(typ, config string) string {
	if config == "" {
		return fmt.Sprintf(`[{"type":%q}]`, typ)
	}
	return fmt.Sprintf(`[{"type":%q,"config":%s}]`, typ, config)
}

// fixedNow is the Context.Now of the tests: 2024-03-01 01:30:05.123456789
// at UTC+05:00, i.e. 2024-02-29T20:30:05.123Z.
var fixedNow = time.Date(2024, 3, 1, 1, 30, 5, 123456789, time.FixedZone("UTC+5", 5*3600))

const (
	wantNow   = "2024-02-29T20:30:05.123Z"
	wantToday = "2024-02-29"
)

// testData is the data of newContext.
const testData = `{
	"total": 2500, "price": 12.5, "big": 1234567.5, "small": 0.0000001, "neg": -3.25,
	"orderId": "ORD-7", "paid": true, "refunded": false, "zero": 0, "none": null, "empty": "",
	"email": "buyer@example.com", "callback": "https://hooks.example.com/cb",
	"customer": {"name": "Ann", "address": {"city": "Oslo", "zip": null}},
	"items": [{"sku": "A-1", "qty": 2}],
	"ruleId": "from-data", "user": {"id": "data-user"}
}`

// newContext is a Context with every name set, fresh data and a fixed time.
func newContext(t testing.TB) *action.Context {
	t.Helper()
	return &action.Context{
		RuleID:     "R-100",
		RuleName:   "Big order",
		EntityType: "sales.order",
		EntityID:   "ord-7",
		EventType:  "beforeApprove",
		Data:       decodeMap(t, testData),
		Extra: map[string]any{
			"user":         map[string]any{"id": "u-1", "name": "Bo"},
			"tenant":       map[string]any{"id": "t-1"},
			"organization": map[string]any{"id": "org-1"},
		},
		Now: fixedNow,
	}
}

// ---------------------------------------------------------------------------
// 1. Validate

// minimal is the minimal valid config of every type.
var minimal = map[action.Type]string{
	action.AllowTransition: ``,
	action.BlockTransition: ``,
	action.Log:             `{"message":"m"}`,
	action.ShowError:       `{"message":"m"}`,
	action.ShowWarning:     `{"message":"m"}`,
	action.ShowInfo:        `{"message":"m"}`,
	action.Notify:          `{"message":"m","recipients":["a@example.com"]}`,
	action.SetField:        `{"field":"status","value":"APPROVED"}`,
	action.CallWebhook:     `{"url":"https://hooks.example.com/x"}`,
	action.EmitEvent:       `{"eventName":"order.approved"}`,
}

func TestValidateEveryTypeMinimal(t *testing.T) {
	if len(action.Types) != 10 {
		t.Errorf("action.Types has %d types, want 10: %v", len(action.Types), action.Types)
	}
	for _, typ := range action.Types {
		cfg, ok := minimal[typ]
		if !ok {
			t.Errorf("no minimal config for %s", typ)
			continue
		}
		t.Run(string(typ), func(t *testing.T) {
			accept(t, one(string(typ), cfg))
			if cfg == "" {
				accept(t, one(string(typ), `{}`))
				accept(t, one(string(typ), `null`))
			}
		})
	}
	t.Run("all types in one list", func(t *testing.T) {
		var parts []string
		for _, typ := range action.Types {
			l := one(string(typ), minimal[typ])
			parts = append(parts, l[1:len(l)-1])
		}
		accept(t, "["+strings.Join(parts, ",")+"]")
	})
	t.Run("empty and nil lists", func(t *testing.T) {
		accept(t, `[]`)
		if err := action.Validate(nil); err != nil {
			t.Errorf("Validate(nil) = %v", err)
		}
	})
	t.Run("optional keys of ALLOW and BLOCK", func(t *testing.T) {
		accept(t, one("ALLOW_TRANSITION", `{"message":"ok {{entityId}}"}`))
		accept(t, one("BLOCK_TRANSITION", `{"message":""}`))
		accept(t, one("BLOCK_TRANSITION", `{"message":null}`))
	})
	t.Run("NOTIFY subject and template", func(t *testing.T) {
		accept(t, one("NOTIFY", `{"message":"m","recipients":"a@x","subject":"S","template":"tpl"}`))
		accept(t, one("NOTIFY", `{"message":"m","recipients":"a@x","subject":null,"template":null}`))
	})
	t.Run("CALL_WEBHOOK with everything", func(t *testing.T) {
		accept(t, one("CALL_WEBHOOK", `{"url":"https://x.example/h","method":"PUT","headers":{"X-A":"1"},"body":{"a":[1,"{{data.total}}"]}}`))
	})
	t.Run("EMIT_EVENT with payload", func(t *testing.T) {
		accept(t, one("EMIT_EVENT", `{"eventName":"order.approved","payload":{"id":"{{entityId}}"}}`))
	})
}

func TestValidateUnknownType(t *testing.T) {
	valid := `{"type":"SHOW_INFO","config":{"message":"m"}}`
	for _, bad := range []string{
		`{"type":"NOPE"}`,
		`{"type":"log","config":{"message":"m"}}`,
		`{"type":"Show_Error","config":{"message":"m"}}`,
		`{"type":" LOG","config":{"message":"m"}}`,
		`{"type":""}`,
		`{"config":{"message":"m"}}`,
	} {
		t.Run(bad, func(t *testing.T) {
			refuse(t, "["+bad+"]", "[0].type")
			refuse(t, "["+valid+","+valid+","+bad+"]", "[2].type")
		})
	}
	t.Run("error text", func(t *testing.T) {
		ae := refuse(t, `[{"type":"NOPE"}]`, "[0].type")
		if ae == nil {
			return
		}
		if !strings.HasPrefix(ae.Error(), "[0].type: ") {
			t.Errorf("Error() = %q, want it to start with the path", ae.Error())
		}
		for _, typ := range action.Types {
			if !strings.Contains(ae.Message, string(typ)) {
				t.Errorf("message %q does not list %s", ae.Message, typ)
			}
		}
	})
}

func TestValidateRequiredKeys(t *testing.T) {
	type req struct {
		typ, key string
		base     string // the minimal valid config
	}
	reqs := []req{
		{"LOG", "message", `{"message":"m"}`},
		{"SHOW_ERROR", "message", `{"message":"m"}`},
		{"SHOW_WARNING", "message", `{"message":"m"}`},
		{"SHOW_INFO", "message", `{"message":"m"}`},
		{"NOTIFY", "message", `{"message":"m","recipients":["a@x"]}`},
		{"NOTIFY", "recipients", `{"message":"m","recipients":["a@x"]}`},
		{"SET_FIELD", "field", `{"field":"f","value":1}`},
		{"CALL_WEBHOOK", "url", `{"url":"https://x.example"}`},
		{"EMIT_EVENT", "eventName", `{"eventName":"a.b"}`},
	}
	variants := []struct {
		name string
		set  func(cfg map[string]any, key string)
	}{
		{"missing", func(cfg map[string]any, key string) { delete(cfg, key) }},
		{"null", func(cfg map[string]any, key string) { cfg[key] = nil }},
		{"empty text", func(cfg map[string]any, key string) { cfg[key] = "" }},
		{"blank text", func(cfg map[string]any, key string) { cfg[key] = " \t\n " }},
		{"number", func(cfg map[string]any, key string) { cfg[key] = 42 }},
		{"false", func(cfg map[string]any, key string) { cfg[key] = false }},
		{"object", func(cfg map[string]any, key string) { cfg[key] = map[string]any{"a": "b"} }},
	}
	valid := `{"type":"ALLOW_TRANSITION"},{"type":"SHOW_INFO","config":{"message":"fine"}}`
	for _, r := range reqs {
		for _, v := range variants {
			t.Run(r.typ+"/"+r.key+"/"+v.name, func(t *testing.T) {
				base := decodeMap(t, r.base)
				accept(t, one(r.typ, r.base))
				v.set(base, r.key)
				bad := fmt.Sprintf(`{"type":%q,"config":%s}`, r.typ, mustJSON(t, base))
				refuse(t, "["+bad+"]", "[0].config."+r.key)
				refuse(t, "["+valid+","+bad+"]", "[2].config."+r.key)
			})
		}
	}
	t.Run("no config at all", func(t *testing.T) {
		for typ, key := range map[string]string{
			"LOG": "message", "SHOW_ERROR": "message", "SHOW_WARNING": "message", "SHOW_INFO": "message",
			"NOTIFY": "message", "SET_FIELD": "field", "CALL_WEBHOOK": "url", "EMIT_EVENT": "eventName",
		} {
			refuse(t, one(typ, ""), "[0].config."+key)
			refuse(t, one(typ, `{}`), "[0].config."+key)
			refuse(t, one(typ, `null`), "[0].config."+key)
		}
	})
	t.Run("optional text of the wrong kind", func(t *testing.T) {
		refuse(t, one("ALLOW_TRANSITION", `{"message":5}`), "[0].config.message")
		refuse(t, one("BLOCK_TRANSITION", `{"message":["x"]}`), "[0].config.message")
		refuse(t, one("NOTIFY", `{"message":"m","recipients":"a@x","subject":5}`), "[0].config.subject")
		refuse(t, one("NOTIFY", `{"message":"m","recipients":"a@x","template":{}}`), "[0].config.template")
	})
	t.Run("error text", func(t *testing.T) {
		ae := refuse(t, `[{"type":"ALLOW_TRANSITION"},{"type":"LOG","config":{}}]`, "[1].config.message")
		if ae != nil && ae.Error() != "[1].config.message: "+ae.Message {
			t.Errorf("Error() = %q", ae.Error())
		}
	})
	t.Run("first problem wins", func(t *testing.T) {
		refuse(t, `[{"type":"LOG","config":{"message":"m"}},{"type":"SET_FIELD","config":{"value":1}},{"type":"NOPE"}]`, "[1].config.field")
		refuse(t, `[{"type":"NOTIFY","config":{"recipients":[]}}]`, "[0].config.message")
	})
}

func TestValidateSetFieldValue(t *testing.T) {
	for _, v := range []string{`false`, `0`, `""`, `null`, `true`, `-1.5`, `"{{data.total}}"`, `[]`, `{}`, `{"a":[1,null]}`} {
		t.Run("value "+v, func(t *testing.T) {
			accept(t, one("SET_FIELD", `{"field":"f","value":`+v+`}`))
		})
	}
	t.Run("value missing", func(t *testing.T) {
		refuse(t, one("SET_FIELD", `{"field":"f"}`), "[0].config.value")
		refuse(t, `[{"type":"LOG","config":{"message":"m"}},{"type":"SET_FIELD","config":{"field":"f"}}]`, "[1].config.value")
	})
	t.Run("value set from Go", func(t *testing.T) {
		for _, v := range []any{false, 0, "", nil} {
			a := action.Action{Type: action.SetField, Config: map[string]any{"field": "f", "value": v}}
			if err := action.Validate([]action.Action{a}); err != nil {
				t.Errorf("value %#v: %v", v, err)
			}
		}
	})
}

func TestValidateNotifyRecipients(t *testing.T) {
	for _, r := range []string{
		`["a@example.com"]`,
		`["a@example.com","b@example.com"]`,
		`[" a@example.com ","","  "]`,
		`["{{data.email}}"]`,
		`"a@example.com"`,
		`"a@example.com, b@example.com"`,
		`" , a@example.com ,"`,
		`"{{data.email}}"`,
	} {
		t.Run("accepted "+r, func(t *testing.T) {
			accept(t, one("NOTIFY", `{"message":"m","recipients":`+r+`}`))
		})
	}
	for _, r := range []string{`[]`, `""`, `"   "`, `" , ,, "`, `["", "  "]`, `[1, 2]`, `[null]`, `5`, `true`, `{"to":"a@x"}`, `null`} {
		t.Run("refused "+r, func(t *testing.T) {
			refuse(t, one("NOTIFY", `{"message":"m","recipients":`+r+`}`), "[0].config.recipients")
		})
	}
	t.Run("[]string from Go", func(t *testing.T) {
		a := action.Action{Type: action.Notify, Config: map[string]any{"message": "m", "recipients": []string{"a@x"}}}
		if err := action.Validate([]action.Action{a}); err != nil {
			t.Errorf("Validate = %v", err)
		}
		a.Config["recipients"] = []string{" "}
		if err := action.Validate([]action.Action{a}); err == nil {
			t.Errorf("Validate of blank []string recipients = nil, want an error")
		}
	})
}

func TestValidateLogLevel(t *testing.T) {
	for _, l := range []string{`"debug"`, `"info"`, `"warn"`, `"error"`, `null`} {
		t.Run("accepted "+l, func(t *testing.T) {
			accept(t, one("LOG", `{"message":"m","level":`+l+`}`))
		})
	}
	for _, l := range []string{`"verbose"`, `"warning"`, `"fatal"`, `""`, `" info"`, `3`, `true`, `["info"]`} {
		t.Run("refused "+l, func(t *testing.T) {
			refuse(t, one("LOG", `{"message":"m","level":`+l+`}`), "[0].config.level")
		})
	}
}

func TestValidateWebhook(t *testing.T) {
	hook := func(cfg string) string { return one("CALL_WEBHOOK", cfg) }
	for _, u := range []string{
		"http://example.com",
		"https://hooks.example.com/x/y?a=1&b=2#f",
		"HTTPS://EXAMPLE.COM/",
		"http://127.0.0.1:8080/hook",
		"https://example.com/orders/{{entityId}}?total={{data.total}}",
	} {
		t.Run("accepted "+u, func(t *testing.T) {
			accept(t, hook(`{"url":`+mustJSON(t, u)+`}`))
		})
	}
	for _, u := range []string{
		"ftp://example.com/x",
		"file:///etc/passwd",
		"mailto:a@example.com",
		"javascript:alert(1)",
		"/hooks/x",
		"hooks/x",
		"example.com/hook",
		"//example.com/hook",
		"http//example.com",
		"::garbage::",
		"http://exa mple.com",
		"https://example.com/%zz",
		"not a url",
	} {
		t.Run("refused "+u, func(t *testing.T) {
			refuse(t, hook(`{"url":`+mustJSON(t, u)+`}`), "[0].config.url")
		})
	}
	t.Run("url wholly a placeholder", func(t *testing.T) {
		for _, u := range []string{"{{data.callback}}", "{{ data.callback }}", "{{callback}}"} {
			if err := action.Validate(decodeActions(t, hook(`{"url":`+mustJSON(t, u)+`}`))); err != nil {
				t.Errorf("url %q refused: %v", u, err)
			}
		}
	})
	t.Run("url with a placeholder host", func(t *testing.T) {
		err := action.Validate(decodeActions(t, hook(`{"url":"https://{{tenant.domain}}/hooks"}`)))
		if err != nil {
			t.Errorf("an https url whose host is a placeholder is refused: %v", err)
		}
	})
	t.Run("url without a host", func(t *testing.T) {
		var accepted []string
		for _, u := range []string{"http://", "https:", "http:foo", "https:///path", "http://:80/x"} {
			if err := action.Validate(decodeActions(t, hook(`{"url":`+mustJSON(t, u)+`}`))); err == nil {
				accepted = append(accepted, u)
			}
		}
		if len(accepted) > 0 {
			t.Errorf("http(s) urls without a host are accepted: %q", accepted)
		}
	})
	for _, m := range []string{`"GET"`, `"get"`, `"Post"`, `"PUT"`, `"patch"`, `"DeLeTe"`, `null`} {
		t.Run("method accepted "+m, func(t *testing.T) {
			accept(t, hook(`{"url":"https://x.example","method":`+m+`}`))
		})
	}
	for _, m := range []string{`"HEAD"`, `"OPTIONS"`, `"FETCH"`, `""`, `" GET"`, `5`, `["GET"]`} {
		t.Run("method refused "+m, func(t *testing.T) {
			refuse(t, hook(`{"url":"https://x.example","method":`+m+`}`), "[0].config.method")
		})
	}
	for _, h := range []string{`{}`, `null`, `{"X-A":"1","Authorization":"Bearer {{data.token}}"}`, `{"X-Empty":""}`} {
		t.Run("headers accepted "+h, func(t *testing.T) {
			accept(t, hook(`{"url":"https://x.example","headers":`+h+`}`))
		})
	}
	for _, c := range []struct{ headers, path string }{
		{`"X-A: 1"`, "[0].config.headers"},
		{`["X-A"]`, "[0].config.headers"},
		{`5`, "[0].config.headers"},
		{`true`, "[0].config.headers"},
		{`{"X-A":1}`, "[0].config.headers.X-A"},
		{`{"X-A":null}`, "[0].config.headers.X-A"},
		{`{"X-A":true}`, "[0].config.headers.X-A"},
		{`{"X-A":{"v":"1"}}`, "[0].config.headers.X-A"},
		{`{"X-A":["1"]}`, "[0].config.headers.X-A"},
	} {
		t.Run("headers refused "+c.headers, func(t *testing.T) {
			refuse(t, hook(`{"url":"https://x.example","headers":`+c.headers+`}`), c.path)
		})
	}
}

func TestValidateEmitEvent(t *testing.T) {
	for _, cfg := range []string{
		`{"eventName":"order.created"}`,
		`{"eventName":"a"}`,
		`{"eventName":"sales_order.line_item2.created"}`,
		`{"eventName":"0.9"}`,
		`{"event":"order.created"}`,
		`{"eventName":"order.created","event":"order.updated"}`,
		`{"eventName":"","event":"order.created"}`,
		`{"eventName":null,"event":"order.created"}`,
		`{"eventName":"order.created","payload":null}`,
		`{"eventName":"order.created","payload":{"total":"{{data.total}}"}}`,
	} {
		t.Run("accepted "+cfg, func(t *testing.T) {
			accept(t, one("EMIT_EVENT", cfg))
		})
	}
	for _, name := range []string{
		"Order.Created", "ORDER", "a..b", "", ".a", "a.", ".", "order created", "order-created",
		"order/created", "ördér.created", "order.{{x}}", " order.created",
	} {
		t.Run("refused eventName "+mustJSON(t, name), func(t *testing.T) {
			refuse(t, one("EMIT_EVENT", `{"eventName":`+mustJSON(t, name)+`}`), "[0].config.eventName")
		})
	}
	t.Run("refused event", func(t *testing.T) {
		for _, name := range []string{"Order.Created", "a..b", ""} {
			if err := action.Validate(decodeActions(t, one("EMIT_EVENT", `{"event":`+mustJSON(t, name)+`}`))); err == nil {
				t.Errorf("event %q accepted", name)
			}
		}
	})
	t.Run("a bad eventName is not rescued by a good event", func(t *testing.T) {
		refuse(t, one("EMIT_EVENT", `{"eventName":"Bad.Name","event":"good.name"}`), "[0].config.eventName")
	})
}

func TestValidateLimits(t *testing.T) {
	item := `{"type":"SHOW_INFO","config":{"message":"m"}}`
	list := func(n int) string { return "[" + strings.Repeat(item+",", n)[:max(0, n*(len(item)+1)-1)] + "]" }
	t.Run("50 actions accepted", func(t *testing.T) {
		if n := len(decodeActions(t, list(action.MaxActions))); n != 50 {
			t.Fatalf("list has %d actions", n)
		}
		accept(t, list(50))
	})
	t.Run("51 actions refused", func(t *testing.T) {
		err := action.Validate(decodeActions(t, list(51)))
		var ae *action.Error
		if !errors.As(err, &ae) {
			t.Fatalf("Validate(51 actions) = %v, want *action.Error", err)
		}
		if !strings.Contains(ae.Message, "50") {
			t.Errorf("message %q does not state the limit", ae.Message)
		}
	})
	t.Run("51 valid-looking but the count is checked first", func(t *testing.T) {
		bad := decodeActions(t, list(51))
		bad[0].Type = "NOPE"
		var ae *action.Error
		if err := action.Validate(bad); !errors.As(err, &ae) || ae.Path == "[0].type" {
			t.Errorf("Validate = %v, want the count error", err)
		}
	})
	msg := func(n int, r string) string { return mustJSON(t, strings.Repeat(r, n)) }
	t.Run("message of exactly 5000 characters accepted", func(t *testing.T) {
		accept(t, one("SHOW_ERROR", `{"message":`+msg(action.MaxMessageLength, "x")+`}`))
		accept(t, one("SHOW_ERROR", `{"message":`+msg(5000, "é")+`}`)) // 10000 bytes, 5000 characters
		accept(t, one("SHOW_ERROR", `{"message":`+msg(5000, "🙂")+`}`))
	})
	t.Run("message over 5000 characters refused", func(t *testing.T) {
		refuse(t, one("SHOW_ERROR", `{"message":`+msg(5001, "x")+`}`), "[0].config.message")
		refuse(t, one("SHOW_ERROR", `{"message":`+msg(5001, "é")+`}`), "[0].config.message")
		refuse(t, `[{"type":"ALLOW_TRANSITION"},{"type":"LOG","config":{"message":`+msg(6000, "x")+`}}]`, "[1].config.message")
		refuse(t, one("ALLOW_TRANSITION", `{"message":`+msg(5001, "x")+`}`), "[0].config.message")
		refuse(t, one("NOTIFY", `{"message":"m","recipients":"a@x","subject":`+msg(5001, "x")+`}`), "[0].config.subject")
	})
}

// ---------------------------------------------------------------------------
// 2. Plan

func TestPlan(t *testing.T) {
	cases := []struct {
		name   string
		action string // one action as JSON text
		want   action.Outcome
	}{
		{"allow default", `{"type":"ALLOW_TRANSITION"}`,
			action.Outcome{"type": "ALLOW_TRANSITION", "allowed": true, "message": "Transition allowed"}},
		{"allow empty message", `{"type":"ALLOW_TRANSITION","config":{"message":""}}`,
			action.Outcome{"type": "ALLOW_TRANSITION", "allowed": true, "message": "Transition allowed"}},
		{"allow message", `{"type":"ALLOW_TRANSITION","config":{"message":"Order {{entityId}} may pass"}}`,
			action.Outcome{"type": "ALLOW_TRANSITION", "allowed": true, "message": "Order ord-7 may pass"}},
		{"block default", `{"type":"BLOCK_TRANSITION","config":{}}`,
			action.Outcome{"type": "BLOCK_TRANSITION", "allowed": false, "message": "Transition blocked"}},
		{"block message", `{"type":"BLOCK_TRANSITION","config":{"message":"Total {{data.total}} over limit"}}`,
			action.Outcome{"type": "BLOCK_TRANSITION", "allowed": false, "message": "Total 2500 over limit"}},
		{"log default level", `{"type":"LOG","config":{"message":"Rule {{ruleName}} ({{ruleId}}) ran"}}`,
			action.Outcome{"type": "LOG", "level": "info", "message": "Rule Big order (R-100) ran"}},
		{"log null level", `{"type":"LOG","config":{"message":"m","level":null}}`,
			action.Outcome{"type": "LOG", "level": "info", "message": "m"}},
		{"log level", `{"type":"LOG","config":{"message":"m","level":"warn"}}`,
			action.Outcome{"type": "LOG", "level": "warn", "message": "m"}},
		{"show error", `{"type":"SHOW_ERROR","config":{"message":"No {{data.customer.name}}"}}`,
			action.Outcome{"type": "SHOW_ERROR", "severity": "error", "message": "No Ann"}},
		{"show warning", `{"type":"SHOW_WARNING","config":{"message":"w"}}`,
			action.Outcome{"type": "SHOW_WARNING", "severity": "warning", "message": "w"}},
		{"show info", `{"type":"SHOW_INFO","config":{"message":"i {{missing}}"}}`,
			action.Outcome{"type": "SHOW_INFO", "severity": "info", "message": "i {{missing}}"}},
		{"notify comma text", `{"type":"NOTIFY","config":{"message":"Order {{orderId}}","recipients":" a@example.com ,{{data.email}},, ","subject":"Order {{entityId}}"}}`,
			action.Outcome{"type": "NOTIFY", "recipients": []string{"a@example.com", "buyer@example.com"},
				"subject": "Order ord-7", "message": "Order ORD-7"}},
		{"notify array and template", `{"type":"NOTIFY","config":{"message":"m","recipients":[" a@x ","","{{user.id}}",7],"template":"order-{{entityId}}"}}`,
			action.Outcome{"type": "NOTIFY", "recipients": []string{"a@x", "u-1"}, "subject": "", "message": "m",
				"template": "order-{{entityId}}"}},
		{"set field number", `{"type":"SET_FIELD","config":{"field":"approvedTotal","value":"{{data.total}}"}}`,
			action.Outcome{"type": "SET_FIELD", "field": "approvedTotal", "value": 2500.0}},
		{"set field interpolated field", `{"type":"SET_FIELD","config":{"field":"flag_{{entityType}}","value":"by {{user.id}}"}}`,
			action.Outcome{"type": "SET_FIELD", "field": "flag_sales.order", "value": "by u-1"}},
		{"set field false", `{"type":"SET_FIELD","config":{"field":"f","value":false}}`,
			action.Outcome{"type": "SET_FIELD", "field": "f", "value": false}},
		{"set field 0", `{"type":"SET_FIELD","config":{"field":"f","value":0}}`,
			action.Outcome{"type": "SET_FIELD", "field": "f", "value": 0.0}},
		{"set field empty text", `{"type":"SET_FIELD","config":{"field":"f","value":""}}`,
			action.Outcome{"type": "SET_FIELD", "field": "f", "value": ""}},
		{"set field null", `{"type":"SET_FIELD","config":{"field":"f","value":null}}`,
			action.Outcome{"type": "SET_FIELD", "field": "f", "value": nil}},
		{"set field object", `{"type":"SET_FIELD","config":{"field":"f","value":{"by":"{{user.id}}","at":"{{today}}","n":[1,"{{data.price}}"]}}}`,
			action.Outcome{"type": "SET_FIELD", "field": "f",
				"value": map[string]any{"by": "u-1", "at": wantToday, "n": []any{1.0, 12.5}}}},
		{"webhook defaults", `{"type":"CALL_WEBHOOK","config":{"url":"https://x.example/h"}}`,
			action.Outcome{"type": "CALL_WEBHOOK", "url": "https://x.example/h", "method": "POST",
				"headers": map[string]string{}, "body": nil}},
		{"webhook full", `{"type":"CALL_WEBHOOK","config":{
				"url":"https://x.example/orders/{{entityId}}?t={{data.total}}",
				"method":"patch",
				"headers":{"Authorization":"Bearer {{tenant.id}}","X-Rule":"{{ ruleId }}","X-Missing":"{{nope}}"},
				"body":{"order":"{{data.orderId}}","total":"{{data.total}}","customer":"{{data.customer}}","note":"rule {{ruleName}}","keep":[true,null]}}}`,
			action.Outcome{"type": "CALL_WEBHOOK", "url": "https://x.example/orders/ord-7?t=2500", "method": "PATCH",
				"headers": map[string]string{"Authorization": "Bearer t-1", "X-Rule": "R-100", "X-Missing": "{{nope}}"},
				"body": map[string]any{"order": "ORD-7", "total": 2500.0,
					"customer": map[string]any{"name": "Ann", "address": map[string]any{"city": "Oslo", "zip": nil}},
					"note":     "rule Big order", "keep": []any{true, nil}}}},
		{"webhook method lower case", `{"type":"CALL_WEBHOOK","config":{"url":"http://x","method":"get"}}`,
			action.Outcome{"type": "CALL_WEBHOOK", "url": "http://x", "method": "GET", "headers": map[string]string{}, "body": nil}},
		{"webhook url placeholder", `{"type":"CALL_WEBHOOK","config":{"url":"{{data.callback}}","body":"{{data.total}}"}}`,
			action.Outcome{"type": "CALL_WEBHOOK", "url": "https://hooks.example.com/cb", "method": "POST",
				"headers": map[string]string{}, "body": 2500.0}},
		{"emit eventName", `{"type":"EMIT_EVENT","config":{"eventName":"order.approved","payload":{"id":"{{entityId}}","total":"{{data.total}}","by":"{{user}}"}}}`,
			action.Outcome{"type": "EMIT_EVENT", "event": "order.approved",
				"payload": map[string]any{"id": "ord-7", "total": 2500.0, "by": map[string]any{"id": "u-1", "name": "Bo"}}}},
		{"emit event key", `{"type":"EMIT_EVENT","config":{"event":"order.shipped"}}`,
			action.Outcome{"type": "EMIT_EVENT", "event": "order.shipped", "payload": nil}},
		{"emit eventName wins", `{"type":"EMIT_EVENT","config":{"eventName":"a.b","event":"c.d","payload":[1,"{{eventType}}"]}}`,
			action.Outcome{"type": "EMIT_EVENT", "event": "a.b", "payload": []any{1.0, "beforeApprove"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			as := decodeActions(t, "["+c.action+"]")
			if err := action.Validate(as); err != nil && c.name != "webhook url placeholder" {
				t.Fatalf("Validate(%s) = %v", c.action, err)
			}
			got := action.Plan(as[0], newContext(t))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Plan(%s)\n got %#v\nwant %#v", c.action, got, c.want)
			}
		})
	}
	t.Run("every type planned", func(t *testing.T) {
		seen := map[string]bool{}
		for _, c := range cases {
			seen[c.want["type"].(string)] = true
		}
		for _, typ := range action.Types {
			if !seen[string(typ)] {
				t.Errorf("no Plan case for %s", typ)
			}
		}
	})
	t.Run("plan does not modify the action", func(t *testing.T) {
		text := `[{"type":"CALL_WEBHOOK","config":{"url":"https://x/{{entityId}}","method":"put","headers":{"A":"{{ruleId}}"},"body":{"a":["{{data.total}}",{"b":"{{entityId}}"}]}}}]`
		as := decodeActions(t, text)
		action.Plan(as[0], newContext(t))
		if want := decodeActions(t, text); !reflect.DeepEqual(as, want) {
			t.Errorf("action changed:\n got %#v\nwant %#v", as, want)
		}
	})
	t.Run("nil context leaves placeholders", func(t *testing.T) {
		as := decodeActions(t, `[{"type":"SET_FIELD","config":{"field":"{{entityType}}","value":"{{data.total}}"}}]`)
		want := action.Outcome{"type": "SET_FIELD", "field": "{{entityType}}", "value": "{{data.total}}"}
		if got := action.Plan(as[0], nil); !reflect.DeepEqual(got, want) {
			t.Errorf("Plan(nil context) = %#v, want %#v", got, want)
		}
	})
	t.Run("plans are independent", func(t *testing.T) {
		as := decodeActions(t, `[{"type":"NOTIFY","config":{"message":"m","recipients":["a","b"]}}]`)
		c := newContext(t)
		p1 := action.Plan(as[0], c)
		p1["recipients"].([]string)[0] = "changed"
		p2 := action.Plan(as[0], c)
		if got := p2["recipients"].([]string)[0]; got != "a" {
			t.Errorf("second plan sees the first plan's change: %q", got)
		}
	})
	t.Run("outcome encodes as JSON", func(t *testing.T) {
		as := decodeActions(t, `[{"type":"BLOCK_TRANSITION","config":{"message":"Too big: {{data.total}}"}}]`)
		got := mustJSON(t, action.Plan(as[0], newContext(t)))
		if want := `{"allowed":false,"message":"Too big: 2500","type":"BLOCK_TRANSITION"}`; got != want {
			t.Errorf("JSON = %s, want %s", got, want)
		}
	})
}

// ---------------------------------------------------------------------------
// 3. Interpolate and Resolve

func TestInterpolate(t *testing.T) {
	cases := []struct{ in, want string }{
		// the names of the rule, entity and event
		{"{{ruleId}}", "R-100"},
		{"{{ruleName}}", "Big order"},
		{"{{entityType}}", "sales.order"},
		{"{{entityId}}", "ord-7"},
		{"{{eventType}}", "beforeApprove"},
		// time
		{"{{now}}", wantNow},
		{"{{today}}", wantToday},
		{"at {{ now }} on {{today}}", "at " + wantNow + " on " + wantToday},
		// data paths
		{"{{data.total}}", "2500"},
		{"{{data.orderId}}", "ORD-7"},
		{"{{data.customer.name}}", "Ann"},
		{"{{data.customer.address.city}}", "Oslo"},
		{"{{data.paid}}", "true"},
		{"{{data.refunded}}", "false"},
		{"{{data.zero}}", "0"},
		{"[{{data.empty}}]", "[]"},
		// bare data keys
		{"{{orderId}}", "ORD-7"},
		{"{{total}}", "2500"},
		{"{{customer.address.city}}", "Oslo"},
		// Extra names, which win over data keys of the same name
		{"{{user.id}}", "u-1"},
		{"{{user.name}}", "Bo"},
		{"{{tenant.id}}", "t-1"},
		{"{{organization.id}}", "org-1"},
		{"{{data.user.id}}", "data-user"},
		// the rule's names win over data keys of the same name
		{"{{ruleId}}/{{data.ruleId}}", "R-100/from-data"},
		// unresolved: stays exactly as written
		{"{{missing}}", "{{missing}}"},
		{"{{ missing }}", "{{ missing }}"},
		{"{{data.missing}}", "{{data.missing}}"},
		{"{{data.none}}", "{{data.none}}"},
		{"{{none}}", "{{none}}"},
		{"{{data.customer.address.zip}}", "{{data.customer.address.zip}}"},
		{"{{data.total.x}}", "{{data.total.x}}"},
		{"{{data.customer.name.first}}", "{{data.customer.name.first}}"},
		{"{{user.email}}", "{{user.email}}"},
		{"{{Data.total}}", "{{Data.total}}"},
		{"{{RULEID}}", "{{RULEID}}"},
		{"{{}}", "{{}}"},
		{"{{ }}", "{{ }}"},
		// whitespace inside the braces
		{"{{ ruleId }}", "R-100"},
		{"{{\truleId\n}}", "R-100"},
		{"{{  data.total}}", "2500"},
		// several placeholders, with text around
		{"Order {{entityId}} of {{entityType}} totals {{data.total}} ({{missing}}) by {{user.id}}.",
			"Order ord-7 of sales.order totals 2500 ({{missing}}) by u-1."},
		{"{{ruleId}}{{ruleId}}", "R-100R-100"},
		{"{{ruleId}}}", "R-100}"},
		{"}}{{ruleId}}", "}}R-100"},
		// unclosed and stray braces
		{"{{", "{{"},
		{"a {{ruleId", "a {{ruleId"},
		{"{{ruleId}} and {{entityId", "R-100 and {{entityId"},
		{"{ruleId}", "{ruleId}"},
		{"{ {ruleId} }", "{ {ruleId} }"},
		{"}}", "}}"},
		// nothing to do
		{"", ""},
		{"plain text", "plain text"},
		{"héllo {{entityId}} ✓", "héllo ord-7 ✓"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			if got := action.Interpolate(c.in, newContext(t)); got != c.want {
				t.Errorf("Interpolate(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestInterpolateEmptyNames(t *testing.T) {
	c := &action.Context{RuleID: "R-1", Data: map[string]any{"x": 1.0}, Now: fixedNow}
	for _, name := range []string{"ruleName", "entityType", "entityId", "eventType"} {
		in := "id={{" + name + "}}"
		if got := action.Interpolate(in, c); got != in {
			t.Errorf("Interpolate(%q) with %s unset = %q, want it literal", in, name, got)
		}
	}
	// An empty rule name does not fall back to a data key of that name.
	c.Data["entityId"] = "from-data"
	if got := action.Interpolate("{{entityId}}", c); got != "{{entityId}}" {
		t.Errorf("Interpolate({{entityId}}) with EntityID unset = %q, want it literal", got)
	}
	if got := action.Interpolate("{{ruleId}}", c); got != "R-1" {
		t.Errorf("Interpolate({{ruleId}}) = %q", got)
	}
}

func TestInterpolateTime(t *testing.T) {
	cases := []struct {
		now        time.Time
		nowT, date string
	}{
		{fixedNow, wantNow, wantToday},
		{time.Date(2024, 12, 31, 23, 59, 59, 999999999, time.UTC), "2024-12-31T23:59:59.999Z", "2024-12-31"},
		{time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), "2025-01-01T00:00:00.000Z", "2025-01-01"},
		{time.Date(2025, 1, 1, 0, 30, 0, 0, time.FixedZone("UTC+1", 3600)), "2024-12-31T23:30:00.000Z", "2024-12-31"},
		{time.Date(2024, 6, 30, 20, 0, 0, 5e6, time.FixedZone("UTC-7", -7*3600)), "2024-07-01T03:00:00.005Z", "2024-07-01"},
	}
	for _, tc := range cases {
		c := &action.Context{Now: tc.now}
		if got := action.Interpolate("{{now}}", c); got != tc.nowT {
			t.Errorf("now at %v = %q, want %q", tc.now, got, tc.nowT)
		}
		if got := action.Interpolate("{{today}}", c); got != tc.date {
			t.Errorf("today at %v = %q, want %q", tc.now, got, tc.date)
		}
	}
	t.Run("zero Now is the current time", func(t *testing.T) {
		before := time.Now().UTC().Truncate(time.Millisecond)
		got := action.Interpolate("{{now}}", &action.Context{})
		after := time.Now().UTC()
		ts, err := time.Parse("2006-01-02T15:04:05.000Z", got)
		if err != nil {
			t.Fatalf("{{now}} = %q: %v", got, err)
		}
		if ts.Before(before) || ts.After(after) {
			t.Errorf("{{now}} = %v, not between %v and %v", ts, before, after)
		}
		if d := action.Interpolate("{{today}}", &action.Context{}); d != before.Format("2006-01-02") && d != after.Format("2006-01-02") {
			t.Errorf("{{today}} = %q", d)
		}
	})
}

func TestInterpolateValues(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{2500.0, "2500"},
		{12.5, "12.5"},
		{1234567.5, "1234567.5"},
		{0.0, "0"},
		{-3.25, "-3.25"},
		{1e21, "1000000000000000000000"},
		{1e-7, "0.0000001"},
		{123456789012.0, "123456789012"},
		{func() float64 { a, b := 0.1, 0.2; return a + b }(), "0.30000000000000004"}, // not a constant

		{true, "true"},
		{false, "false"},
		{"text", "text"},
		{"", ""},
		{42, "42"},        // an int put in data from Go
		{int64(-7), "-7"}, // likewise
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%T %v", c.v, c.v), func(t *testing.T) {
			ctx := &action.Context{Data: map[string]any{"v": c.v}}
			if got := action.Interpolate("{{data.v}}", ctx); got != c.want {
				t.Errorf("Interpolate of %#v = %q, want %q", c.v, got, c.want)
			}
			if got := action.Interpolate("[{{v}}]", ctx); got != "["+c.want+"]" {
				t.Errorf("Interpolate of bare %#v = %q, want [%s]", c.v, got, c.want)
			}
		})
	}
	t.Run("objects and arrays as JSON text", func(t *testing.T) {
		// text's own comment: "other values as JSON-ish text".
		ctx := newContext(t)
		for in, want := range map[string]string{
			"{{data.customer.address}}": `{"city":"Oslo","zip":null}`,
			"{{data.items}}":            `[{"qty":2,"sku":"A-1"}]`,
		} {
			if got := action.Interpolate(in, ctx); got != want {
				t.Errorf("Interpolate(%q) = %q, want JSON text %s", in, got, want)
			}
		}
	})
	t.Run("numbers decoded from JSON", func(t *testing.T) {
		ctx := newContext(t)
		for in, want := range map[string]string{
			"{{data.total}}": "2500", "{{data.price}}": "12.5", "{{data.big}}": "1234567.5",
			"{{data.small}}": "0.0000001", "{{data.neg}}": "-3.25", "{{data.items}}": "",
		} {
			got := action.Interpolate(in, ctx)
			if in == "{{data.items}}" {
				if strings.Contains(got, "{{") {
					t.Errorf("Interpolate(%q) = %q: an array is a value, not a missing name", in, got)
				}
				continue
			}
			if got != want {
				t.Errorf("Interpolate(%q) = %q, want %q", in, got, want)
			}
		}
	})
}

func TestInterpolateNilContext(t *testing.T) {
	for _, in := range []string{"{{ruleId}}", "{{now}}", "{{today}}", "{{data.total}}", "{{total}}", "a {{ user.id }} b {{", "plain"} {
		if got := action.Interpolate(in, nil); got != in {
			t.Errorf("Interpolate(%q, nil) = %q, want it unchanged", in, got)
		}
	}
	// An empty Context resolves only the time.
	c := &action.Context{Now: fixedNow}
	if got := action.Interpolate("{{ruleId}} {{data.x}} {{x}} {{today}}", c); got != "{{ruleId}} {{data.x}} {{x}} "+wantToday {
		t.Errorf("Interpolate with an empty Context = %q", got)
	}
}

func TestResolve(t *testing.T) {
	ctx := newContext(t)
	cases := []struct {
		name string
		in   any
		want any
	}{
		{"number keeps its type", "{{data.total}}", 2500.0},
		{"bare number keeps its type", "{{total}}", 2500.0},
		{"with spaces", "{{ data.price }}", 12.5},
		{"bool", "{{data.paid}}", true},
		{"false", "{{data.refunded}}", false},
		{"zero", "{{data.zero}}", 0.0},
		{"empty text", "{{data.empty}}", ""},
		{"object stays a map", "{{data.customer.address}}", map[string]any{"city": "Oslo", "zip": nil}},
		{"array stays an array", "{{data.items}}", []any{map[string]any{"sku": "A-1", "qty": 2.0}}},
		{"extra object", "{{tenant}}", map[string]any{"id": "t-1"}},
		{"rule name", "{{ruleName}}", "Big order"},
		{"now", "{{now}}", wantNow},
		{"missing stays literal", "{{data.missing}}", "{{data.missing}}"},
		{"null stays literal", "{{data.none}}", "{{data.none}}"},
		{"missing with spaces stays literal", "{{ nope }}", "{{ nope }}"},
		{"mixed text is interpolated", "total: {{data.total}}", "total: 2500"},
		{"two placeholders are text", "{{data.total}}{{data.price}}", "250012.5"},
		{"placeholder and missing", "{{data.total}} {{nope}}", "2500 {{nope}}"},
		{"unclosed", "{{data.total", "{{data.total"},
		{"plain text", "plain", "plain"},
		{"number", 7.5, 7.5},
		{"bool value", false, false},
		{"nil", nil, nil},
		{"array", []any{"{{data.total}}", "x {{entityId}}", 1.0, nil, []any{"{{data.paid}}"}},
			[]any{2500.0, "x ord-7", 1.0, nil, []any{true}}},
		{"object", map[string]any{"t": "{{data.total}}", "nested": map[string]any{"c": "{{data.customer.name}}", "l": []any{"{{today}}"}}, "k": "keep", "n": nil},
			map[string]any{"t": 2500.0, "nested": map[string]any{"c": "Ann", "l": []any{wantToday}}, "k": "keep", "n": nil}},
		{"empty array", []any{}, []any{}},
		{"empty object", map[string]any{}, map[string]any{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := action.Resolve(c.in, ctx)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Resolve(%#v) = %#v (%T), want %#v (%T)", c.in, got, got, c.want, c.want)
			}
		})
	}
	t.Run("the input is not modified", func(t *testing.T) {
		const text = `{"a":"{{data.total}}","b":["{{entityId}}",{"c":"{{user.id}}","d":["{{today}}"]}],"e":{"f":"{{ruleId}} x"}}`
		in := decodeMap(t, text)
		got := action.Resolve(in, ctx)
		if want := decodeMap(t, text); !reflect.DeepEqual(in, want) {
			t.Errorf("input changed:\n got %#v\nwant %#v", in, want)
		}
		want := map[string]any{"a": 2500.0, "b": []any{"ord-7", map[string]any{"c": "u-1", "d": []any{wantToday}}}, "e": map[string]any{"f": "R-100 x"}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Resolve = %#v, want %#v", got, want)
		}
		// The result is new: changing it does not reach the input.
		got.(map[string]any)["b"].([]any)[1].(map[string]any)["c"] = "changed"
		got.(map[string]any)["e"].(map[string]any)["g"] = "added"
		if want := decodeMap(t, text); !reflect.DeepEqual(in, want) {
			t.Errorf("changing the result changed the input: %#v", in)
		}
	})
	t.Run("the context data is not modified", func(t *testing.T) {
		c := newContext(t)
		action.Resolve(map[string]any{"x": []any{"{{data.customer}}", "{{data.items}}"}}, c)
		action.Plan(decodeActions(t, `[{"type":"SET_FIELD","config":{"field":"total","value":0}}]`)[0], c)
		if want := decodeMap(t, testData); !reflect.DeepEqual(c.Data, want) {
			t.Errorf("context data changed: %#v", c.Data)
		}
	})
	t.Run("nil context leaves everything literal", func(t *testing.T) {
		in := map[string]any{"a": "{{data.total}}", "b": []any{"{{ruleId}}", "x {{now}}", 1.0}, "c": "{{ today }}"}
		want := map[string]any{"a": "{{data.total}}", "b": []any{"{{ruleId}}", "x {{now}}", 1.0}, "c": "{{ today }}"}
		if got := action.Resolve(in, nil); !reflect.DeepEqual(got, want) {
			t.Errorf("Resolve(nil context) = %#v, want %#v", got, want)
		}
		for _, s := range []string{"{{data.total}}", "{{now}}", "a {{b}}"} {
			if got := action.Resolve(s, nil); got != s {
				t.Errorf("Resolve(%q, nil) = %#v", s, got)
			}
		}
	})
	t.Run("Resolve of text agrees with Interpolate", func(t *testing.T) {
		for _, s := range []string{"a {{ruleId}} b", "{{ruleId}}", "{{nope}}", "{{ruleId}}{{entityId}}", "{{", "x}}", "{{data.total}} }"} {
			if got, want := action.Resolve(s, ctx), action.Interpolate(s, ctx); got != want {
				t.Errorf("Resolve(%q) = %#v, Interpolate = %q", s, got, want)
			}
		}
	})
	t.Run("text with a stray closing brace pair", func(t *testing.T) {
		// "{{ruleId}} }}" is not wholly one placeholder, so it is interpolated
		// like any other text.
		for _, s := range []string{"{{ruleId}} }}", "{{entityId}}-}}", "{{data.total}}}}"} {
			got, want := action.Resolve(s, ctx), action.Interpolate(s, ctx)
			if got != want {
				t.Errorf("Resolve(%q) = %#v; it is not wholly a placeholder, want Interpolate's %q", s, got, want)
			}
		}
	})
}

// TestTypesList checks the exported Types list against the constants.
func TestTypesList(t *testing.T) {
	want := []action.Type{"ALLOW_TRANSITION", "BLOCK_TRANSITION", "LOG", "SHOW_ERROR", "SHOW_WARNING", "SHOW_INFO",
		"NOTIFY", "SET_FIELD", "CALL_WEBHOOK", "EMIT_EVENT"}
	got := slices.Clone(action.Types)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Types = %v, want %v", action.Types, want)
	}
	if action.MaxActions != 50 || action.MaxMessageLength != 5000 {
		t.Errorf("limits = %d, %d", action.MaxActions, action.MaxMessageLength)
	}
}

// ---------------------------------------------------------------------------
// 4. fuzzing

// FuzzInterpolate: Interpolate never panics; a text without "{{" comes
// back unchanged; with a nil Context every text comes back unchanged;
// Resolve and Plan never panic either.
func FuzzInterpolate(f *testing.F) {
	for _, seed := range []string{
		"", "plain", "{{", "}}", "{{}}", "{{ }}", "{{ruleId}}", "{{ ruleId }}", "{{data.total}}",
		"a {{data.customer.address.city}} b {{user.id}} c {{nope}}", "{{{{ruleId}}}}", "{{ruleId}} }}",
		"{{data.}}", "{{.}}", "{{data..total}}", "{{now}}{{today}}", "{{data.items}}", "{{data}}",
		"x{{", "{{x", "{}{}{{}}}", "\xff{{\xfe}}", "{{ü}}", "{{user}}",
	} {
		f.Add(seed)
	}
	ctx := newContext(f)
	empty := &action.Context{Data: map[string]any{"": "empty-key", "a": map[string]any{"": 1.0}}}
	f.Fuzz(func(t *testing.T, s string) {
		got := action.Interpolate(s, ctx)
		if !strings.Contains(s, "{{") && got != s {
			t.Fatalf("Interpolate(%q) = %q, want it unchanged", s, got)
		}
		if n := action.Interpolate(s, nil); n != s {
			t.Fatalf("Interpolate(%q, nil) = %q, want it unchanged", s, n)
		}
		action.Interpolate(s, empty)
		action.Interpolate(s, &action.Context{})
		r := action.Resolve(s, ctx)
		if _, isText := r.(string); !isText && !strings.HasPrefix(s, "{{") {
			t.Fatalf("Resolve(%q) = %#v: only a whole placeholder may change type", s, r)
		}
		action.Resolve([]any{s, map[string]any{s: s}}, ctx)
		for _, typ := range action.Types {
			cfg := map[string]any{"message": s, "recipients": s, "field": s, "value": s, "url": s,
				"method": s, "headers": map[string]any{s: s}, "body": s, "eventName": s, "level": s}
			a := action.Action{Type: typ, Config: cfg}
			before := maps.Clone(cfg)
			_ = action.Validate([]action.Action{a})
			action.Plan(a, ctx)
			if !reflect.DeepEqual(cfg, before) {
				t.Fatalf("Plan changed the config of %s", typ)
			}
		}
	})
}
