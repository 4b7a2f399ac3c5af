package rules_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/rules/action"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Rules, sets and members are tenant-scoped, so every test works in fresh
// tenants (storetest.NewScope) and shares the package's PostgreSQL schema
// (storetest.Each).

func raw(s string) json.RawMessage { return json.RawMessage(s) }
func ptr[T any](v T) *T            { return &v }

// ruleInput is a valid rule with the required fields only.
func ruleInput(ruleID string) rules.RuleInput {
	return rules.RuleInput{
		RuleID: ruleID, RuleName: "Rule " + ruleID, RuleType: rules.Guard, EntityType: "order",
		ConditionExpression: raw(`{"field":"status","operator":"=","value":"OPEN"}`),
		Enabled:             ptr(true), Priority: ptr(10), Version: ptr(1),
	}
}

// createRule stores a rule or fails the test.
func createRule(t *testing.T, svc *rules.Service, ctx context.Context, in rules.RuleInput) *rules.Rule {
	t.Helper()
	r, err := svc.CreateRule(ctx, in)
	if err != nil {
		t.Fatalf("CreateRule(%s): %v", in.RuleID, err)
	}
	return r
}

// createSet stores a set or fails the test.
func createSet(t *testing.T, svc *rules.Service, ctx context.Context, id string) *rules.RuleSet {
	t.Helper()
	rs, err := svc.CreateSet(ctx, rules.SetInput{ID: id, Name: "Set " + id})
	if err != nil {
		t.Fatalf("CreateSet(%s): %v", id, err)
	}
	return rs
}

// addMember puts a rule into a set or fails the test.
func addMember(t *testing.T, svc *rules.Service, ctx context.Context, setID, ruleID string, seq int) *rules.SetMember {
	t.Helper()
	m, err := svc.AddMember(ctx, setID, rules.MemberInput{RuleID: ruleID, Sequence: ptr(seq)})
	if err != nil {
		t.Fatalf("AddMember(%s, %s): %v", setID, ruleID, err)
	}
	return m
}

// wantInvalid checks that err is a *store.ValidationError naming field and
// an ErrInvalid, and returns the field's message.
func wantInvalid(t *testing.T, err error, field string) string {
	t.Helper()
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v (%T), want a *store.ValidationError on %q", err, err, field)
	}
	msg, ok := ve.Fields[field]
	if !ok {
		t.Fatalf("validation error %v does not name field %q", ve, field)
	}
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("errors.Is(%v, store.ErrInvalid) = false", err)
	}
	return msg
}

// wantFields checks that err is a validation error naming exactly fields.
func wantFields(t *testing.T, err error, fields ...string) {
	t.Helper()
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v (%T), want a *store.ValidationError on %v", err, err, fields)
	}
	got := make([]string, 0, len(ve.Fields))
	for f := range ve.Fields {
		got = append(got, f)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(fields))
	if !slices.Equal(got, want) {
		t.Fatalf("validation error names %v, want %v (%v)", got, want, ve)
	}
}

func wantIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want errors.Is(err, %v)", err, target)
	}
}

// wantCode checks that err is a *rules.CodedError with code and kind.
func wantCode(t *testing.T, err error, code string, kind error) *rules.CodedError {
	t.Helper()
	var ce *rules.CodedError
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v (%T), want a *rules.CodedError %s", err, err, code)
	}
	if ce.Code != code {
		t.Fatalf("code = %s (%v), want %s", ce.Code, err, code)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("errors.Is(%v, %v) = false", err, kind)
	}
	if ce.Message == "" || store.PublicMessage(err) != ce.Message {
		t.Fatalf("message %q, public message %q", ce.Message, store.PublicMessage(err))
	}
	return ce
}

// wantRuleNotFound checks the rules API's 404.
func wantRuleNotFound(t *testing.T, err error) {
	t.Helper()
	wantIs(t, err, store.ErrNotFound)
	if msg := store.PublicMessage(err); msg != "Rule not found" {
		t.Fatalf("public message %q (%v), want %q", msg, err, "Rule not found")
	}
}

// ruleIDs lists the business ids of rs in order.
func ruleIDs(rs []*rules.Rule) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.RuleID
	}
	return ids
}

func setIDs(sets []*rules.RuleSet) []string {
	ids := make([]string, len(sets))
	for i, s := range sets {
		ids[i] = s.ID
	}
	return ids
}

func memberIDs(ms []rules.SetMember) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.RuleID
	}
	return ids
}

// listRules returns the ruleIds of a list call and its total.
func listRules(t *testing.T, svc *rules.Service, ctx context.Context, f rules.RuleFilter) ([]string, int) {
	t.Helper()
	if f.Limit == 0 {
		f.Limit = 100
	}
	rs, total, err := svc.ListRules(ctx, f)
	if err != nil {
		t.Fatalf("ListRules(%+v): %v", f, err)
	}
	return ruleIDs(rs), total
}

// event is an event of the tenant, its data decoded.
type event struct {
	Type, TenantID, OrganizationID string
	Data                           map[string]any
}

// events returns the tenant's events, oldest first.
func events(t *testing.T, db *store.DB, tenantID string) []event {
	t.Helper()
	evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: tenantID, Limit: 1000})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	out := make([]event, len(evs))
	for i, ev := range evs {
		out[i] = event{Type: ev.Type, TenantID: ev.TenantID, OrganizationID: ev.OrganizationID}
		if err := json.Unmarshal(ev.Data, &out[i].Data); err != nil {
			t.Fatalf("event %s data %s: %v", ev.Type, ev.Data, err)
		}
	}
	return out
}

func eventTypes(evs []event) []string {
	types := make([]string, len(evs))
	for i, ev := range evs {
		types[i] = ev.Type
	}
	return types
}

// nest is n AND groups around one comparison.
func nest(n int) string {
	expr := `{"field":"a","operator":"=","value":1}`
	for range n {
		expr = `{"operator":"AND","rules":[` + expr + `]}`
	}
	return expr
}

func TestRuleCreateGetUpdateDelete(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		before := time.Now().Add(-time.Second)

		in := rules.RuleInput{
			RuleID: "ORDER_OPEN_GUARD", RuleName: "Open orders only", Description: "Blocks changes to closed orders",
			RuleType: rules.Guard, RuleCategory: "orders", EntityType: "order", EventType: "beforeUpdate",
			ConditionExpression: raw("{\n  \"operator\" : \"AND\",\n  \"rules\": [ {\"field\": \"status\", \"operator\": \"=\", \"value\": \"OPEN\"},\n\t{\"field\":\"total\", \"operator\":\">\", \"compareToField\":\"limit\"} ]\n}\n"),
			SuccessActions:      raw(` [ {"type": "ALLOW_TRANSITION"} ] `),
			FailureActions: raw(`[{"type":"BLOCK_TRANSITION","config":{"message":"closed"}},
				{"type":"NOTIFY","config":{"message":"m","recipients":["a@example.com"]}}]`),
			Enabled: ptr(false), Priority: ptr(42), Version: ptr(3),
			EffectiveFrom: ptr("2025-01-31"), EffectiveTo: ptr("2025-12-31T18:30:00+02:00"),
		}
		wantCond := `{"operator":"AND","rules":[{"field":"status","operator":"=","value":"OPEN"},{"field":"total","operator":">","compareToField":"limit"}]}`
		wantSuccess := []action.Action{{Type: action.AllowTransition}}
		wantFailure := []action.Action{
			{Type: action.BlockTransition, Config: map[string]any{"message": "closed"}},
			{Type: action.Notify, Config: map[string]any{"message": "m", "recipients": []any{"a@example.com"}}},
		}
		from := time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC)
		to := time.Date(2025, 12, 31, 16, 30, 0, 0, time.UTC)

		created, err := svc.CreateRule(ctx, in)
		is.NoErr(err)
		check := func(r *rules.Rule) {
			t.Helper()
			is := is.New(t)
			is.True(store.IsID(r.ID))
			is.Equal(r.RuleID, "ORDER_OPEN_GUARD")
			is.Equal(r.RuleName, "Open orders only")
			is.Equal(r.Description, "Blocks changes to closed orders")
			is.Equal(r.RuleType, rules.Guard)
			is.Equal(r.RuleCategory, "orders")
			is.Equal(r.EntityType, "order")
			is.Equal(r.EventType, "beforeUpdate")
			is.Equal(string(r.ConditionExpression), wantCond) // compacted, key order kept
			is.Equal(r.SuccessActions, wantSuccess)
			is.Equal(r.FailureActions, wantFailure)
			is.Equal(r.Enabled, false)
			is.Equal(r.Priority, 42)
			is.Equal(r.Version, 3)
			is.True(r.EffectiveFrom != nil && r.EffectiveFrom.Equal(from))
			is.Equal(r.EffectiveFrom.Location(), time.UTC)
			is.True(r.EffectiveTo != nil && r.EffectiveTo.Equal(to)) // the offset is converted
			is.Equal(r.EffectiveTo.Location(), time.UTC)
			is.Equal(r.TenantID, sc.TenantID)
			is.Equal(r.OrganizationID, sc.OrganizationID)
			is.True(r.CreatedAt.After(before) && r.CreatedAt.Before(time.Now().Add(time.Second)))
			is.True(r.UpdatedAt.Equal(r.CreatedAt))
		}
		check(created)

		got, err := svc.GetRule(ctx, created.ID)
		is.NoErr(err)
		check(got)
		is.Equal(got.ID, created.ID)
		is.True(got.CreatedAt.Equal(created.CreatedAt)) // timestamps round-trip
		is.Equal(got.CreatedAt.Location(), time.UTC)

		// The JSON form carries the spec's field names.
		b, err := json.Marshal(got)
		is.NoErr(err)
		var doc map[string]any
		is.NoErr(json.Unmarshal(b, &doc))
		for _, key := range []string{"id", "ruleId", "ruleName", "description", "ruleType", "ruleCategory", "entityType",
			"eventType", "conditionExpression", "successActions", "failureActions", "enabled", "priority", "version",
			"effectiveFrom", "effectiveTo", "tenantId", "organizationId", "createdAt", "updatedAt"} {
			_, ok := doc[key]
			is.True(ok) // a field of the spec's Rule
		}
		is.Equal(doc["effectiveFrom"], "2025-01-31T00:00:00Z")

		// PUT replaces every field: absent optional fields are cleared.
		updated, err := svc.UpdateRule(ctx, created.ID, rules.RuleInput{
			RuleID: "ORDER_GUARD_V2", RuleName: "Open orders (v2)", RuleType: rules.Validation, EntityType: "salesOrder",
			ConditionExpression: raw(`{ "field": "total", "operator": "<=", "value": 100 }`),
			Enabled:             ptr(true), Priority: ptr(0), Version: ptr(4),
		})
		is.NoErr(err)
		checkUpdated := func(r *rules.Rule) {
			t.Helper()
			is := is.New(t)
			is.Equal(r.ID, created.ID)
			is.Equal(r.RuleID, "ORDER_GUARD_V2")
			is.Equal(r.RuleName, "Open orders (v2)")
			is.Equal(r.Description, "")
			is.Equal(r.RuleType, rules.Validation)
			is.Equal(r.RuleCategory, "")
			is.Equal(r.EntityType, "salesOrder")
			is.Equal(r.EventType, "")
			is.Equal(string(r.ConditionExpression), `{"field":"total","operator":"<=","value":100}`)
			is.Equal(len(r.SuccessActions), 0)
			is.Equal(len(r.FailureActions), 0)
			is.Equal(r.Enabled, true)
			is.Equal(r.Priority, 0)
			is.Equal(r.Version, 4)
			is.True(r.EffectiveFrom == nil)
			is.True(r.EffectiveTo == nil)
			is.Equal(r.TenantID, sc.TenantID)
			is.Equal(r.OrganizationID, sc.OrganizationID)
			is.True(r.CreatedAt.Equal(created.CreatedAt)) // creation stays
			is.True(r.UpdatedAt.After(created.UpdatedAt)) // UpdatedAt moves
		}
		checkUpdated(updated)
		got, err = svc.GetRule(ctx, created.ID)
		is.NoErr(err)
		checkUpdated(got)
		is.True(got.UpdatedAt.Equal(updated.UpdatedAt))

		// An update from another organization of the tenant (allowed to
		// read every organization) keeps the rule's organization.
		other := store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID, OrganizationID: store.NewID()})
		again, err := svc.UpdateRule(other, created.ID, ruleInput("ORDER_GUARD_V2"))
		is.NoErr(err)
		is.Equal(again.OrganizationID, sc.OrganizationID)
		got, err = svc.GetRule(ctx, created.ID)
		is.NoErr(err)
		is.Equal(got.OrganizationID, sc.OrganizationID)
		is.Equal(got.TenantID, sc.TenantID)

		// Unknown ids.
		_, err = svc.GetRule(ctx, store.NewID())
		wantRuleNotFound(t, err)
		_, err = svc.GetRule(ctx, "not-a-uuid")
		wantRuleNotFound(t, err)
		_, err = svc.UpdateRule(ctx, store.NewID(), ruleInput("X"))
		wantRuleNotFound(t, err)
		wantRuleNotFound(t, svc.DeleteRule(ctx, store.NewID()))

		// Delete is soft: the rule is gone from Get, Update, Delete and List,
		// and its ruleId is free again.
		keep := createRule(t, svc, ctx, ruleInput("KEEP"))
		is.NoErr(svc.DeleteRule(ctx, created.ID))
		_, err = svc.GetRule(ctx, created.ID)
		wantRuleNotFound(t, err)
		_, err = svc.UpdateRule(ctx, created.ID, ruleInput("ORDER_GUARD_V2"))
		wantRuleNotFound(t, err)
		wantRuleNotFound(t, svc.DeleteRule(ctx, created.ID))
		ids, total := listRules(t, svc, ctx, rules.RuleFilter{})
		is.Equal(ids, []string{"KEEP"})
		is.Equal(total, 1)
		ids, total = listRules(t, svc, ctx, rules.RuleFilter{RuleID: "ORDER_GUARD_V2"})
		is.Equal(len(ids), 0)
		is.Equal(total, 0)
		var n int
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM business_rules WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NOT NULL`,
			sc.TenantID, created.ID).Scan(&n))
		is.Equal(n, 1) // the row stays, marked deleted

		reused := createRule(t, svc, ctx, ruleInput("ORDER_GUARD_V2"))
		is.True(reused.ID != created.ID)
		// and an update may take a deleted rule's ruleId too
		is.NoErr(svc.DeleteRule(ctx, reused.ID))
		renamed, err := svc.UpdateRule(ctx, keep.ID, ruleInput("ORDER_GUARD_V2"))
		is.NoErr(err)
		is.Equal(renamed.RuleID, "ORDER_GUARD_V2")
	}, rules.Migrations)
}

// Action lists: absent and null are null; [] stays an empty list.
func TestRuleActionLists(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)

		in := ruleInput("NULLS")
		in.SuccessActions = raw("null")
		r := createRule(t, svc, ctx, in)
		is.True(r.SuccessActions == nil)
		is.True(r.FailureActions == nil)
		got, err := svc.GetRule(ctx, r.ID)
		is.NoErr(err)
		is.True(got.SuccessActions == nil)
		is.True(got.FailureActions == nil)
		b, err := json.Marshal(got)
		is.NoErr(err)
		is.True(strings.Contains(string(b), `"successActions":null`))
		is.True(strings.Contains(string(b), `"failureActions":null`))

		in = ruleInput("EMPTY")
		in.SuccessActions, in.FailureActions = raw("[]"), raw(" [ ] ")
		r = createRule(t, svc, ctx, in)
		got, err = svc.GetRule(ctx, r.ID)
		is.NoErr(err)
		is.True(got.SuccessActions != nil && len(got.SuccessActions) == 0)
		is.True(got.FailureActions != nil && len(got.FailureActions) == 0)

		// Every action type, with its config, round-trips.
		in = ruleInput("ALL_TYPES")
		in.SuccessActions = raw(`[
			{"type":"LOG","config":{"message":"hello {{ruleId}}","level":"warn"}},
			{"type":"SHOW_WARNING","config":{"message":"careful"}},
			{"type":"SET_FIELD","config":{"field":"status","value":false}},
			{"type":"CALL_WEBHOOK","config":{"url":"https://example.com/hook","method":"PUT","headers":{"X-A":"1"},"body":{"n":1.5}}},
			{"type":"EMIT_EVENT","config":{"eventName":"orders.checked","payload":{"id":"{{entityId}}"}}}]`)
		r = createRule(t, svc, ctx, in)
		got, err = svc.GetRule(ctx, r.ID)
		is.NoErr(err)
		is.Equal(len(got.SuccessActions), 5)
		is.Equal(got.SuccessActions, r.SuccessActions)
		is.Equal(got.SuccessActions[2].Config["value"], false)
		is.Equal(got.SuccessActions[3].Config["body"], map[string]any{"n": 1.5})

	}, rules.Migrations)
}

// A NUL inside the JSON fields ("\u0000" in a string or a key) cannot be
// stored on PostgreSQL (the event payload is jsonb), so, like NUL in the
// text fields (doc.go: "NUL characters are refused"), it must be refused
// as a validation error naming the field, the same on both engines.
func TestRuleRefusesNULInJSON(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		for i, c := range []struct {
			name  string
			edit  func(in *rules.RuleInput)
			field string
		}{
			{"conditionExpression value", func(in *rules.RuleInput) {
				in.ConditionExpression = raw(`{"field":"a","operator":"=","value":"x\u0000y"}`)
			}, "conditionExpression"},
			{"conditionExpression key", func(in *rules.RuleInput) {
				in.ConditionExpression = raw(`{"field":"a","operator":"IN","value":[{"\u0000":1}]}`)
			}, "conditionExpression"},
			{"successActions message", func(in *rules.RuleInput) {
				in.SuccessActions = raw(`[{"type":"SHOW_INFO","config":{"message":"a\u0000b"}}]`)
			}, "successActions"},
			{"failureActions payload", func(in *rules.RuleInput) {
				in.FailureActions = raw(`[{"type":"EMIT_EVENT","config":{"eventName":"a.b","payload":{"k":"\u0000"}}}]`)
			}, "failureActions"},
		} {
			t.Run(c.name, func(t *testing.T) {
				in := ruleInput(fmt.Sprintf("NUL_JSON_%d", i))
				c.edit(&in)
				_, err := svc.CreateRule(ctx, in)
				wantInvalid(t, err, c.field)
				existing := createRule(t, svc, ctx, ruleInput(fmt.Sprintf("NUL_JSON_UPDATE_%d", i)))
				_, err = svc.UpdateRule(ctx, existing.ID, in)
				wantInvalid(t, err, c.field)
			})
		}
	}, rules.Migrations)
}

func TestRuleEffectiveDates(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		for i, c := range []struct {
			from, to         *string
			wantFrom, wantTo time.Time // zero: none
		}{
			{from: ptr("2025-01-31"), wantFrom: time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC)},
			{to: ptr("2025-01-31T10:20:30Z"), wantTo: time.Date(2025, 1, 31, 10, 20, 30, 0, time.UTC)},
			{from: ptr("2025-01-31T10:20:30.123456-05:00"), wantFrom: time.Date(2025, 1, 31, 15, 20, 30, 123456000, time.UTC)},
			{from: ptr("2025-01-31T10:20:30"), wantFrom: time.Date(2025, 1, 31, 10, 20, 30, 0, time.UTC)},
			{from: ptr(""), to: nil},
			{from: ptr("2025-03-01"), to: ptr("2025-03-01"), // the same day is not "before"
				wantFrom: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), wantTo: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)},
			{from: ptr("2025-03-01T12:00:00+02:00"), to: ptr("2025-03-01T10:00:00Z"), // equal instants
				wantFrom: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), wantTo: time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)},
		} {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				is := is.New(t)
				in := ruleInput(fmt.Sprintf("DATES_%d", i))
				in.EffectiveFrom, in.EffectiveTo = c.from, c.to
				r := createRule(t, svc, ctx, in)
				got, err := svc.GetRule(ctx, r.ID)
				is.NoErr(err)
				for _, r := range []*rules.Rule{r, got} {
					for _, p := range []struct {
						got  *time.Time
						want time.Time
					}{{r.EffectiveFrom, c.wantFrom}, {r.EffectiveTo, c.wantTo}} {
						if p.want.IsZero() {
							is.True(p.got == nil)
							continue
						}
						is.True(p.got != nil)
						is.True(p.got.Equal(p.want))
						is.Equal(p.got.Location(), time.UTC)
					}
				}
			})
		}
	}, rules.Migrations)
}

func TestRuleValidation(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("x", n) }
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		for i, c := range []struct {
			name  string
			edit  func(in *rules.RuleInput)
			field string
			msg   string // a part of the field's message
		}{
			{"ruleId missing", func(in *rules.RuleInput) { in.RuleID = "" }, "ruleId", "required"},
			{"ruleId blank", func(in *rules.RuleInput) { in.RuleID = "  \t" }, "ruleId", "required"},
			{"ruleName missing", func(in *rules.RuleInput) { in.RuleName = "" }, "ruleName", "required"},
			{"entityType missing", func(in *rules.RuleInput) { in.EntityType = "" }, "entityType", "required"},
			{"ruleId 51", func(in *rules.RuleInput) { in.RuleID = long(51) }, "ruleId", "50"},
			{"ruleId 51 characters", func(in *rules.RuleInput) { in.RuleID = strings.Repeat("é", 51) }, "ruleId", "50"},
			{"ruleName 201", func(in *rules.RuleInput) { in.RuleName = long(201) }, "ruleName", "200"},
			{"description 5001", func(in *rules.RuleInput) { in.Description = long(5001) }, "description", "5000"},
			{"ruleCategory 51", func(in *rules.RuleInput) { in.RuleCategory = long(51) }, "ruleCategory", "50"},
			{"entityType 51", func(in *rules.RuleInput) { in.EntityType = long(51) }, "entityType", "50"},
			{"eventType 51", func(in *rules.RuleInput) { in.EventType = long(51) }, "eventType", "50"},
			{"ruleType missing", func(in *rules.RuleInput) { in.RuleType = "" }, "ruleType", "GUARD"},
			{"ruleType unknown", func(in *rules.RuleInput) { in.RuleType = "BLOCKER" }, "ruleType", "GUARD"},
			{"ruleType lowercase", func(in *rules.RuleInput) { in.RuleType = "guard" }, "ruleType", "GUARD"},
			{"conditionExpression missing", func(in *rules.RuleInput) { in.ConditionExpression = nil }, "conditionExpression", "required"},
			{"conditionExpression null", func(in *rules.RuleInput) { in.ConditionExpression = raw("null") }, "conditionExpression", "required"},
			{"conditionExpression not JSON", func(in *rules.RuleInput) { in.ConditionExpression = raw(`{"field":`) }, "conditionExpression", "not valid JSON"},
			{"conditionExpression not an object", func(in *rules.RuleInput) { in.ConditionExpression = raw(`"status = 1"`) }, "conditionExpression", "must be an object"},
			{"conditionExpression unknown operator", func(in *rules.RuleInput) {
				in.ConditionExpression = raw(`{"field":"a","operator":"LIKE","value":1}`)
			}, "conditionExpression", "operator: must be one of"},
			{"conditionExpression unknown operator in a group", func(in *rules.RuleInput) {
				in.ConditionExpression = raw(`{"operator":"OR","rules":[{"field":"a","operator":"=","value":1},{"field":"b","operator":"~","value":1}]}`)
			}, "conditionExpression", "rules[1].operator"},
			{"conditionExpression unknown group operator", func(in *rules.RuleInput) {
				in.ConditionExpression = raw(`{"operator":"XOR","rules":[{"field":"a","operator":"=","value":1}]}`)
			}, "conditionExpression", "must be AND, OR or NOT"},
			{"conditionExpression empty group", func(in *rules.RuleInput) {
				in.ConditionExpression = raw(`{"operator":"AND","rules":[]}`)
			}, "conditionExpression", "rules: must be a non-empty array"},
			{"conditionExpression without value", func(in *rules.RuleInput) {
				in.ConditionExpression = raw(`{"field":"a","operator":"="}`)
			}, "conditionExpression", "value: is required"},
			{"conditionExpression depth 11", func(in *rules.RuleInput) { in.ConditionExpression = raw(nest(11)) },
				"conditionExpression", "exceeds safety limits (max depth: 10"},
			{"successActions unknown type", func(in *rules.RuleInput) { in.SuccessActions = raw(`[{"type":"EXPLODE"}]`) },
				"successActions", "[0].type: must be one of"},
			{"successActions not an array", func(in *rules.RuleInput) { in.SuccessActions = raw(`{"type":"LOG","config":{"message":"m"}}`) },
				"successActions", "must be an array"},
			{"failureActions NOTIFY without recipients", func(in *rules.RuleInput) {
				in.FailureActions = raw(`[{"type":"LOG","config":{"message":"m"}},{"type":"NOTIFY","config":{"message":"m"}}]`)
			}, "failureActions", "[1].config.recipients"},
			{"failureActions not an array", func(in *rules.RuleInput) { in.FailureActions = raw(`"LOG"`) }, "failureActions", "must be an array"},
			{"enabled missing", func(in *rules.RuleInput) { in.Enabled = nil }, "enabled", "required"},
			{"priority missing", func(in *rules.RuleInput) { in.Priority = nil }, "priority", "required"},
			{"priority -1", func(in *rules.RuleInput) { in.Priority = ptr(-1) }, "priority", "0 to 9999"},
			{"priority 10000", func(in *rules.RuleInput) { in.Priority = ptr(10000) }, "priority", "0 to 9999"},
			{"version missing", func(in *rules.RuleInput) { in.Version = nil }, "version", "required"},
			{"version 0", func(in *rules.RuleInput) { in.Version = ptr(0) }, "version", "positive"},
			{"version -3", func(in *rules.RuleInput) { in.Version = ptr(-3) }, "version", "positive"},
			{"effectiveFrom not a date", func(in *rules.RuleInput) { in.EffectiveFrom = ptr("31/01/2025") }, "effectiveFrom", "ISO 8601"},
			{"effectiveFrom impossible date", func(in *rules.RuleInput) { in.EffectiveFrom = ptr("2025-02-30") }, "effectiveFrom", "ISO 8601"},
			{"effectiveTo not a date", func(in *rules.RuleInput) { in.EffectiveTo = ptr("tomorrow") }, "effectiveTo", "ISO 8601"},
			{"effectiveTo before effectiveFrom", func(in *rules.RuleInput) {
				in.EffectiveFrom, in.EffectiveTo = ptr("2025-02-01"), ptr("2025-01-31T23:59:59Z")
			}, "effectiveTo", "before effectiveFrom"},
			{"NUL in ruleId", func(in *rules.RuleInput) { in.RuleID = "A\x00B" }, "ruleId", "NUL"},
			{"NUL in ruleName", func(in *rules.RuleInput) { in.RuleName = "a\x00b" }, "ruleName", "NUL"},
			{"NUL in description", func(in *rules.RuleInput) { in.Description = "\x00" }, "description", "NUL"},
			{"NUL in ruleCategory", func(in *rules.RuleInput) { in.RuleCategory = "c\x00" }, "ruleCategory", "NUL"},
			{"NUL in entityType", func(in *rules.RuleInput) { in.EntityType = "\x00order" }, "entityType", "NUL"},
			{"NUL in eventType", func(in *rules.RuleInput) { in.EventType = "on\x00" }, "eventType", "NUL"},
		} {
			t.Run(c.name, func(t *testing.T) {
				is := is.New(t)
				in := ruleInput("VALID")
				c.edit(&in)
				_, err := svc.CreateRule(ctx, in)
				msg := wantInvalid(t, err, c.field)
				wantFields(t, err, c.field) // only the one problem
				if !strings.Contains(msg, c.msg) {
					t.Fatalf("%s: message %q does not contain %q", c.field, msg, c.msg)
				}
				// An update is validated the same way.
				existing := createRule(t, svc, ctx, ruleInput(fmt.Sprintf("EXISTING_%d", i)))
				_, err = svc.UpdateRule(ctx, existing.ID, in)
				wantInvalid(t, err, c.field)
				got, err := svc.GetRule(ctx, existing.ID)
				is.NoErr(err)
				is.Equal(got.RuleName, existing.RuleName) // unchanged
				is.True(got.UpdatedAt.Equal(existing.UpdatedAt))
			})
		}

		// Nothing invalid was stored.
		ids, _ := listRules(t, svc, ctx, rules.RuleFilter{RuleID: "VALID"})
		if len(ids) != 0 {
			t.Fatalf("invalid rules were stored: %v", ids)
		}

		t.Run("several problems together", func(t *testing.T) {
			_, err := svc.CreateRule(ctx, rules.RuleInput{RuleType: "NOPE", Priority: ptr(-1), Version: ptr(0),
				SuccessActions: raw(`[{"type":"NOTIFY"}]`), EffectiveFrom: ptr("soon")})
			wantFields(t, err, "ruleId", "ruleName", "entityType", "ruleType", "conditionExpression", "successActions",
				"enabled", "priority", "version", "effectiveFrom")
			wantIs(t, err, store.ErrInvalid)
		})

		t.Run("limits are inclusive", func(t *testing.T) {
			is := is.New(t)
			in := rules.RuleInput{
				RuleID: long(50), RuleName: strings.Repeat("n", 200), Description: strings.Repeat("d", 5000),
				RuleType: rules.Assignment, RuleCategory: strings.Repeat("é", 50), EntityType: strings.Repeat("ü", 50),
				EventType: strings.Repeat("€", 50), ConditionExpression: raw(nest(10)),
				Enabled: ptr(true), Priority: ptr(9999), Version: ptr(1 << 30),
			}
			r := createRule(t, svc, ctx, in)
			got, err := svc.GetRule(ctx, r.ID)
			is.NoErr(err)
			is.Equal(got.RuleID, in.RuleID)
			is.Equal(got.RuleName, in.RuleName)
			is.Equal(got.Description, in.Description)
			is.Equal(got.RuleCategory, in.RuleCategory)
			is.Equal(got.EntityType, in.EntityType)
			is.Equal(got.EventType, in.EventType)
			is.Equal(got.Priority, 9999)
			is.Equal(got.Version, 1<<30)
			is.Equal(string(got.ConditionExpression), nest(10))

			in = ruleInput("PRIORITY_ZERO")
			in.Priority = ptr(0)
			r = createRule(t, svc, ctx, in)
			is.Equal(r.Priority, 0)
			for _, typ := range rules.Types {
				in := ruleInput("TYPE_" + string(typ))
				in.RuleType = typ
				is.Equal(createRule(t, svc, ctx, in).RuleType, typ)
			}
		})

		t.Run("refusals emit nothing", func(t *testing.T) {
			for _, ev := range events(t, db, sc.TenantID) {
				if ev.Data["ruleId"] == "VALID" {
					t.Fatalf("an invalid create emitted %s", ev.Type)
				}
			}
		})
	}, rules.Migrations)
}

func TestDuplicateRuleID(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		ctxB, _ := storetest.NewScope(t)

		first := createRule(t, svc, ctx, ruleInput("DUP"))
		in := ruleInput("DUP")
		in.RuleName = "Another name"
		_, err := svc.CreateRule(ctx, in)
		wantIs(t, err, store.ErrConflict)
		is.True(!errors.Is(err, store.ErrInvalid))
		is.True(strings.Contains(store.PublicMessage(err), "DUP"))

		// Another organization of the same tenant: ruleIds are per tenant.
		otherOrg := store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID, OrganizationID: store.NewID()})
		_, err = svc.CreateRule(otherOrg, ruleInput("DUP"))
		wantIs(t, err, store.ErrConflict)

		// Another tenant may use it.
		b := createRule(t, svc, ctxB, ruleInput("DUP"))
		is.True(b.ID != first.ID)

		// An update to another live rule's ruleId is a conflict; keeping
		// one's own is not.
		second := createRule(t, svc, ctx, ruleInput("SECOND"))
		_, err = svc.UpdateRule(ctx, second.ID, ruleInput("DUP"))
		wantIs(t, err, store.ErrConflict)
		got, err := svc.GetRule(ctx, second.ID)
		is.NoErr(err)
		is.Equal(got.RuleID, "SECOND")
		_, err = svc.UpdateRule(ctx, first.ID, ruleInput("DUP"))
		is.NoErr(err)

		ids, total := listRules(t, svc, ctx, rules.RuleFilter{RuleID: "DUP"})
		is.Equal(ids, []string{"DUP"})
		is.Equal(total, 1)
	}, rules.Migrations)
}

// Concurrent creates of one ruleId, adds of one member and creates of one
// set: exactly one wins, the others get the duplicate error.
func TestConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		const n = 8
		race := func(fn func() error, check func(err error) bool) {
			t.Helper()
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { errs[i] = fn() })
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case !check(err):
					t.Fatalf("unexpected error: %v", err)
				}
			}
			is.Equal(ok, 1) // exactly one wins
		}
		coded := func(code string) func(error) bool {
			return func(err error) bool {
				var ce *rules.CodedError
				return errors.As(err, &ce) && ce.Code == code && errors.Is(err, store.ErrConflict)
			}
		}

		race(func() error { _, err := svc.CreateRule(ctx, ruleInput("RACE")); return err },
			func(err error) bool { return errors.Is(err, store.ErrConflict) })
		ids, total := listRules(t, svc, ctx, rules.RuleFilter{})
		is.Equal(ids, []string{"RACE"})
		is.Equal(total, 1)

		race(func() error { _, err := svc.CreateSet(ctx, rules.SetInput{ID: "RACE_SET", Name: "Race"}); return err },
			coded(rules.CodeSetExists))
		race(func() error {
			_, err := svc.AddMember(ctx, "RACE_SET", rules.MemberInput{RuleID: "RACE", Sequence: ptr(1)})
			return err
		}, coded(rules.CodeRuleAlreadyInSet))
		rs, err := svc.GetSet(ctx, "RACE_SET")
		is.NoErr(err)
		is.Equal(rs.MemberCount, 1)
		is.Equal(memberIDs(rs.Members), []string{"RACE"})
	}, rules.Migrations)
}

func TestListRules(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)

		mk := func(ruleID, name string, typ rules.Type, entity, event, category string, enabled bool, priority int) *rules.Rule {
			in := ruleInput(ruleID)
			in.RuleName, in.RuleType, in.EntityType, in.EventType, in.RuleCategory = name, typ, entity, event, category
			in.Enabled, in.Priority = ptr(enabled), ptr(priority)
			return createRule(t, svc, ctx, in)
		}
		// In creation order.
		mk("ORD_GUARD", "Order guard", rules.Guard, "order", "beforeCreate", "orders", true, 5)
		mk("ORD_VALID", "Order validation", rules.Validation, "order", "beforeUpdate", "orders", false, 50)
		inv := mk("INV_CALC", "Invoice total", rules.Calculation, "invoice", "beforeCreate", "billing", true, 20)
		mk("SHIP_ACTION", "Ship notify", rules.Action, "shipment", "afterUpdate", "", true, 1)
		mk("asg_1", "Assign owner", rules.Assignment, "order", "", "", false, 9999)
		gone := mk("DELETED_ORDER", "Deleted order rule", rules.Guard, "order", "beforeCreate", "orders", true, 7)
		is.NoErr(svc.DeleteRule(ctx, gone.ID))
		// A rule of another tenant never shows.
		ctxB, _ := storetest.NewScope(t)
		createRule(t, svc, ctxB, ruleInput("ORD_OTHER_TENANT"))

		created := []string{"ORD_GUARD", "ORD_VALID", "INV_CALC", "SHIP_ACTION", "asg_1"}
		for _, c := range []struct {
			name string
			f    rules.RuleFilter
			want []string
		}{
			{"all, by creation", rules.RuleFilter{}, created},
			{"search names, case-insensitive", rules.RuleFilter{Search: "ORDER"}, []string{"ORD_GUARD", "ORD_VALID"}},
			{"search ids, case-insensitive", rules.RuleFilter{Search: "ship_act"}, []string{"SHIP_ACTION"}},
			{"search name or id", rules.RuleFilter{Search: "inv"}, []string{"INV_CALC"}},
			{"search _ is literal", rules.RuleFilter{Search: "g_"}, []string{"asg_1"}},
			{"search % is literal", rules.RuleFilter{Search: "%"}, nil},
			{"search no match", rules.RuleFilter{Search: "nothing"}, nil},
			{"ruleId exact", rules.RuleFilter{RuleID: "ORD_GUARD"}, []string{"ORD_GUARD"}},
			{"ruleId is not a search", rules.RuleFilter{RuleID: "ORD"}, nil},
			{"ruleType", rules.RuleFilter{RuleType: rules.Validation}, []string{"ORD_VALID"}},
			{"entityType", rules.RuleFilter{EntityType: "order"}, []string{"ORD_GUARD", "ORD_VALID", "asg_1"}},
			{"eventType", rules.RuleFilter{EventType: "beforeCreate"}, []string{"ORD_GUARD", "INV_CALC"}},
			{"ruleCategory", rules.RuleFilter{RuleCategory: "orders"}, []string{"ORD_GUARD", "ORD_VALID"}},
			{"enabled", rules.RuleFilter{Enabled: ptr(true)}, []string{"ORD_GUARD", "INV_CALC", "SHIP_ACTION"}},
			{"disabled", rules.RuleFilter{Enabled: ptr(false)}, []string{"ORD_VALID", "asg_1"}},
			{"filters combine", rules.RuleFilter{EntityType: "order", Enabled: ptr(true)}, []string{"ORD_GUARD"}},
			{"search and filter", rules.RuleFilter{Search: "order", RuleType: rules.Validation}, []string{"ORD_VALID"}},
			{"ruleName asc", rules.RuleFilter{SortField: "ruleName"},
				[]string{"asg_1", "INV_CALC", "ORD_GUARD", "ORD_VALID", "SHIP_ACTION"}},
			{"ruleName desc", rules.RuleFilter{SortField: "ruleName", SortDesc: true},
				[]string{"SHIP_ACTION", "ORD_VALID", "ORD_GUARD", "INV_CALC", "asg_1"}},
			{"priority asc", rules.RuleFilter{SortField: "priority"},
				[]string{"SHIP_ACTION", "ORD_GUARD", "INV_CALC", "ORD_VALID", "asg_1"}},
			{"priority desc", rules.RuleFilter{SortField: "priority", SortDesc: true},
				[]string{"asg_1", "ORD_VALID", "INV_CALC", "ORD_GUARD", "SHIP_ACTION"}},
			{"createdAt asc", rules.RuleFilter{SortField: "createdAt"}, created},
			{"createdAt desc", rules.RuleFilter{SortField: "createdAt", SortDesc: true},
				[]string{"asg_1", "SHIP_ACTION", "INV_CALC", "ORD_VALID", "ORD_GUARD"}},
			{"unknown sortField is createdAt", rules.RuleFilter{SortField: "rule_name; DROP TABLE business_rules"}, created},
		} {
			t.Run(c.name, func(t *testing.T) {
				is := is.New(t)
				ids, total := listRules(t, svc, ctx, c.f)
				is.Equal(ids, append([]string{}, c.want...))
				is.Equal(total, len(c.want))
			})
		}

		// updatedAt: the rule changed last comes last.
		_, err := svc.UpdateRule(ctx, inv.ID, ruleInput("INV_CALC"))
		is.NoErr(err)
		ids, _ := listRules(t, svc, ctx, rules.RuleFilter{SortField: "updatedAt"})
		is.Equal(ids, []string{"ORD_GUARD", "ORD_VALID", "SHIP_ACTION", "asg_1", "INV_CALC"})
		ids, _ = listRules(t, svc, ctx, rules.RuleFilter{SortField: "updatedAt", SortDesc: true})
		is.Equal(ids, []string{"INV_CALC", "asg_1", "SHIP_ACTION", "ORD_VALID", "ORD_GUARD"})

		// Pages.
		for _, c := range []struct {
			f     rules.RuleFilter
			want  []string
			total int
		}{
			{rules.RuleFilter{SortField: "priority", Limit: 2}, []string{"SHIP_ACTION", "ORD_GUARD"}, 5},
			{rules.RuleFilter{SortField: "priority", Limit: 2, Offset: 2}, []string{"INV_CALC", "ORD_VALID"}, 5},
			{rules.RuleFilter{SortField: "priority", Limit: 2, Offset: 4}, []string{"asg_1"}, 5},
			{rules.RuleFilter{SortField: "priority", Limit: 2, Offset: 10}, nil, 5},
			{rules.RuleFilter{SortField: "priority", Enabled: ptr(true), Limit: 1, Offset: 1}, []string{"ORD_GUARD"}, 3},
		} {
			rs, total, err := svc.ListRules(ctx, c.f)
			is.NoErr(err)
			is.Equal(ruleIDs(rs), append([]string{}, c.want...))
			is.Equal(total, c.total)
		}

		// Listed rules carry every field.
		rs, _, err := svc.ListRules(ctx, rules.RuleFilter{RuleID: "ORD_GUARD", Limit: 10})
		is.NoErr(err)
		is.Equal(len(rs), 1)
		got, err := svc.GetRule(ctx, rs[0].ID)
		is.NoErr(err)
		is.Equal(rs[0], got)
	}, rules.Migrations)
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctxA, _ := storetest.NewScope(t)
		ctxB, scB := storetest.NewScope(t)

		ra := createRule(t, svc, ctxA, ruleInput("A_RULE"))
		createSet(t, svc, ctxA, "A_SET")
		addMember(t, svc, ctxA, "A_SET", "A_RULE", 10)
		createSet(t, svc, ctxB, "B_SET")
		eventsB := len(events(t, db, scB.TenantID))

		// Rules.
		_, err := svc.GetRule(ctxB, ra.ID)
		wantRuleNotFound(t, err)
		_, err = svc.UpdateRule(ctxB, ra.ID, ruleInput("A_RULE"))
		wantRuleNotFound(t, err)
		wantRuleNotFound(t, svc.DeleteRule(ctxB, ra.ID))
		ids, total := listRules(t, svc, ctxB, rules.RuleFilter{})
		is.Equal(len(ids), 0)
		is.Equal(total, 0)
		ids, _ = listRules(t, svc, ctxB, rules.RuleFilter{RuleID: "A_RULE"})
		is.Equal(len(ids), 0)

		// Sets.
		_, err = svc.GetSet(ctxB, "A_SET")
		wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		_, err = svc.UpdateSet(ctxB, "A_SET", rules.SetPatch{Name: ptr("taken over")})
		wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		wantCode(t, svc.DeleteSet(ctxB, "A_SET", true), rules.CodeSetNotFound, store.ErrNotFound)
		sets, total, err := svc.ListSets(ctxB, rules.SetFilter{Limit: 50})
		is.NoErr(err)
		is.Equal(setIDs(sets), []string{"B_SET"})
		is.Equal(total, 1)

		// Members.
		_, err = svc.AddMember(ctxB, "B_SET", rules.MemberInput{RuleID: "A_RULE", Sequence: ptr(1)})
		wantCode(t, err, rules.CodeRuleNotFound, store.ErrNotFound)
		_, err = svc.AddMember(ctxB, "A_SET", rules.MemberInput{RuleID: "A_RULE", Sequence: ptr(1)})
		wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		_, err = svc.UpdateMember(ctxB, "A_SET", "A_RULE", rules.MemberPatch{Enabled: ptr(false)})
		wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		wantCode(t, svc.RemoveMember(ctxB, "A_SET", "A_RULE"), rules.CodeSetNotFound, store.ErrNotFound)

		// B may use A's ids for its own set and rule; a member of B's set
		// is B's rule.
		createSet(t, svc, ctxB, "A_SET")
		rb := createRule(t, svc, ctxB, ruleInput("A_RULE"))
		m := addMember(t, svc, ctxB, "A_SET", "A_RULE", 5)
		is.Equal(m.RuleName, rb.RuleName)
		_, err = svc.UpdateMember(ctxB, "A_SET", "A_RULE", rules.MemberPatch{Sequence: ptr(7)})
		is.NoErr(err)

		// A is untouched.
		got, err := svc.GetRule(ctxA, ra.ID)
		is.NoErr(err)
		is.True(got.UpdatedAt.Equal(ra.UpdatedAt))
		rs, err := svc.GetSet(ctxA, "A_SET")
		is.NoErr(err)
		is.Equal(rs.Name, "Set A_SET")
		is.Equal(len(rs.Members), 1)
		is.Equal(rs.Members[0].Sequence, 10)
		is.True(rs.Members[0].Enabled)
		ids, _ = listRules(t, svc, ctxA, rules.RuleFilter{})
		is.Equal(ids, []string{"A_RULE"})

		// B's refused attempts emitted nothing; its own changes did.
		evs := events(t, db, scB.TenantID)
		is.Equal(eventTypes(evs[eventsB:]), []string{rules.EventSetCreated, rules.EventRuleCreated, rules.EventMemberAdded, rules.EventMemberUpdated})
	}, rules.Migrations)
}

func TestOrganizationScope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		tenant, o1, o2 := store.NewID(), store.NewID(), store.NewID()
		scoped := func(sc store.Scope) context.Context { return store.WithScope(t.Context(), sc) }
		ctxO1 := scoped(store.Scope{TenantID: tenant, OrganizationID: o1})
		ctxWhole := scoped(store.Scope{TenantID: tenant}) // no active organization

		r1 := createRule(t, svc, ctxO1, ruleInput("O1_RULE"))
		is.Equal(r1.OrganizationID, o1)
		r0 := createRule(t, svc, ctxWhole, ruleInput("TENANT_RULE"))
		is.Equal(r0.OrganizationID, "")
		got, err := svc.GetRule(ctxWhole, r0.ID)
		is.NoErr(err)
		is.Equal(got.OrganizationID, "")
		createSet(t, svc, ctxO1, "ORG_SET")

		onlyO2 := scoped(store.Scope{TenantID: tenant, OrganizationID: o2, OrganizationIDs: []string{o2}})
		grid := storetest.NewOrgScopes(tenant, o1, o2)
		grid.RunBlind(t, func(t *testing.T, ctx context.Context) {
			is := is.New(t)
			_, err := svc.GetRule(ctx, r1.ID)
			wantRuleNotFound(t, err)
			_, err = svc.UpdateRule(ctx, r1.ID, ruleInput("O1_RULE"))
			wantRuleNotFound(t, err)
			wantRuleNotFound(t, svc.DeleteRule(ctx, r1.ID))
			ids, total := listRules(t, svc, ctx, rules.RuleFilter{})
			is.Equal(ids, []string{"TENANT_RULE"}) // a rule without organization is the whole tenant's
			is.Equal(total, 1)
			_, err = svc.AddMember(ctx, "ORG_SET", rules.MemberInput{RuleID: "O1_RULE", Sequence: ptr(1)})
			wantCode(t, err, rules.CodeRuleNotFound, store.ErrNotFound)
			_, err = svc.GetRule(ctx, r0.ID)
			is.NoErr(err)
		})
		grid.RunSeeing(t, func(t *testing.T, ctx context.Context) {
			is := is.New(t)
			got, err := svc.GetRule(ctx, r1.ID)
			is.NoErr(err)
			is.Equal(got.RuleID, "O1_RULE")
			ids, total := listRules(t, svc, ctx, rules.RuleFilter{})
			is.Equal(ids, []string{"O1_RULE", "TENANT_RULE"})
			is.Equal(total, 2)
		})

		// ruleIds are unique in the tenant, across organizations (decision).
		_, err = svc.CreateRule(onlyO2, ruleInput("O1_RULE"))
		wantIs(t, err, store.ErrConflict)

		// A reader of O1 may add it to the tenant's set.
		addMember(t, svc, scoped(store.Scope{TenantID: tenant, OrganizationIDs: []string{o1}}), "ORG_SET", "O1_RULE", 1)
		addMember(t, svc, ctxWhole, "ORG_SET", "TENANT_RULE", 2)
		rs, err := svc.GetSet(ctxWhole, "ORG_SET")
		is.NoErr(err)
		is.Equal(memberIDs(rs.Members), []string{"O1_RULE", "TENANT_RULE"})

		// Another organization's member is neither shown nor run.
		rs, err = svc.GetSet(onlyO2, "ORG_SET")
		is.NoErr(err)
		is.Equal(memberIDs(rs.Members), []string{"TENANT_RULE"})
		is.Equal(rs.MemberCount, 2) // the count is every organization's

		// A set whose only member is another organization's is found,
		// without members; a set of no member at all too.
		createSet(t, svc, ctxWhole, "ORG_ONE_ONLY")
		addMember(t, svc, ctxO1, "ORG_ONE_ONLY", "O1_RULE", 1)
		createSet(t, svc, ctxWhole, "EMPTY_SET")
		for _, id := range []string{"ORG_ONE_ONLY", "EMPTY_SET"} {
			rs, err = svc.GetSet(onlyO2, id)
			is.NoErr(err)
			is.Equal(rs.ID, id)
			is.Equal(len(rs.Members), 0)
		}
		rs, err = svc.GetSet(onlyO2, "ORG_ONE_ONLY")
		is.NoErr(err)
		is.Equal(rs.MemberCount, 1)
		rs, err = svc.GetSet(ctxO1, "ORG_ONE_ONLY")
		is.NoErr(err)
		is.Equal(memberIDs(rs.Members), []string{"O1_RULE"})
		_, err = svc.GetSet(onlyO2, "NO_SUCH_SET")
		wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		in := rules.Input{EntityType: "order", EntityID: "1", EventType: "created", Data: map[string]any{}, DryRun: true}
		res, err := svc.ExecuteSet(onlyO2, "ORG_SET", in)
		is.NoErr(err)
		is.Equal(len(res.ExecutedRules), 1)
		is.Equal(res.ExecutedRules[0].RuleID, "TENANT_RULE")
		res, err = svc.ExecuteSet(ctxO1, "ORG_SET", in)
		is.NoErr(err)
		is.Equal(len(res.ExecutedRules), 2)
	}, rules.Migrations)
}

func TestSets(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		before := time.Now().Add(-time.Second)

		rs, err := svc.CreateSet(ctx, rules.SetInput{ID: "ORDER_CHECKS", Name: "Order checks", Description: "Runs before saving"})
		is.NoErr(err)
		is.Equal(rs.ID, "ORDER_CHECKS")
		is.Equal(rs.Name, "Order checks")
		is.Equal(rs.Description, "Runs before saving")
		is.Equal(rs.Enabled, true) // default
		is.Equal(rs.MemberCount, 0)
		is.True(rs.Members == nil)
		is.True(rs.CreatedAt.After(before) && rs.CreatedAt.Before(time.Now().Add(time.Second)))
		is.True(rs.UpdatedAt.Equal(rs.CreatedAt))
		b, err := json.Marshal(rs)
		is.NoErr(err)
		is.True(strings.Contains(string(b), `"memberCount":0`))

		off, err := svc.CreateSet(ctx, rules.SetInput{ID: "OFF", Name: "Off", Enabled: ptr(false)})
		is.NoErr(err)
		is.Equal(off.Enabled, false)
		on, err := svc.CreateSet(ctx, rules.SetInput{ID: "ON", Name: "On", Enabled: ptr(true)})
		is.NoErr(err)
		is.Equal(on.Enabled, true)

		got, err := svc.GetSet(ctx, "ORDER_CHECKS")
		is.NoErr(err)
		is.Equal(got.Name, "Order checks")
		is.Equal(got.Description, "Runs before saving")
		is.Equal(got.Enabled, true)
		is.Equal(got.MemberCount, 0)
		is.Equal(len(got.Members), 0)
		is.True(got.CreatedAt.Equal(rs.CreatedAt))
		is.True(got.UpdatedAt.Equal(rs.UpdatedAt))
		got, err = svc.GetSet(ctx, "OFF")
		is.NoErr(err)
		is.Equal(got.Enabled, false)

		t.Run("validation", func(t *testing.T) {
			for _, c := range []struct {
				name   string
				in     rules.SetInput
				fields []string
			}{
				{"id missing", rules.SetInput{Name: "x"}, []string{"id"}},
				{"id lowercase", rules.SetInput{ID: "order_checks", Name: "x"}, []string{"id"}},
				{"id mixed case", rules.SetInput{ID: "Order", Name: "x"}, []string{"id"}},
				{"id digits", rules.SetInput{ID: "SET_1", Name: "x"}, []string{"id"}},
				{"id dash", rules.SetInput{ID: "A-B", Name: "x"}, []string{"id"}},
				{"id space", rules.SetInput{ID: "A B", Name: "x"}, []string{"id"}},
				{"id NUL", rules.SetInput{ID: "A\x00", Name: "x"}, []string{"id"}},
				{"id 51", rules.SetInput{ID: strings.Repeat("A", 51), Name: "x"}, []string{"id"}},
				{"name missing", rules.SetInput{ID: "NO_NAME"}, []string{"name"}},
				{"name blank", rules.SetInput{ID: "NO_NAME", Name: " "}, []string{"name"}},
				{"name 201", rules.SetInput{ID: "LONG", Name: strings.Repeat("n", 201)}, []string{"name"}},
				{"description 2001", rules.SetInput{ID: "LONG", Name: "x", Description: strings.Repeat("d", 2001)}, []string{"description"}},
				{"NUL in name", rules.SetInput{ID: "NUL", Name: "a\x00"}, []string{"name"}},
				{"NUL in description", rules.SetInput{ID: "NUL", Name: "a", Description: "\x00"}, []string{"description"}},
				{"several", rules.SetInput{ID: "bad", Description: strings.Repeat("d", 2001)}, []string{"id", "name", "description"}},
			} {
				t.Run(c.name, func(t *testing.T) {
					_, err := svc.CreateSet(ctx, c.in)
					wantFields(t, err, c.fields...)
					wantIs(t, err, store.ErrInvalid)
				})
			}
			is := is.New(t)
			long, err := svc.CreateSet(ctx, rules.SetInput{ID: strings.Repeat("Z", 50), Name: strings.Repeat("ü", 200),
				Description: strings.Repeat("é", 2000)})
			is.NoErr(err) // the limits are inclusive, in characters
			got, err := svc.GetSet(ctx, long.ID)
			is.NoErr(err)
			is.Equal(got.Name, strings.Repeat("ü", 200))
			is.Equal(got.Description, strings.Repeat("é", 2000))
			is.NoErr(svc.DeleteSet(ctx, long.ID, false))
			_, err = svc.CreateSet(ctx, rules.SetInput{ID: "_", Name: "underscore"})
			is.NoErr(err)
			is.NoErr(svc.DeleteSet(ctx, "_", false))
		})

		t.Run("duplicate", func(t *testing.T) {
			is := is.New(t)
			_, err := svc.CreateSet(ctx, rules.SetInput{ID: "ORDER_CHECKS", Name: "Another", Enabled: ptr(false)})
			ce := wantCode(t, err, rules.CodeSetExists, store.ErrConflict)
			is.True(strings.Contains(ce.Message, "ORDER_CHECKS"))
			got, err := svc.GetSet(ctx, "ORDER_CHECKS")
			is.NoErr(err)
			is.Equal(got.Name, "Order checks") // untouched
			ctxB, _ := storetest.NewScope(t)
			_, err = svc.CreateSet(ctxB, rules.SetInput{ID: "ORDER_CHECKS", Name: "B's"})
			is.NoErr(err) // set ids are per tenant
		})

		t.Run("update", func(t *testing.T) {
			is := is.New(t)
			createRule(t, svc, ctx, ruleInput("MEMBER_RULE"))
			addMember(t, svc, ctx, "ON", "MEMBER_RULE", 1)
			orig, err := svc.GetSet(ctx, "ON")
			is.NoErr(err)

			up, err := svc.UpdateSet(ctx, "ON", rules.SetPatch{Description: ptr("now described")})
			is.NoErr(err)
			is.Equal(up.ID, "ON")
			is.Equal(up.Name, "On") // kept
			is.Equal(up.Description, "now described")
			is.Equal(up.Enabled, true) // kept
			is.Equal(up.MemberCount, 1)
			is.True(up.CreatedAt.Equal(orig.CreatedAt))
			is.True(up.UpdatedAt.After(orig.UpdatedAt))

			up2, err := svc.UpdateSet(ctx, "ON", rules.SetPatch{Enabled: ptr(false)})
			is.NoErr(err)
			is.Equal(up2.Name, "On")
			is.Equal(up2.Description, "now described")
			is.Equal(up2.Enabled, false)
			is.True(!up2.UpdatedAt.Before(up.UpdatedAt))

			up3, err := svc.UpdateSet(ctx, "ON", rules.SetPatch{Name: ptr("Renamed"), Description: ptr(""), Enabled: ptr(true)})
			is.NoErr(err)
			got, err := svc.GetSet(ctx, "ON")
			is.NoErr(err)
			is.Equal(got.Name, "Renamed")
			is.Equal(got.Description, "")
			is.Equal(got.Enabled, true)
			is.True(got.UpdatedAt.Equal(up3.UpdatedAt))
			is.Equal(len(got.Members), 1) // members stay

			// A patch without enabled keeps a disabled set disabled.
			offUp, err := svc.UpdateSet(ctx, "OFF", rules.SetPatch{Name: ptr("Off, renamed"), Description: ptr("still off")})
			is.NoErr(err)
			is.Equal(offUp.Enabled, false)
			got, err = svc.GetSet(ctx, "OFF")
			is.NoErr(err)
			is.Equal(got.Enabled, false)
			is.Equal(got.Name, "Off, renamed")
			is.Equal(got.Description, "still off")

			// An empty patch changes nothing but is accepted.
			_, err = svc.UpdateSet(ctx, "ON", rules.SetPatch{})
			is.NoErr(err)

			_, err = svc.UpdateSet(ctx, "ON", rules.SetPatch{Name: ptr("")})
			wantInvalid(t, err, "name")
			_, err = svc.UpdateSet(ctx, "ON", rules.SetPatch{Name: ptr(strings.Repeat("n", 201)), Description: ptr(strings.Repeat("d", 2001))})
			wantFields(t, err, "name", "description")
			_, err = svc.UpdateSet(ctx, "ON", rules.SetPatch{Description: ptr("a\x00")})
			wantInvalid(t, err, "description")
			got, err = svc.GetSet(ctx, "ON")
			is.NoErr(err)
			is.Equal(got.Name, "Renamed") // refused updates change nothing
			is.Equal(got.Description, "")

			_, err = svc.UpdateSet(ctx, "MISSING", rules.SetPatch{Name: ptr("x")})
			ce := wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
			is.True(strings.Contains(ce.Message, "MISSING"))
		})

		t.Run("get unknown", func(t *testing.T) {
			_, err := svc.GetSet(ctx, "MISSING")
			wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
			_, err = svc.GetSet(ctx, "order_checks") // ids are case-sensitive
			wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		})
	}, rules.Migrations)
}

func TestListSets(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		for _, in := range []rules.SetInput{
			{ID: "ORDERS", Name: "Order checks", Description: "Before an order is saved"},
			{ID: "INVOICES", Name: "Invoice checks", Description: "Totals and TAXES", Enabled: ptr(false)},
			{ID: "SHIPPING", Name: "Shipping", Description: ""},
			{ID: "PERCENT", Name: "100% coverage", Description: "under_score"},
		} {
			_, err := svc.CreateSet(ctx, in)
			is.NoErr(err)
		}
		createRule(t, svc, ctx, ruleInput("R1"))
		createRule(t, svc, ctx, ruleInput("R2"))
		addMember(t, svc, ctx, "ORDERS", "R1", 10)
		addMember(t, svc, ctx, "ORDERS", "R2", 20)
		addMember(t, svc, ctx, "SHIPPING", "R2", 10)
		ctxB, _ := storetest.NewScope(t)
		createSet(t, svc, ctxB, "ORDERS_OF_B")

		for _, c := range []struct {
			name  string
			f     rules.SetFilter
			want  []string
			total int
		}{
			{"all, by creation", rules.SetFilter{Limit: 50}, []string{"ORDERS", "INVOICES", "SHIPPING", "PERCENT"}, 4},
			{"search name", rules.SetFilter{Search: "CHECKS", Limit: 50}, []string{"ORDERS", "INVOICES"}, 2},
			{"search description", rules.SetFilter{Search: "taxes", Limit: 50}, []string{"INVOICES"}, 1},
			{"search does not match ids", rules.SetFilter{Search: "invoices", Limit: 50}, nil, 0},
			{"search % literal", rules.SetFilter{Search: "%", Limit: 50}, []string{"PERCENT"}, 1},
			{"search _ literal", rules.SetFilter{Search: "_", Limit: 50}, []string{"PERCENT"}, 1},
			{"enabled", rules.SetFilter{Enabled: ptr(true), Limit: 50}, []string{"ORDERS", "SHIPPING", "PERCENT"}, 3},
			{"disabled", rules.SetFilter{Enabled: ptr(false), Limit: 50}, []string{"INVOICES"}, 1},
			{"search and enabled", rules.SetFilter{Search: "checks", Enabled: ptr(true), Limit: 50}, []string{"ORDERS"}, 1},
			{"limit", rules.SetFilter{Limit: 2}, []string{"ORDERS", "INVOICES"}, 4},
			{"offset", rules.SetFilter{Limit: 2, Offset: 2}, []string{"SHIPPING", "PERCENT"}, 4},
			{"offset past the end", rules.SetFilter{Limit: 2, Offset: 9}, nil, 4},
			{"filtered page", rules.SetFilter{Enabled: ptr(true), Limit: 1, Offset: 1}, []string{"SHIPPING"}, 3},
		} {
			t.Run(c.name, func(t *testing.T) {
				is := is.New(t)
				sets, total, err := svc.ListSets(ctx, c.f)
				is.NoErr(err)
				is.Equal(setIDs(sets), append([]string{}, c.want...))
				is.Equal(total, c.total)
			})
		}

		sets, _, err := svc.ListSets(ctx, rules.SetFilter{Limit: 50})
		is.NoErr(err)
		counts := map[string]int{}
		for _, s := range sets {
			counts[s.ID] = s.MemberCount
			is.True(s.Members == nil) // lists carry no members
		}
		is.Equal(counts, map[string]int{"ORDERS": 2, "INVOICES": 0, "SHIPPING": 1, "PERCENT": 0})
	}, rules.Migrations)
}

func TestDeleteSet(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		r1 := createRule(t, svc, ctx, ruleInput("R1"))
		r2 := createRule(t, svc, ctx, ruleInput("R2"))
		createSet(t, svc, ctx, "FULL")
		addMember(t, svc, ctx, "FULL", "R1", 10)
		addMember(t, svc, ctx, "FULL", "R2", 20)

		err := svc.DeleteSet(ctx, "FULL", false)
		ce := wantCode(t, err, rules.CodeSetHasMembers, store.ErrConflict)
		is.Equal(ce.Details["memberCount"], 2)
		got, err := svc.GetSet(ctx, "FULL")
		is.NoErr(err) // still there, with its members
		is.Equal(got.MemberCount, 2)

		is.NoErr(svc.DeleteSet(ctx, "FULL", true))
		_, err = svc.GetSet(ctx, "FULL")
		wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		sets, total, err := svc.ListSets(ctx, rules.SetFilter{Limit: 50})
		is.NoErr(err)
		is.Equal(len(sets), 0)
		is.Equal(total, 0)
		for _, r := range []*rules.Rule{r1, r2} { // rules are detached, never deleted
			_, err := svc.GetRule(ctx, r.ID)
			is.NoErr(err)
		}
		wantCode(t, svc.DeleteSet(ctx, "FULL", true), rules.CodeSetNotFound, store.ErrNotFound)

		// A set created again under the id starts empty.
		again := createSet(t, svc, ctx, "FULL")
		is.Equal(again.MemberCount, 0)
		got, err = svc.GetSet(ctx, "FULL")
		is.NoErr(err)
		is.Equal(len(got.Members), 0)
		addMember(t, svc, ctx, "FULL", "R1", 1) // and takes the rules again

		// An empty set needs no force; force on an empty set is fine too.
		createSet(t, svc, ctx, "EMPTY")
		is.NoErr(svc.DeleteSet(ctx, "EMPTY", false))
		createSet(t, svc, ctx, "EMPTY")
		is.NoErr(svc.DeleteSet(ctx, "EMPTY", true))

		// A set whose only members' rules were deleted is empty.
		createSet(t, svc, ctx, "DEAD")
		r3 := createRule(t, svc, ctx, ruleInput("R3"))
		addMember(t, svc, ctx, "DEAD", "R3", 1)
		is.NoErr(svc.DeleteRule(ctx, r3.ID))
		is.NoErr(svc.DeleteSet(ctx, "DEAD", false))

		wantCode(t, svc.DeleteSet(ctx, "MISSING", false), rules.CodeSetNotFound, store.ErrNotFound)
	}, rules.Migrations)
}

func TestMembers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		before := time.Now().Add(-time.Second)

		mk := func(ruleID string, typ rules.Type) *rules.Rule {
			in := ruleInput(ruleID)
			in.RuleType = typ
			return createRule(t, svc, ctx, in)
		}
		ra := mk("A", rules.Guard)
		rb := mk("B", rules.Validation)
		mk("C", rules.Action)
		mk("D", rules.Calculation)
		createSet(t, svc, ctx, "FLOW")
		createSet(t, svc, ctx, "OTHER")

		m, err := svc.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "A", Sequence: ptr(20)})
		is.NoErr(err)
		is.Equal(m.SetID, "FLOW")
		is.Equal(m.RuleID, "A")
		is.Equal(m.RuleName, "Rule A")
		is.Equal(m.RuleType, rules.Guard)
		is.Equal(m.Sequence, 20)
		is.Equal(m.Enabled, true) // default
		is.True(m.AddedAt.After(before) && m.AddedAt.Before(time.Now().Add(time.Second)))
		is.True(m.UpdatedAt == nil)
		b, err := json.Marshal(m)
		is.NoErr(err)
		is.True(strings.Contains(string(b), `"setId":"FLOW"`))

		mb, err := svc.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "B", Sequence: ptr(10), Enabled: ptr(false)})
		is.NoErr(err)
		is.Equal(mb.Enabled, false)
		is.Equal(mb.RuleType, rules.Validation)
		mc, err := svc.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "C", Sequence: ptr(0), Enabled: ptr(true)})
		is.NoErr(err) // sequence 0 is a sequence
		is.Equal(mc.Sequence, 0)
		addMember(t, svc, ctx, "OTHER", "A", 1) // a rule may be in several sets

		rs, err := svc.GetSet(ctx, "FLOW")
		is.NoErr(err)
		is.Equal(rs.MemberCount, 3)
		is.Equal(memberIDs(rs.Members), []string{"C", "B", "A"}) // by sequence
		is.Equal(rs.Members[1].Enabled, false)                   // disabled members are listed too
		is.Equal(rs.Members[1].Sequence, 10)
		is.Equal(rs.Members[1].RuleName, "Rule B")
		is.Equal(rs.Members[1].RuleType, rules.Validation)
		is.True(rs.Members[2].AddedAt.Equal(m.AddedAt))
		for _, mem := range rs.Members {
			is.Equal(mem.SetID, "") // the detail lists members without their set
		}

		t.Run("add refusals", func(t *testing.T) {
			is := is.New(t)
			_, err := svc.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "A", Sequence: ptr(99)})
			ce := wantCode(t, err, rules.CodeRuleAlreadyInSet, store.ErrConflict)
			is.True(strings.Contains(ce.Message, "A"))
			_, err = svc.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "NOPE", Sequence: ptr(1)})
			wantCode(t, err, rules.CodeRuleNotFound, store.ErrNotFound)
			_, err = svc.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "a", Sequence: ptr(1)}) // ruleIds are exact
			wantCode(t, err, rules.CodeRuleNotFound, store.ErrNotFound)
			_, err = svc.AddMember(ctx, "NOSET", rules.MemberInput{RuleID: "D", Sequence: ptr(1)})
			wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
			_, err = svc.AddMember(ctx, "FLOW", rules.MemberInput{Sequence: ptr(1)})
			wantFields(t, err, "ruleId")
			wantIs(t, err, store.ErrInvalid)
			_, err = svc.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "D"})
			wantFields(t, err, "sequence")
			_, err = svc.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "D", Sequence: ptr(-1)})
			wantFields(t, err, "sequence")
			_, err = svc.AddMember(ctx, "NOSET", rules.MemberInput{})
			wantFields(t, err, "ruleId", "sequence")
			rs, err := svc.GetSet(ctx, "FLOW")
			is.NoErr(err)
			is.Equal(memberIDs(rs.Members), []string{"C", "B", "A"}) // nothing changed
			is.Equal(rs.Members[2].Sequence, 20)
		})

		t.Run("update", func(t *testing.T) {
			is := is.New(t)
			up, err := svc.UpdateMember(ctx, "FLOW", "A", rules.MemberPatch{Sequence: ptr(5)})
			is.NoErr(err)
			is.Equal(up.SetID, "FLOW")
			is.Equal(up.RuleID, "A")
			is.Equal(up.RuleName, "Rule A")
			is.Equal(up.RuleType, rules.Guard)
			is.Equal(up.Sequence, 5)
			is.Equal(up.Enabled, true) // kept
			is.True(up.AddedAt.Equal(m.AddedAt))
			is.True(up.UpdatedAt != nil && !up.UpdatedAt.Before(m.AddedAt))
			b, err := json.Marshal(up)
			is.NoErr(err)
			is.True(strings.Contains(string(b), `"updatedAt":"`))

			up, err = svc.UpdateMember(ctx, "FLOW", "B", rules.MemberPatch{Enabled: ptr(true)})
			is.NoErr(err)
			is.Equal(up.Sequence, 10) // kept
			is.Equal(up.Enabled, true)
			up, err = svc.UpdateMember(ctx, "FLOW", "C", rules.MemberPatch{Sequence: ptr(30), Enabled: ptr(false)})
			is.NoErr(err)
			is.Equal(up.Sequence, 30)
			is.Equal(up.Enabled, false)

			rs, err := svc.GetSet(ctx, "FLOW")
			is.NoErr(err)
			is.Equal(memberIDs(rs.Members), []string{"A", "B", "C"})
			is.Equal([]bool{rs.Members[0].Enabled, rs.Members[1].Enabled, rs.Members[2].Enabled}, []bool{true, true, false})
			is.True(rs.Members[0].UpdatedAt != nil)
			// OTHER's membership of A is its own.
			other, err := svc.GetSet(ctx, "OTHER")
			is.NoErr(err)
			is.Equal(other.Members[0].Sequence, 1)
			is.True(other.Members[0].UpdatedAt == nil)

			_, err = svc.UpdateMember(ctx, "FLOW", "A", rules.MemberPatch{})
			wantIs(t, err, store.ErrInvalid)
			var ve *store.ValidationError
			is.True(errors.As(err, &ve))
			_, err = svc.UpdateMember(ctx, "FLOW", "A", rules.MemberPatch{Sequence: ptr(-5)})
			wantInvalid(t, err, "sequence")
			_, err = svc.UpdateMember(ctx, "FLOW", "D", rules.MemberPatch{Sequence: ptr(1)})
			wantCode(t, err, rules.CodeMemberNotFound, store.ErrNotFound) // a rule, not a member
			_, err = svc.UpdateMember(ctx, "FLOW", "NOPE", rules.MemberPatch{Sequence: ptr(1)})
			wantCode(t, err, rules.CodeMemberNotFound, store.ErrNotFound)
			_, err = svc.UpdateMember(ctx, "NOSET", "A", rules.MemberPatch{Sequence: ptr(1)})
			wantCode(t, err, rules.CodeSetNotFound, store.ErrNotFound)
		})

		t.Run("remove", func(t *testing.T) {
			is := is.New(t)
			rc := ruleByID(t, svc, ctx, "C")
			is.NoErr(svc.RemoveMember(ctx, "FLOW", "C"))
			got, err := svc.GetRule(ctx, rc.ID)
			is.NoErr(err) // the rule stays
			is.Equal(got.RuleID, "C")
			rs, err := svc.GetSet(ctx, "FLOW")
			is.NoErr(err)
			is.Equal(memberIDs(rs.Members), []string{"A", "B"})
			is.Equal(rs.MemberCount, 2)
			wantCode(t, svc.RemoveMember(ctx, "FLOW", "C"), rules.CodeMemberNotFound, store.ErrNotFound)
			wantCode(t, svc.RemoveMember(ctx, "FLOW", "NOPE"), rules.CodeMemberNotFound, store.ErrNotFound)
			wantCode(t, svc.RemoveMember(ctx, "NOSET", "A"), rules.CodeSetNotFound, store.ErrNotFound)
			// and it may join again
			again := addMember(t, svc, ctx, "FLOW", "C", 40)
			is.Equal(again.Enabled, true)
		})

		t.Run("renamed rule", func(t *testing.T) {
			is := is.New(t)
			in := ruleInput("B2")
			in.RuleName, in.RuleType = "Rule B, renamed", rules.Assignment
			_, err := svc.UpdateRule(ctx, rb.ID, in)
			is.NoErr(err)
			rs, err := svc.GetSet(ctx, "FLOW")
			is.NoErr(err)
			is.Equal(memberIDs(rs.Members), []string{"A", "B2", "C"}) // members follow the rule
			is.Equal(rs.Members[1].RuleName, "Rule B, renamed")
			is.Equal(rs.Members[1].RuleType, rules.Assignment)
			up, err := svc.UpdateMember(ctx, "FLOW", "B2", rules.MemberPatch{Sequence: ptr(11)})
			is.NoErr(err)
			is.Equal(up.RuleName, "Rule B, renamed")
			_, err = svc.UpdateMember(ctx, "FLOW", "B", rules.MemberPatch{Sequence: ptr(11)})
			wantCode(t, err, rules.CodeMemberNotFound, store.ErrNotFound)
		})

		t.Run("deleted rule", func(t *testing.T) {
			is := is.New(t)
			is.NoErr(svc.DeleteRule(ctx, ra.ID))
			rs, err := svc.GetSet(ctx, "FLOW")
			is.NoErr(err)
			is.Equal(memberIDs(rs.Members), []string{"B2", "C"})
			is.Equal(rs.MemberCount, 2)
			other, err := svc.GetSet(ctx, "OTHER")
			is.NoErr(err)
			is.Equal(len(other.Members), 0)
			is.Equal(other.MemberCount, 0)
			sets, _, err := svc.ListSets(ctx, rules.SetFilter{Limit: 10})
			is.NoErr(err)
			for _, s := range sets {
				is.Equal(s.MemberCount, map[string]int{"FLOW": 2, "OTHER": 0}[s.ID])
			}
			up, err := svc.UpdateSet(ctx, "OTHER", rules.SetPatch{Name: ptr("Other")})
			is.NoErr(err)
			is.Equal(up.MemberCount, 0)
			_, err = svc.UpdateMember(ctx, "FLOW", "A", rules.MemberPatch{Sequence: ptr(1)})
			wantCode(t, err, rules.CodeMemberNotFound, store.ErrNotFound)
			wantCode(t, svc.RemoveMember(ctx, "FLOW", "A"), rules.CodeMemberNotFound, store.ErrNotFound)
			_, err = svc.AddMember(ctx, "FLOW", rules.MemberInput{RuleID: "A", Sequence: ptr(1)})
			wantCode(t, err, rules.CodeRuleNotFound, store.ErrNotFound)

			// A new rule under the freed ruleId is not a member until added.
			createRule(t, svc, ctx, ruleInput("A"))
			rs, err = svc.GetSet(ctx, "FLOW")
			is.NoErr(err)
			is.Equal(memberIDs(rs.Members), []string{"B2", "C"})
			m := addMember(t, svc, ctx, "FLOW", "A", 1)
			is.Equal(m.Enabled, true)
			rs, err = svc.GetSet(ctx, "FLOW")
			is.NoErr(err)
			is.Equal(memberIDs(rs.Members), []string{"A", "B2", "C"})
			is.Equal(rs.MemberCount, 3)
			is.NoErr(svc.RemoveMember(ctx, "FLOW", "A"))
		})
	}, rules.Migrations)
}

// ruleByID finds a live rule by its business id.
func ruleByID(t *testing.T, svc *rules.Service, ctx context.Context, ruleID string) *rules.Rule {
	t.Helper()
	rs, _, err := svc.ListRules(ctx, rules.RuleFilter{RuleID: ruleID, Limit: 2})
	if err != nil || len(rs) != 1 {
		t.Fatalf("ListRules(ruleId %s) = %v, %v", ruleID, rs, err)
	}
	return rs[0]
}

func TestEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(rules.New(db, rules.Options{}))
		ctx, sc := storetest.NewScope(t)
		ctxB, scB := storetest.NewScope(t)

		r := createRule(t, svc, ctx, ruleInput("EV"))
		_, err := svc.UpdateRule(ctx, r.ID, ruleInput("EV2"))
		is.NoErr(err)
		createRule(t, svc, ctx, ruleInput("KEEP"))
		createSet(t, svc, ctx, "EV_SET")
		_, err = svc.UpdateSet(ctx, "EV_SET", rules.SetPatch{Enabled: ptr(false)})
		is.NoErr(err)
		addMember(t, svc, ctx, "EV_SET", "EV2", 10)
		addMember(t, svc, ctx, "EV_SET", "KEEP", 20)
		_, err = svc.UpdateMember(ctx, "EV_SET", "EV2", rules.MemberPatch{Sequence: ptr(30)})
		is.NoErr(err)
		is.NoErr(svc.RemoveMember(ctx, "EV_SET", "EV2"))
		is.NoErr(svc.DeleteRule(ctx, r.ID))
		is.NoErr(svc.DeleteSet(ctx, "EV_SET", true))

		evs := events(t, db, sc.TenantID)
		is.Equal(eventTypes(evs), []string{
			rules.EventRuleCreated, rules.EventRuleUpdated, rules.EventRuleCreated,
			rules.EventSetCreated, rules.EventSetUpdated,
			rules.EventMemberAdded, rules.EventMemberAdded, rules.EventMemberUpdated, rules.EventMemberRemoved,
			rules.EventRuleDeleted, rules.EventSetDeleted,
		})
		for _, ev := range evs {
			is.Equal(ev.TenantID, sc.TenantID)
			is.Equal(ev.OrganizationID, sc.OrganizationID)
		}
		is.Equal(evs[0].Data["id"], r.ID)
		is.Equal(evs[0].Data["ruleId"], "EV")
		is.Equal(evs[0].Data["tenantId"], sc.TenantID)
		is.Equal(evs[1].Data["ruleId"], "EV2")
		is.Equal(evs[3].Data["id"], "EV_SET")
		is.Equal(evs[4].Data["enabled"], false)
		is.Equal(evs[5].Data["setId"], "EV_SET")
		is.Equal(evs[5].Data["ruleId"], "EV2")
		is.Equal(evs[5].Data["sequence"], 10.0)
		is.Equal(evs[7].Data["sequence"], 30.0)
		is.Equal(evs[8].Data["ruleId"], "EV2")
		is.Equal(evs[8].Data["setId"], "EV_SET")
		is.Equal(evs[9].Data["id"], r.ID)
		is.Equal(evs[10].Data["id"], "EV_SET")
		is.Equal(len(events(t, db, scB.TenantID)), 0) // nothing leaks to another tenant

		// Refused changes emit nothing.
		n := len(evs)
		keep := ruleByID(t, svc, ctx, "KEEP")
		createSet(t, svc, ctx, "FULL")
		addMember(t, svc, ctx, "FULL", "KEEP", 1)
		n += 2
		bad := ruleInput("BAD")
		bad.Priority = ptr(-1)
		_, err = svc.CreateRule(ctx, bad)
		wantIs(t, err, store.ErrInvalid)
		_, err = svc.CreateRule(ctx, ruleInput("KEEP"))
		wantIs(t, err, store.ErrConflict)
		_, err = svc.UpdateRule(ctx, keep.ID, bad)
		wantIs(t, err, store.ErrInvalid)
		_, err = svc.UpdateRule(ctx, store.NewID(), ruleInput("X"))
		wantIs(t, err, store.ErrNotFound)
		wantIs(t, svc.DeleteRule(ctx, store.NewID()), store.ErrNotFound)
		_, err = svc.CreateSet(ctx, rules.SetInput{ID: "FULL", Name: "again"})
		wantIs(t, err, store.ErrConflict)
		_, err = svc.CreateSet(ctx, rules.SetInput{ID: "bad"})
		wantIs(t, err, store.ErrInvalid)
		_, err = svc.UpdateSet(ctx, "FULL", rules.SetPatch{Name: ptr("")})
		wantIs(t, err, store.ErrInvalid)
		wantIs(t, svc.DeleteSet(ctx, "FULL", false), store.ErrConflict)
		_, err = svc.AddMember(ctx, "FULL", rules.MemberInput{RuleID: "KEEP", Sequence: ptr(2)})
		wantIs(t, err, store.ErrConflict)
		_, err = svc.AddMember(ctx, "FULL", rules.MemberInput{RuleID: "NOPE", Sequence: ptr(2)})
		wantIs(t, err, store.ErrNotFound)
		_, err = svc.UpdateMember(ctx, "FULL", "KEEP", rules.MemberPatch{})
		wantIs(t, err, store.ErrInvalid)
		wantIs(t, svc.RemoveMember(ctx, "FULL", "NOPE"), store.ErrNotFound)
		_, err = svc.CreateRule(ctxB, bad)
		wantIs(t, err, store.ErrInvalid)
		is.Equal(len(events(t, db, sc.TenantID)), n)
		is.Equal(len(events(t, db, scB.TenantID)), 0)
	}, rules.Migrations)
}

func TestNoScope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		// A rule and a set exist in some tenant: nothing reaches them
		// without a scope.
		ctx, _ := storetest.NewScope(t)
		r := createRule(t, svc, ctx, ruleInput("SCOPED"))
		createSet(t, svc, ctx, "SCOPED_SET")
		addMember(t, svc, ctx, "SCOPED_SET", "SCOPED", 1)

		for name, ctx := range map[string]context.Context{
			"no scope":        t.Context(),
			"scope no tenant": store.WithScope(t.Context(), store.Scope{OrganizationID: store.NewID()}),
		} {
			t.Run(name, func(t *testing.T) {
				calls := map[string]func() error{
					"CreateRule": func() error { _, err := svc.CreateRule(ctx, ruleInput("X")); return err },
					"UpdateRule": func() error { _, err := svc.UpdateRule(ctx, r.ID, ruleInput("X")); return err },
					"GetRule":    func() error { _, err := svc.GetRule(ctx, r.ID); return err },
					"DeleteRule": func() error { return svc.DeleteRule(ctx, r.ID) },
					"ListRules":  func() error { _, _, err := svc.ListRules(ctx, rules.RuleFilter{Limit: 10}); return err },
					"CreateSet": func() error {
						_, err := svc.CreateSet(ctx, rules.SetInput{ID: "X", Name: "X"})
						return err
					},
					"UpdateSet": func() error {
						_, err := svc.UpdateSet(ctx, "SCOPED_SET", rules.SetPatch{Name: ptr("X")})
						return err
					},
					"GetSet":    func() error { _, err := svc.GetSet(ctx, "SCOPED_SET"); return err },
					"DeleteSet": func() error { return svc.DeleteSet(ctx, "SCOPED_SET", true) },
					"ListSets":  func() error { _, _, err := svc.ListSets(ctx, rules.SetFilter{Limit: 10}); return err },
					"AddMember": func() error {
						_, err := svc.AddMember(ctx, "SCOPED_SET", rules.MemberInput{RuleID: "SCOPED", Sequence: ptr(1)})
						return err
					},
					"UpdateMember": func() error {
						_, err := svc.UpdateMember(ctx, "SCOPED_SET", "SCOPED", rules.MemberPatch{Sequence: ptr(2)})
						return err
					},
					"RemoveMember": func() error { return svc.RemoveMember(ctx, "SCOPED_SET", "SCOPED") },
				}
				for method, call := range calls {
					if err := call(); !errors.Is(err, store.ErrNoScope) {
						t.Errorf("%s: error = %v, want store.ErrNoScope", method, err)
					}
				}
			})
		}

		is := is.New(t)
		got, err := svc.GetRule(ctx, r.ID)
		is.NoErr(err)
		is.Equal(got.RuleID, "SCOPED")
		rs, err := svc.GetSet(ctx, "SCOPED_SET")
		is.NoErr(err)
		is.Equal(memberIDs(rs.Members), []string{"SCOPED"})
		is.Equal(rs.Members[0].Sequence, 1)
	}, rules.Migrations)
}

// A key holding a NUL names nothing that exists: the spec's answers are the
// not-found ones (404 SET_NOT_FOUND, RULE_NOT_FOUND, MEMBER_NOT_FOUND,
// "Rule not found") and an empty list, the same on both engines.
func TestNULInLookups(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(rules.New(db, rules.Options{}))
		ctx, _ := storetest.NewScope(t)
		createRule(t, svc, ctx, ruleInput("R"))
		createSet(t, svc, ctx, "S")
		addMember(t, svc, ctx, "S", "R", 1)

		notFound := func(code string) func(err error) string {
			return func(err error) string {
				var ce *rules.CodedError
				if !errors.As(err, &ce) || ce.Code != code || !errors.Is(err, store.ErrNotFound) {
					return fmt.Sprintf("error = %v, want %s", err, code)
				}
				return ""
			}
		}
		ruleNotFound := func(err error) string {
			if !errors.Is(err, store.ErrNotFound) || store.PublicMessage(err) != "Rule not found" {
				return fmt.Sprintf("error = %v, want Rule not found", err)
			}
			return ""
		}
		emptyList := func(n int, err error) string {
			if err != nil || n != 0 {
				return fmt.Sprintf("%d items, error %v; want an empty list", n, err)
			}
			return ""
		}
		for name, check := range map[string]func() string{
			"GetSet": func() string { _, err := svc.GetSet(ctx, "S\x00"); return notFound(rules.CodeSetNotFound)(err) },
			"UpdateSet": func() string {
				_, err := svc.UpdateSet(ctx, "S\x00", rules.SetPatch{Name: ptr("x")})
				return notFound(rules.CodeSetNotFound)(err)
			},
			"DeleteSet": func() string { return notFound(rules.CodeSetNotFound)(svc.DeleteSet(ctx, "S\x00", true)) },
			"AddMember": func() string {
				_, err := svc.AddMember(ctx, "S", rules.MemberInput{RuleID: "R\x00", Sequence: ptr(1)})
				return notFound(rules.CodeRuleNotFound)(err)
			},
			"UpdateMember": func() string {
				_, err := svc.UpdateMember(ctx, "S", "R\x00", rules.MemberPatch{Sequence: ptr(2)})
				return notFound(rules.CodeMemberNotFound)(err)
			},
			"RemoveMember": func() string {
				return notFound(rules.CodeMemberNotFound)(svc.RemoveMember(ctx, "S", "R\x00"))
			},
			"GetRule":    func() string { _, err := svc.GetRule(ctx, "\x00"); return ruleNotFound(err) },
			"DeleteRule": func() string { return ruleNotFound(svc.DeleteRule(ctx, "\x00")) },
			"ListRules search": func() string {
				rs, _, err := svc.ListRules(ctx, rules.RuleFilter{Search: "\x00", Limit: 10})
				return emptyList(len(rs), err)
			},
			"ListRules ruleId": func() string {
				rs, _, err := svc.ListRules(ctx, rules.RuleFilter{RuleID: "R\x00", Limit: 10})
				return emptyList(len(rs), err)
			},
			"ListSets search": func() string {
				sets, _, err := svc.ListSets(ctx, rules.SetFilter{Search: "\x00", Limit: 10})
				return emptyList(len(sets), err)
			},
		} {
			t.Run(name, func(t *testing.T) {
				// PostgreSQL would refuse the parameter (SQLSTATE 22021) and
				// SQLite's LIKE stops at the NUL: both must answer "nothing".
				if problem := check(); problem != "" {
					t.Errorf("a NUL in a lookup key: %s: %s", name, problem)
				}
			})
		}
	}, rules.Migrations)
}

// The event catalogue names every event the area emits, once.
func TestEventTypes(t *testing.T) {
	want := []string{rules.EventRuleCreated, rules.EventRuleUpdated, rules.EventRuleDeleted, rules.EventSetCreated,
		rules.EventSetUpdated, rules.EventSetDeleted, rules.EventMemberAdded, rules.EventMemberUpdated, rules.EventMemberRemoved,
		rules.EventNotificationCreated, rules.EventEmitted, rules.EventExecutionFailed}
	var got []string
	for _, et := range rules.EventTypes {
		if et.Label == "" || et.Description == "" {
			t.Errorf("%s has no label or description", et.ID)
		}
		got = append(got, et.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("EventTypes = %v, want %v", got, want)
	}
}
