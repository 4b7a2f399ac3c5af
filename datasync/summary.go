package datasync

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// IntegrationRuns is what the runs of one integration add up to over a
// window (Service.Summary): its latest run and how many runs are in each
// status.
type IntegrationRuns struct {
	IntegrationID string `json:"integrationId"`
	// Latest is the integration's newest run in the window.
	Latest *Run `json:"latest"`
	// ByStatus counts the window's runs by status; every status with at
	// least one run is present.
	ByStatus map[Status]int `json:"byStatus"`
}

// Summary returns, per integration with runs created at or after since
// in the caller's tenant, its latest run and how many of its runs created
// at or after since are in each status, ordered by integration id. It is
// the data of the dashboards' data sync widget; its cost follows the
// integrations and the hours of the window, not the runs (kept counts by
// hour, Store.RunSummary).
func (s *Service) Summary(ctx context.Context, since time.Time) ([]IntegrationRuns, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	return s.store.RunSummary(ctx, s.db, sc.TenantID, since)
}
