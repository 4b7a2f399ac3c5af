package datasync

import (
	"context"

	"github.com/tenantkit/tenantkit/store"
)

// The Service plays its part in a Kit's lifecycle (tenantkit.Area): runs
// are durable jobs (RegisterJobs, worker.go).

// Name is the area's name in the Kit's errors and logs.
func (s *Service) Name() string { return "datasync" }

// Migrations returns the area's schema lines.
func (s *Service) Migrations() []store.Migrations { return []store.Migrations{Migrations} }

// EventTypes describes the events the area emits.
func (s *Service) EventTypes() []store.EventType { return EventTypes }

// Start does nothing: runs are jobs.
func (s *Service) Start(context.Context) error { return nil }

// Stop does nothing, as Start starts nothing.
func (s *Service) Stop(context.Context) error { return nil }
