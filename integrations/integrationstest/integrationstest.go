// Package integrationstest is the conformance suite for
// integrations.Store implementations: Run checks every behaviour the
// integrations Service relies on from its Store, as documented on
// integrations.Store and LogFilter. The SQL store runs it on SQLite and
// PostgreSQL (integrations/store_test.go); a host that plugs in its own
// Store runs it against that:
//
//	func TestMyStore(t *testing.T) {
//		integrationstest.Run(t, func(t *testing.T) (*store.DB, integrations.Store) {
//			return openMigratedDatabase(t), mystore.New()
//		})
//	}
//
// Every subtest works in tenants of its own (random ids), so one database
// may serve them all.
package integrationstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/store"
)

// Run runs the suite. newStore is called once per subtest and returns a
// migrated database and the Store to test on it. Writes get a transaction
// on that database (*store.Tx), as the Service passes them; reads get the
// database.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, integrations.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *env)
	}{
		{"States", testStates},
		{"StateReplaces", testStateReplaces},
		{"Credentials", testCredentials},
		{"Logs", testLogs},
		{"LogOrder", testLogOrder},
		{"LogFilters", testLogFilters},
		{"LogPaging", testLogPaging},
		{"Tenants", testTenants},
		{"UsesTheTransaction", testUsesTheTransaction},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, s := newStore(t)
			if db == nil || s == nil {
				t.Fatal("newStore returned a nil database or Store")
			}
			c.test(t, &env{t: t, db: db, s: s, ctx: t.Context()})
		})
	}
}

type env struct {
	t   *testing.T
	db  *store.DB
	s   integrations.Store
	ctx context.Context
}

// tx runs fn in a committed transaction, failing the test on error.
func (e *env) tx(what string, fn func(tx *store.Tx) error) {
	e.t.Helper()
	if err := e.db.Tx(e.ctx, fn); err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

func (e *env) putState(tenantID string, st *integrations.State) {
	e.t.Helper()
	e.tx("PutState", func(tx *store.Tx) error { return e.s.PutState(e.ctx, tx, tenantID, st) })
}

func (e *env) putCredentials(tenantID, id, sealed string, at time.Time) {
	e.t.Helper()
	e.tx("PutCredentials", func(tx *store.Tx) error { return e.s.PutCredentials(e.ctx, tx, tenantID, id, sealed, at) })
}

func (e *env) insertLog(l *integrations.LogEntry) {
	e.t.Helper()
	e.tx("InsertLog", func(tx *store.Tx) error { return e.s.InsertLog(e.ctx, tx, l) })
}

func (e *env) state(tenantID, id string) *integrations.State {
	e.t.Helper()
	st, err := e.s.GetState(e.ctx, e.db, tenantID, id)
	if err != nil {
		e.t.Fatalf("GetState(%s, %s): %v", tenantID, id, err)
	}
	return st
}

func (e *env) logs(tenantID string, f integrations.LogFilter) ([]*integrations.LogEntry, int) {
	e.t.Helper()
	items, total, err := e.s.ListLogs(e.ctx, e.db, tenantID, f)
	if err != nil {
		e.t.Fatalf("ListLogs(%+v): %v", f, err)
	}
	return items, total
}

func tenant() string { return "t-" + store.NewID() }

// at is the suite's base time: UTC, microsecond precision, as the
// Service's transactions give.
var at = time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)

func ptr[T any](v T) *T { return &v }

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("%s: error %v, want one wrapping store.ErrNotFound", what, err)
	}
}

// describeState shows every field of a state, pointers followed.
func describeState(s *integrations.State) string {
	if s == nil {
		return "nil"
	}
	str := func(p *string) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", *p)
	}
	tm := func(p *time.Time) string {
		if p == nil {
			return "nil"
		}
		return p.Format(time.RFC3339Nano) + " " + p.Location().String()
	}
	n := "nil"
	if s.LastHealthLatencyMs != nil {
		n = fmt.Sprint(*s.LastHealthLatencyMs)
	}
	return fmt.Sprintf("{id %s enabled %v version %s reauth %v health %s checked %s latency %s enabledAt %s updatedAt %s notifyAdmins %v}",
		s.IntegrationID, s.IsEnabled, str(s.APIVersion), s.ReauthRequired, str(s.LastHealthStatus), tm(s.LastHealthCheckedAt), n,
		tm(s.EnabledAt), tm(s.UpdatedAt), s.NotifyAdminsOnFailure)
}

// sameState fails unless got holds exactly want's values (times equal
// and in UTC).
func sameState(t *testing.T, what string, got, want *integrations.State) {
	t.Helper()
	if describeState(got) != describeState(want) {
		t.Fatalf("%s:\n got %s\nwant %s", what, describeState(got), describeState(want))
	}
}

// describeLog shows every field of a log entry, pointers followed.
func describeLog(l *integrations.LogEntry) string {
	if l == nil {
		return "nil"
	}
	str := func(p *string) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", *p)
	}
	payload := "nil"
	if l.Payload != nil {
		payload = string(l.Payload)
	}
	return fmt.Sprintf("{id %s tenant %s integration %s run %s level %s message %q code %s payload %s entity %s/%s at %s %s}",
		l.ID, l.TenantID, l.IntegrationID, str(l.RunID), l.Level, l.Message, str(l.Code), payload, str(l.EntityType), str(l.EntityID),
		l.CreatedAt.Format(time.RFC3339Nano), l.CreatedAt.Location())
}

func logIDs(items []*integrations.LogEntry) []string {
	out := make([]string, len(items))
	for i, l := range items {
		out[i] = l.ID
	}
	return out
}

// sameIDs fails unless the page holds exactly want, in order, and the
// total is wantTotal.
func sameIDs(t *testing.T, what string, items []*integrations.LogEntry, total int, want []string, wantTotal int) {
	t.Helper()
	if got := logIDs(items); !slices.Equal(got, want) || total != wantTotal {
		t.Fatalf("%s: ids %v (total %d), want %v (total %d)", what, got, total, want, wantTotal)
	}
}

// testStates: a state is stored and read back with every field, set or
// null, times in UTC; a missing state is not found (nil).
func testStates(t *testing.T, e *env) {
	tn := tenant()
	// A missing state is not found, and no state: the Service takes a
	// state it is handed as the tenant's stored one.
	if st, err := e.s.GetState(e.ctx, e.db, tn, "crm"); !errors.Is(err, store.ErrNotFound) || st != nil {
		t.Fatalf("GetState of no state: %s, %v; want nil and an error wrapping store.ErrNotFound", describeState(st), err)
	}
	if list, err := e.s.ListStates(e.ctx, e.db, tn); err != nil || len(list) != 0 {
		t.Fatalf("ListStates of a tenant without states: %v, %v", list, err)
	}
	full := &integrations.State{IntegrationID: "crm", IsEnabled: false, APIVersion: ptr("2024-01"), ReauthRequired: true,
		LastHealthStatus: ptr("degraded"), LastHealthCheckedAt: ptr(at.Add(-time.Minute)), LastHealthLatencyMs: ptr[int64](1234),
		EnabledAt: ptr(at.Add(-time.Hour)), UpdatedAt: ptr(at), NotifyAdminsOnFailure: true}
	// Times given in another zone are the same instants, read back in UTC.
	zone := time.FixedZone("UTC+5", 5*3600)
	stored := *full
	stored.LastHealthCheckedAt, stored.EnabledAt, stored.UpdatedAt = ptr(full.LastHealthCheckedAt.In(zone)), ptr(full.EnabledAt.In(zone)), ptr(full.UpdatedAt.In(zone))
	e.putState(tn, &stored)
	bare := &integrations.State{IntegrationID: "erp", IsEnabled: true, UpdatedAt: ptr(at.Add(time.Second))}
	e.putState(tn, bare)

	sameState(t, "GetState of the full state", e.state(tn, "crm"), full)
	sameState(t, "GetState of the bare state (null fields stay null)", e.state(tn, "erp"), bare)
	if _, err := e.s.GetState(e.ctx, e.db, tn, "other"); !errors.Is(err, store.ErrNotFound) {
		wantNotFound(t, "GetState of an integration without a state", err)
	}

	list, err := e.s.ListStates(e.ctx, e.db, tn)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list, func(a, b *integrations.State) int { return strings.Compare(a.IntegrationID, b.IntegrationID) })
	if len(list) != 2 {
		t.Fatalf("ListStates: %d states, want 2", len(list))
	}
	sameState(t, "ListStates[crm]", list[0], full)
	sameState(t, "ListStates[erp]", list[1], bare)
}

// testStateReplaces: PutState of a stored integration replaces every
// field (nulls included) and adds no row.
func testStateReplaces(t *testing.T, e *env) {
	tn := tenant()
	first := &integrations.State{IntegrationID: "crm", IsEnabled: true, APIVersion: ptr("v1"), ReauthRequired: true,
		LastHealthStatus: ptr("ok"), LastHealthCheckedAt: ptr(at), LastHealthLatencyMs: ptr[int64](5), EnabledAt: ptr(at), UpdatedAt: ptr(at),
		NotifyAdminsOnFailure: true}
	e.putState(tn, first)
	second := &integrations.State{IntegrationID: "crm", IsEnabled: false, APIVersion: ptr("v2"), UpdatedAt: ptr(at.Add(time.Hour))}
	e.putState(tn, second)
	sameState(t, "after a second PutState", e.state(tn, "crm"), second)
	third := &integrations.State{IntegrationID: "crm", IsEnabled: true, ReauthRequired: true, EnabledAt: ptr(at.Add(2 * time.Hour)),
		UpdatedAt: ptr(at.Add(2 * time.Hour))}
	e.putState(tn, third)
	sameState(t, "after a third PutState", e.state(tn, "crm"), third)
	if list, err := e.s.ListStates(e.ctx, e.db, tn); err != nil || len(list) != 1 {
		t.Fatalf("ListStates after replacing one state: %d states, %v; want 1", len(list), err)
	}
}

// testCredentials: sealed credentials are stored as given, replaced by
// the next PutCredentials, and listed by integration.
func testCredentials(t *testing.T, e *env) {
	tn := tenant()
	_, _, err := e.s.GetCredentials(e.ctx, e.db, tn, "crm")
	wantNotFound(t, "GetCredentials of none", err)
	if ids, err := e.s.CredentialIntegrations(e.ctx, e.db, tn); err != nil || len(ids) != 0 {
		t.Fatalf("CredentialIntegrations of a tenant without credentials: %v, %v", ids, err)
	}
	sealed := "v1:" + strings.Repeat("QUJD", 300) // opaque text, 1.2 kB
	e.putCredentials(tn, "crm", sealed, at.In(time.FixedZone("UTC-3", -3*3600)))
	e.putCredentials(tn, "erp", "v1:erp", at)
	got, when, err := e.s.GetCredentials(e.ctx, e.db, tn, "crm")
	if err != nil || got != sealed || !when.Equal(at) || when.Location() != time.UTC {
		t.Fatalf("GetCredentials = %q…, %v (%v), %v; want the sealed text, %v in UTC", got[:min(len(got), 12)], when, when.Location(), err, at)
	}
	later := at.Add(time.Hour)
	e.putCredentials(tn, "crm", "v1:replaced", later)
	got, when, err = e.s.GetCredentials(e.ctx, e.db, tn, "crm")
	if err != nil || got != "v1:replaced" || !when.Equal(later) {
		t.Fatalf("GetCredentials after a replace = %q, %v, %v; want v1:replaced, %v", got, when, err, later)
	}
	if got, _, _ := e.s.GetCredentials(e.ctx, e.db, tn, "erp"); got != "v1:erp" {
		t.Fatalf("replacing crm's credentials changed erp's: %q", got)
	}
	ids, err := e.s.CredentialIntegrations(e.ctx, e.db, tn)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"crm", "erp"}) {
		t.Fatalf("CredentialIntegrations = %v, want [crm erp] (once each)", ids)
	}
}

// entry is a log entry of tenant tn at time when.
func entry(tn, integration, level string, when time.Time) *integrations.LogEntry {
	return &integrations.LogEntry{ID: store.NewID(), TenantID: tn, IntegrationID: integration, Level: level,
		Message: integration + " " + level, CreatedAt: when}
}

// testLogs: every field of an entry is stored and read back, null ones
// null, the payload's JSON text as given.
func testLogs(t *testing.T, e *env) {
	tn := tenant()
	if items, total := e.logs(tn, integrations.LogFilter{Limit: 10}); len(items) != 0 || total != 0 {
		t.Fatalf("ListLogs of a tenant without logs: %d items, total %d", len(items), total)
	}
	full := &integrations.LogEntry{ID: store.NewID(), TenantID: tn, IntegrationID: "sync_http_json", RunID: ptr("run-1"), Level: integrations.LevelError,
		Message: "Über 500: «upstream» failed\nsecond line", Code: ptr("E_UPSTREAM"), Payload: json.RawMessage(`{"status":500,"body":{"a":[1,"x"]}}`),
		EntityType: ptr("crm.contact"), EntityID: ptr("c-42"), CreatedAt: at}
	bare := &integrations.LogEntry{ID: store.NewID(), TenantID: tn, IntegrationID: "gateway_mock", Level: integrations.LevelInfo,
		Message: "ok", CreatedAt: at.Add(time.Second)}
	e.insertLog(full)
	e.insertLog(bare)
	items, total := e.logs(tn, integrations.LogFilter{Limit: 10})
	if len(items) != 2 || total != 2 {
		t.Fatalf("ListLogs: %d items, total %d; want 2, 2", len(items), total)
	}
	for i, want := range []*integrations.LogEntry{bare, full} {
		got := items[i]
		if describeLog(got) != describeLog(want) {
			t.Errorf("entry %d read back as\n %s\nwant\n %s", i, describeLog(got), describeLog(want))
		}
	}
	if items[0].Payload != nil {
		t.Errorf("an entry without a payload read back with payload %q, want nil", items[0].Payload)
	}
}

// testLogOrder: newest first by createdAt, then by id (descending) among
// entries of the same instant; pages agree with that order.
func testLogOrder(t *testing.T, e *env) {
	tn := tenant()
	// Inserted out of order; the ids do not follow the times.
	old := entry(tn, "a", integrations.LevelInfo, at)
	mid1 := entry(tn, "a", integrations.LevelInfo, at.Add(time.Minute))
	mid2 := entry(tn, "a", integrations.LevelInfo, at.Add(time.Minute))
	mid1.ID, mid2.ID = "00000000-0000-7000-8000-00000000000a", "00000000-0000-7000-8000-00000000000b"
	newest := entry(tn, "a", integrations.LevelInfo, at.Add(time.Hour))
	old.ID = "ffffffff-0000-7000-8000-000000000000" // the largest id, the oldest entry
	justAfter := entry(tn, "a", integrations.LevelInfo, at.Add(time.Microsecond))
	for _, l := range []*integrations.LogEntry{mid1, newest, old, justAfter, mid2} {
		e.insertLog(l)
	}
	want := []string{newest.ID, mid2.ID, mid1.ID, justAfter.ID, old.ID}
	items, total := e.logs(tn, integrations.LogFilter{Limit: 10})
	sameIDs(t, "ListLogs order", items, total, want, 5)
	var paged []string
	for off := 0; off < 5; off += 2 {
		items, total := e.logs(tn, integrations.LogFilter{Limit: 2, Offset: off})
		if total != 5 {
			t.Fatalf("page at %d: total %d, want 5", off, total)
		}
		paged = append(paged, logIDs(items)...)
	}
	if !slices.Equal(paged, want) {
		t.Fatalf("pages of 2: %v, want %v", paged, want)
	}
}

// testLogFilters: each filter selects exactly its entries, filters
// combine, and total counts the matches of the filter.
func testLogFilters(t *testing.T, e *env) {
	tn := tenant()
	mk := func(i int, integration, level, run, etype, eid string) *integrations.LogEntry {
		l := entry(tn, integration, level, at.Add(time.Duration(i)*time.Second))
		if run != "" {
			l.RunID = ptr(run)
		}
		if etype != "" {
			l.EntityType = ptr(etype)
		}
		if eid != "" {
			l.EntityID = ptr(eid)
		}
		e.insertLog(l)
		return l
	}
	l0 := mk(0, "crm", integrations.LevelInfo, "r1", "contact", "c1")
	l1 := mk(1, "crm", integrations.LevelError, "r1", "contact", "c2")
	l2 := mk(2, "erp", integrations.LevelError, "r2", "order", "c1")
	l3 := mk(3, "erp", integrations.LevelWarn, "", "", "")
	l4 := mk(4, "crm", integrations.LevelWarn, "r2", "order", "o9")
	ids := func(ls ...*integrations.LogEntry) []string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = l.ID
		}
		return out
	}
	for _, c := range []struct {
		name string
		f    integrations.LogFilter
		want []string
	}{
		{"none", integrations.LogFilter{}, ids(l4, l3, l2, l1, l0)},
		{"integrationId", integrations.LogFilter{IntegrationID: "crm"}, ids(l4, l1, l0)},
		{"level", integrations.LogFilter{Level: integrations.LevelError}, ids(l2, l1)},
		{"runId", integrations.LogFilter{RunID: "r2"}, ids(l4, l2)},
		{"entityType", integrations.LogFilter{EntityType: "contact"}, ids(l1, l0)},
		{"entityId", integrations.LogFilter{EntityID: "c1"}, ids(l2, l0)},
		{"integrationId and level", integrations.LogFilter{IntegrationID: "erp", Level: integrations.LevelWarn}, ids(l3)},
		{"level and entityType", integrations.LogFilter{Level: integrations.LevelError, EntityType: "order"}, ids(l2)},
		{"integrationId, level and entityType", integrations.LogFilter{IntegrationID: "crm", Level: integrations.LevelWarn, EntityType: "order"}, ids(l4)},
		{"entityType and entityId", integrations.LogFilter{EntityType: "order", EntityID: "c1"}, ids(l2)},
		{"all five", integrations.LogFilter{IntegrationID: "crm", Level: integrations.LevelError, RunID: "r1", EntityType: "contact", EntityID: "c2"}, ids(l1)},
		{"no match", integrations.LogFilter{IntegrationID: "crm", EntityID: "o1"}, []string{}},
		{"unknown integration", integrations.LogFilter{IntegrationID: "nope"}, []string{}},
		{"case matters", integrations.LogFilter{IntegrationID: "CRM"}, []string{}},
	} {
		c.f.Limit = 100
		items, total := e.logs(tn, c.f)
		sameIDs(t, "filter "+c.name, items, total, c.want, len(c.want))
	}
	// A page of a filtered list: total is the filter's, not the page's.
	items, total := e.logs(tn, integrations.LogFilter{IntegrationID: "crm", Limit: 1, Offset: 1})
	sameIDs(t, "filtered page", items, total, ids(l1), 3)
}

// testLogPaging: Limit and Offset cut the page; Limit 0 gives only the
// total; an offset past the end gives an empty page with the total.
func testLogPaging(t *testing.T, e *env) {
	tn := tenant()
	var want []string
	for i := range 7 {
		l := entry(tn, "crm", integrations.LevelInfo, at.Add(time.Duration(i)*time.Millisecond))
		e.insertLog(l)
		want = append([]string{l.ID}, want...)
	}
	items, total := e.logs(tn, integrations.LogFilter{Limit: 3})
	sameIDs(t, "first page", items, total, want[:3], 7)
	items, total = e.logs(tn, integrations.LogFilter{Limit: 3, Offset: 6})
	sameIDs(t, "last page", items, total, want[6:], 7)
	items, total = e.logs(tn, integrations.LogFilter{Limit: 3, Offset: 50})
	sameIDs(t, "past the end", items, total, []string{}, 7)
	items, total = e.logs(tn, integrations.LogFilter{Limit: 0})
	sameIDs(t, "Limit 0", items, total, []string{}, 7)
}

// testTenants: the same integration ids in two tenants are different
// rows, in every method.
func testTenants(t *testing.T, e *env) {
	t1, t2 := tenant(), tenant()
	s1 := &integrations.State{IntegrationID: "crm", IsEnabled: false, APIVersion: ptr("v1"), UpdatedAt: ptr(at)}
	e.putState(t1, s1)
	if _, err := e.s.GetState(e.ctx, e.db, t2, "crm"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant 2 reads tenant 1's state: %v", err)
	}
	if list, _ := e.s.ListStates(e.ctx, e.db, t2); len(list) != 0 {
		t.Fatalf("tenant 2 lists tenant 1's states: %d", len(list))
	}
	e.putState(t2, &integrations.State{IntegrationID: "crm", IsEnabled: true, APIVersion: ptr("v2"), UpdatedAt: ptr(at.Add(time.Hour))})
	sameState(t, "tenant 1's state after tenant 2's PutState", e.state(t1, "crm"), s1)

	e.putCredentials(t1, "crm", "v1:one", at)
	if _, _, err := e.s.GetCredentials(e.ctx, e.db, t2, "crm"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tenant 2 reads tenant 1's credentials: %v", err)
	}
	if ids, _ := e.s.CredentialIntegrations(e.ctx, e.db, t2); len(ids) != 0 {
		t.Fatalf("tenant 2 lists tenant 1's credentials: %v", ids)
	}
	e.putCredentials(t2, "crm", "v1:two", at)
	if got, _, _ := e.s.GetCredentials(e.ctx, e.db, t1, "crm"); got != "v1:one" {
		t.Fatalf("tenant 2's PutCredentials changed tenant 1's to %q", got)
	}
	if got, _, _ := e.s.GetCredentials(e.ctx, e.db, t2, "crm"); got != "v1:two" {
		t.Fatalf("tenant 2 reads %q, want its own v1:two", got)
	}

	l1 := entry(t1, "crm", integrations.LevelInfo, at)
	e.insertLog(l1)
	for _, f := range []integrations.LogFilter{{Limit: 10}, {IntegrationID: "crm", Limit: 10}, {Level: integrations.LevelInfo, Limit: 10}} {
		items, total := e.logs(t2, f)
		sameIDs(t, fmt.Sprintf("tenant 2's logs (%+v)", f), items, total, []string{}, 0)
	}
	items, total := e.logs(t1, integrations.LogFilter{Limit: 10})
	sameIDs(t, "tenant 1's logs", items, total, []string{l1.ID}, 1)
	if items[0].TenantID != t1 {
		t.Fatalf("tenant 1's entry read back with tenant %q", items[0].TenantID)
	}
}

// testUsesTheTransaction: writes run on the Querier given (a rolled-back
// transaction leaves nothing) and reads on it see the transaction's own
// writes.
func testUsesTheTransaction(t *testing.T, e *env) {
	tn := tenant()
	rollback := errors.New("roll back")
	l := entry(tn, "crm", integrations.LevelWarn, at)
	err := e.db.Tx(e.ctx, func(tx *store.Tx) error {
		if err := e.s.PutState(e.ctx, tx, tn, &integrations.State{IntegrationID: "crm", IsEnabled: false, UpdatedAt: ptr(at)}); err != nil {
			return err
		}
		if err := e.s.PutCredentials(e.ctx, tx, tn, "crm", "v1:x", at); err != nil {
			return err
		}
		if err := e.s.InsertLog(e.ctx, tx, l); err != nil {
			return err
		}
		if _, err := e.s.GetState(e.ctx, tx, tn, "crm"); err != nil {
			return fmt.Errorf("the transaction does not see its own state: %w", err)
		}
		if list, err := e.s.ListStates(e.ctx, tx, tn); err != nil || len(list) != 1 {
			return fmt.Errorf("the transaction lists %d of its own states (%v), want 1", len(list), err)
		}
		if got, _, err := e.s.GetCredentials(e.ctx, tx, tn, "crm"); err != nil || got != "v1:x" {
			return fmt.Errorf("the transaction does not see its own credentials: %q, %v", got, err)
		}
		if ids, err := e.s.CredentialIntegrations(e.ctx, tx, tn); err != nil || len(ids) != 1 {
			return fmt.Errorf("the transaction lists %v of its own credentials (%v), want [crm]", ids, err)
		}
		if items, total, err := e.s.ListLogs(e.ctx, tx, tn, integrations.LogFilter{Limit: 10}); err != nil || total != 1 || len(items) != 1 {
			return fmt.Errorf("the transaction lists %d of its own log entries (total %d, %v), want 1", len(items), total, err)
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if _, err := e.s.GetState(e.ctx, e.db, tn, "crm"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a rolled-back state persists: %v", err)
	}
	if _, _, err := e.s.GetCredentials(e.ctx, e.db, tn, "crm"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rolled-back credentials persist: %v", err)
	}
	if items, total := e.logs(tn, integrations.LogFilter{Limit: 10}); len(items) != 0 || total != 0 {
		t.Fatalf("a rolled-back log entry persists: %d items, total %d", len(items), total)
	}
}
