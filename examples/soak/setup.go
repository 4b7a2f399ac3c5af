package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"time"
)

// env is what every worker shares: the client, the super admin's key, the
// receiver, the toggles and the tenants.
type env struct {
	c          *client
	superKey   string
	recv       *receiver
	mockSecret string
	prefix     string // of the toggles' identifiers
	toggles    []toggleFix
	tenants    []*tenant
	workers    []*worker
	png        []byte
	ops        []op    // the operations the workers pick from (-skip left out)
	weight     float64 // their total weight
	// Global limits (per client address, and every worker is one
	// client): sign-in (20 a minute per address, 5 per address and
	// email) and each payment provider's webhooks (60 a minute).
	loginPace, hookPace *pacer
}

type toggleFix struct {
	id, identifier, typ string
}

// tenant is one tenant of the soak, shared by two workers.
type tenant struct {
	idx                         int
	id, orgID, roleID           string
	entity                      string // the custom entity
	webhookID                   string // the "*" webhook to the receiver
	setReads, setWrites, setRun *pacer // the rule-set limits, per tenant
}

// The rule-set routes' limits are 100 reads, 50 writes and 200 executions
// a minute per tenant; the soak stays at 80% of each.
const (
	setReadLimit  = 80
	setWriteLimit = 40
	setRunLimit   = 160
)

const (
	flowSet    = "SOAK_FLOW"
	entityName = "soak.items"
	attEntity  = "soak:docs"
)

// setup creates the fixtures every worker uses.
func setup(ctx context.Context, c *client, cfg config, recv *receiver, superKey, mockSecret string) (*env, error) {
	e := &env{c: c, superKey: superKey, recv: recv, mockSecret: mockSecret, prefix: "soak" + randomHex(3),
		loginPace: newPacer(cfg.LoginsPerMinute, time.Minute), hookPace: newPacer(40, time.Minute), png: makePNG(48, 32)}
	var err error
	if e.ops, e.weight, err = pickable(cfg.Skip); err != nil {
		return nil, err
	}
	must := func(a answer, what string, v any) error {
		if !a.ok() {
			return fmt.Errorf("%s: %d %v %s", what, a.status, a.err, oneLine(a.body))
		}
		if v != nil && !a.decode(v) {
			return fmt.Errorf("%s: body %s", what, oneLine(a.body))
		}
		return nil
	}
	sup := func(op, method, path string, body any, want ...int) answer {
		return c.do(ctx, call{op: "setup " + op, method: method, path: path, body: body, key: superKey, want: want})
	}

	var me struct {
		IsSuperAdmin bool `json:"isSuperAdmin"`
	}
	if err := must(sup("me", "GET", "/auth/me", nil, 200), "GET /auth/me", &me); err != nil {
		return nil, err
	}
	if !me.IsSuperAdmin {
		return nil, fmt.Errorf("the bootstrap key is no super admin")
	}

	// Feature toggles, global, one of each type.
	for _, tg := range []struct {
		name, typ string
		def       any
	}{{"flag", "boolean", false}, {"label", "string", "blue"}, {"limit", "number", 10}, {"config", "json", map[string]any{"mode": "a", "n": 1}}} {
		ident := e.prefix + "." + tg.name
		var out struct{ ID string }
		body := map[string]any{"identifier": ident, "name": "Soak " + tg.name, "description": "made by the soak", "category": e.prefix,
			"type": tg.typ, "defaultValue": tg.def}
		if err := must(sup("toggle", "POST", "/feature_toggles/global", body, 201), "create toggle", &out); err != nil {
			return nil, err
		}
		e.toggles = append(e.toggles, toggleFix{id: out.ID, identifier: ident, typ: tg.typ})
	}

	// Tenants: an organization and a role holding every feature each.
	nTenants := (cfg.Workers + 1) / 2
	for i := range nTenants {
		t := &tenant{idx: i, entity: entityName, setReads: newPacer(setReadLimit, time.Minute),
			setWrites: newPacer(setWriteLimit, time.Minute), setRun: newPacer(setRunLimit, time.Minute)}
		var id struct{ ID string }
		if err := must(sup("tenant", "POST", "/directory/tenants", map[string]any{"name": fmt.Sprintf("Soak tenant %d", i)}, 201), "create tenant", &id); err != nil {
			return nil, err
		}
		t.id = id.ID
		if err := must(sup("organization", "POST", "/directory/organizations", map[string]any{"name": fmt.Sprintf("Soak HQ %d", i), "tenantId": t.id}, 201),
			"create organization", &id); err != nil {
			return nil, err
		}
		t.orgID = id.ID
		if err := must(sup("role", "POST", "/auth/roles", map[string]any{"name": "soak-all", "tenantId": t.id}, 201), "create role", &id); err != nil {
			return nil, err
		}
		t.roleID = id.ID
		if err := must(sup("acl", "PUT", "/auth/roles/acl", map[string]any{"roleId": t.roleID, "features": []string{"*"}}, 200), "set ACL", nil); err != nil {
			return nil, err
		}
		e.tenants = append(e.tenants, t)
	}

	// Workers: a key and a user each.
	for i := range cfg.Workers {
		t := e.tenants[i%nTenants]
		w := &worker{e: e, t: t, id: i, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))}
		var k struct {
			ID     string `json:"id"`
			Secret string `json:"secret"`
		}
		body := map[string]any{"name": fmt.Sprintf("soak-worker-%d", i), "tenantId": t.id, "organizationId": t.orgID, "roles": []string{t.roleID}}
		if err := must(sup("key", "POST", "/api_keys/keys", body, 201), "create key", &k); err != nil {
			return nil, err
		}
		w.key, w.keyID = k.Secret, k.ID
		w.email, w.password = fmt.Sprintf("soak-w%d-%s@example.com", i, randomHex(3)), "soak-password-"+randomHex(6)
		user := map[string]any{"email": w.email, "password": w.password, "organizationId": t.orgID, "roles": []string{t.roleID}}
		if err := must(w.do(ctx, "setup user", "POST", "/auth/users", user, 201), "create user", nil); err != nil {
			return nil, err
		}
		e.workers = append(e.workers, w)
	}

	// Per tenant, with its first worker's key: the webhook, the entity,
	// the rules and the set.
	for _, t := range e.tenants {
		w := e.workers[t.idx]
		var wh struct{ ID string }
		hook := map[string]any{"name": "soak-all", "url": fmt.Sprintf("%s/hooks/t%d", recv.URL, t.idx), "subscribedEvents": []string{"*"}, "httpMethod": "POST"}
		if err := must(w.do(ctx, "setup webhook", "POST", "/webhooks", hook, 201), "create webhook", &wh); err != nil {
			return nil, err
		}
		t.webhookID = wh.ID

		ent := map[string]any{"entityId": t.entity, "label": "Soak items", "description": "records of the soak", "labelField": "name", "showInSidebar": true}
		if err := must(w.do(ctx, "setup entity", "POST", "/entities/entities", ent, 200), "create entity", nil); err != nil {
			return nil, err
		}
		defs := map[string]any{"entityId": t.entity, "definitions": []map[string]any{
			{"key": "name", "kind": "text"},
			{"key": "qty", "kind": "integer", "configJson": map[string]any{"filterable": true}},
			{"key": "price", "kind": "float"},
			{"key": "status", "kind": "select", "configJson": map[string]any{"options": statuses, "filterable": true}},
			{"key": "flag", "kind": "boolean", "configJson": map[string]any{"filterable": true}},
			{"key": "note", "kind": "text"},
		}}
		if err := must(w.do(ctx, "setup definitions", "POST", "/entities/definitions.batch", defs, 200), "define fields", nil); err != nil {
			return nil, err
		}

		for _, r := range flowRules(recv.URL) {
			if err := must(w.do(ctx, "setup rule", "POST", "/business_rules/rules", r, 201), "create rule", nil); err != nil {
				return nil, err
			}
		}
		if err := must(w.do(ctx, "setup set", "POST", "/business_rules/sets", map[string]any{"id": flowSet, "name": "Soak order flow"}, 201), "create set", nil); err != nil {
			return nil, err
		}
		for i, id := range []string{"SOAK-CALC", "SOAK-GUARD", "SOAK-HOOK"} {
			member := map[string]any{"ruleId": id, "sequence": 10 * (i + 1)}
			if err := must(w.do(ctx, "setup member", "POST", "/business_rules/sets/"+flowSet+"/members", member, 201), "add member", nil); err != nil {
				return nil, err
			}
		}
		// Four set writes above; keep the pacer honest.
		t.setWrites.take(4)
	}
	return e, nil
}

var statuses = []string{"open", "closed", "hold"}

// ruleBody is a valid rule (as httpapi's ruleBody).
func ruleBody(ruleID, typ, entityType string, cond any, success, failure []any) map[string]any {
	return map[string]any{"ruleId": ruleID, "ruleName": "Rule " + ruleID, "description": "made by the soak", "ruleType": typ,
		"ruleCategory": "soak", "entityType": entityType, "eventType": "beforeCreate", "conditionExpression": cond,
		"successActions": success, "failureActions": failure, "enabled": true, "priority": 100, "version": 1, "effectiveFrom": "2025-01-31"}
}

func leaf(field, op string, value any) map[string]any {
	return map[string]any{"field": field, "operator": op, "value": value}
}

func act(typ string, config map[string]any) map[string]any {
	return map[string]any{"type": typ, "config": config}
}

// flowRules are the set's rules: a calculation, a guard, and an action
// rule that calls the receiver (a durable job), emits an event and logs,
// for orders above 800.
func flowRules(recvURL string) []map[string]any {
	return []map[string]any{
		ruleBody("SOAK-CALC", "CALCULATION", "order", leaf("total", ">", 0),
			[]any{act("SET_FIELD", map[string]any{"field": "discount", "value": 5}),
				act("SHOW_INFO", map[string]any{"message": "Discount for {{orderId}}"})}, []any{}),
		ruleBody("SOAK-GUARD", "GUARD", "order",
			map[string]any{"operator": "AND", "rules": []any{leaf("status", "=", "ACTIVE"), leaf("total", ">", 100)}},
			[]any{act("ALLOW_TRANSITION", map[string]any{"message": "Order accepted"})},
			[]any{act("BLOCK_TRANSITION", map[string]any{"message": "Order {{orderId}} is too small"}),
				act("SHOW_ERROR", map[string]any{"message": "Minimum total is 100"})}),
		ruleBody("SOAK-HOOK", "ACTION", "order", leaf("total", ">", 800),
			[]any{act("CALL_WEBHOOK", map[string]any{"url": recvURL + "/rule/{{entityId}}", "method": "POST",
				"body": map[string]any{"id": "{{entityId}}", "total": "{{total}}"}}),
				act("EMIT_EVENT", map[string]any{"eventName": "soak.order.big", "payload": map[string]any{"id": "{{entityId}}"}}),
				act("LOG", map[string]any{"message": "big order {{orderId}}", "level": "info"})}, []any{}),
	}
}

// makePNG is a small gradient PNG.
func makePNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{R: uint8(x * 255 / w), G: uint8(y * 255 / h), B: 128, A: 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}
