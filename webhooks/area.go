package webhooks

import (
	"context"

	"github.com/tenantkit/tenantkit/store"
)

// The Service plays its part in a Kit's lifecycle (tenantkit.Area):
// deliveries, retries, sweeps and inbound processing run as jobs
// (RegisterJobs, service.go).

// Name is the area's name in the Kit's errors and logs.
func (s *Service) Name() string { return "webhooks" }

// Migrations returns the area's schema lines.
func (s *Service) Migrations() []store.Migrations { return []store.Migrations{Migrations} }

// EventTypes describes the events the area emits.
func (s *Service) EventTypes() []store.EventType { return EventTypes }

// Start does nothing: the area's background work runs as jobs.
func (s *Service) Start(context.Context) error { return nil }

// Stop waits for the queue wake-ups this process started after commits;
// the Kit calls it once the job engine has stopped.
func (s *Service) Stop(context.Context) error {
	s.Wait()
	return nil
}
