package integrationstest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/integrations/integrationstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The suite bites: each store below is the SQL store with one behaviour
// broken, and the suite run against it must fail, in the subtest named.

// tenantBlind reads any tenant's credentials of the integration as the
// caller's (one tenant would use another's provider secrets).
type tenantBlind struct{ *integrations.SQLStore }

func (tenantBlind) GetCredentials(ctx context.Context, q store.Querier, _, integrationID string) (string, time.Time, error) {
	var sealed string
	var at time.Time
	err := q.QueryRow(ctx, `SELECT sealed, updated_at FROM integration_credentials WHERE integration_id = $1 ORDER BY updated_at LIMIT 1`,
		integrationID).Scan(&sealed, &at)
	return sealed, at.UTC(), err
}

// keepsFirst never replaces a stored state (an insert that ignores the
// conflict): a tenant could never disable an integration twice.
type keepsFirst struct{ *integrations.SQLStore }

func (s keepsFirst) PutState(ctx context.Context, q store.Querier, tenantID string, st *integrations.State) error {
	if _, err := s.GetState(ctx, q, tenantID, st.IntegrationID); err == nil {
		return nil
	}
	return s.SQLStore.PutState(ctx, q, tenantID, st)
}

// dropsEnabledAt forgets when an integration was enabled.
type dropsEnabledAt struct{ *integrations.SQLStore }

func (s dropsEnabledAt) PutState(ctx context.Context, q store.Querier, tenantID string, st *integrations.State) error {
	cp := *st
	cp.EnabledAt = nil
	return s.SQLStore.PutState(ctx, q, tenantID, &cp)
}

// zeroOnMissing answers a missing state with a zero State beside
// ErrNotFound (the Service would take it for the tenant's stored state:
// disabled, unversioned, and stored under an empty integration id).
type zeroOnMissing struct{ *integrations.SQLStore }

func (s zeroOnMissing) GetState(ctx context.Context, q store.Querier, tenantID, integrationID string) (*integrations.State, error) {
	st, err := s.SQLStore.GetState(ctx, q, tenantID, integrationID)
	if err != nil {
		return &integrations.State{}, err
	}
	return st, nil
}

// oldestFirst lists the log oldest first.
type oldestFirst struct{ *integrations.SQLStore }

func (s oldestFirst) ListLogs(ctx context.Context, q store.Querier, tenantID string, f integrations.LogFilter) ([]*integrations.LogEntry, int, error) {
	limit, offset := f.Limit, f.Offset
	f.Limit, f.Offset = 1_000_000, 0
	all, total, err := s.SQLStore.ListLogs(ctx, q, tenantID, f)
	if err != nil {
		return nil, 0, err
	}
	slices.Reverse(all)
	from := min(offset, len(all))
	return all[from:min(from+limit, len(all))], total, nil
}

// ignoresLevel drops the level filter.
type ignoresLevel struct{ *integrations.SQLStore }

func (s ignoresLevel) ListLogs(ctx context.Context, q store.Querier, tenantID string, f integrations.LogFilter) ([]*integrations.LogEntry, int, error) {
	f.Level = ""
	return s.SQLStore.ListLogs(ctx, q, tenantID, f)
}

// pageTotal counts the page instead of every match.
type pageTotal struct{ *integrations.SQLStore }

func (s pageTotal) ListLogs(ctx context.Context, q store.Querier, tenantID string, f integrations.LogFilter) ([]*integrations.LogEntry, int, error) {
	items, _, err := s.SQLStore.ListLogs(ctx, q, tenantID, f)
	return items, len(items), err
}

// brokenStores are the broken stores by name.
var brokenStores = map[string]func() integrations.Store{
	"tenantBlind":    func() integrations.Store { return tenantBlind{integrations.NewSQLStore()} },
	"keepsFirst":     func() integrations.Store { return keepsFirst{integrations.NewSQLStore()} },
	"dropsEnabledAt": func() integrations.Store { return dropsEnabledAt{integrations.NewSQLStore()} },
	"zeroOnMissing":  func() integrations.Store { return zeroOnMissing{integrations.NewSQLStore()} },
	"oldestFirst":    func() integrations.Store { return oldestFirst{integrations.NewSQLStore()} },
	"ignoresLevel":   func() integrations.Store { return ignoresLevel{integrations.NewSQLStore()} },
	"pageTotal":      func() integrations.Store { return pageTotal{integrations.NewSQLStore()} },
}

// TestBrokenStore runs the suite on SQLite against the broken store
// storetest.Broken names; it is run, and meant to fail, by
// TestSuiteCatchesBrokenStores.
func TestBrokenStore(t *testing.T) {
	newStore, ok := brokenStores[storetest.Broken()]
	if !ok {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	db := storetest.SQLite(t, integrations.Migrations)
	integrationstest.Run(t, func(*testing.T) (*store.DB, integrations.Store) { return db, newStore() })
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	storetest.SuiteCatches(t, "TestBrokenStore", map[string]string{
		"tenantBlind":    "Tenants",
		"keepsFirst":     "StateReplaces",
		"dropsEnabledAt": "States",
		"zeroOnMissing":  "States",
		"oldestFirst":    "LogOrder",
		"ignoresLevel":   "LogFilters",
		"pageTotal":      "LogPaging",
	})
}
