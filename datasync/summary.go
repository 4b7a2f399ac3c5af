package datasync

import (
	"context"
	"slices"
	"strings"
	"time"
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

// summaryLimit bounds the runs Summary reads (the newest first).
const summaryLimit = 1000

// Summary returns, per integration with runs created at or after since
// (at most the newest 1000 runs of the caller's tenant), its latest run
// and its runs by status, ordered by integration id. It is the data of
// the dashboards' data sync widget.
func (s *Service) Summary(ctx context.Context, since time.Time) ([]IntegrationRuns, error) {
	runs, _, err := s.ListRuns(ctx, RunFilter{Limit: summaryLimit})
	if err != nil {
		return nil, err
	}
	byID := map[string]*IntegrationRuns{}
	for _, r := range runs { // newest first
		if r.CreatedAt.Before(since) {
			break
		}
		ir := byID[r.IntegrationID]
		if ir == nil {
			ir = &IntegrationRuns{IntegrationID: r.IntegrationID, Latest: r, ByStatus: map[Status]int{}}
			byID[r.IntegrationID] = ir
		}
		ir.ByStatus[r.Status]++
	}
	out := make([]IntegrationRuns, 0, len(byID))
	for _, ir := range byID {
		out = append(out, *ir)
	}
	slices.SortFunc(out, func(a, b IntegrationRuns) int { return strings.Compare(a.IntegrationID, b.IntegrationID) })
	return out, nil
}
