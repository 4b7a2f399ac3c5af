package notifications

import (
	"context"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// The Service plays its part in a Kit's lifecycle (tenantkit.Area).

// Name is the area's name in the Kit's errors and logs.
func (s *Service) Name() string { return "notifications" }

// Migrations returns the area's schema lines.
func (s *Service) Migrations() []store.Migrations { return []store.Migrations{Migrations} }

// EventTypes describes the events the area emits.
func (s *Service) EventTypes() []store.EventType { return EventTypes }

// RegisterJobs registers nothing: the feeds that create notifications
// are subscribed by the Kit, which knows the other areas.
func (s *Service) RegisterJobs(*jobs.Engine) error { return nil }

// Start does nothing, as the area has no background work.
func (s *Service) Start(context.Context) error { return nil }

// Stop does nothing, as Start starts nothing.
func (s *Service) Stop(context.Context) error { return nil }
