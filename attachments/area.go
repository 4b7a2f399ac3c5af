package attachments

import (
	"context"

	"github.com/tenantkit/tenantkit/store"
)

// The Service plays its part in a Kit's lifecycle (tenantkit.Area): its
// background work (text extraction, the orphan sweep) runs as jobs
// (RegisterJobs, jobs.go).

// Name is the area's name in the Kit's errors and logs.
func (s *Service) Name() string { return "attachments" }

// Migrations returns the area's schema lines: its tables, and SQLBlobs'
// (so that files may be kept in the Kit's database).
func (s *Service) Migrations() []store.Migrations {
	return []store.Migrations{Migrations, BlobMigrations}
}

// EventTypes describes the events the area emits.
func (s *Service) EventTypes() []store.EventType { return EventTypes }

// Start does nothing: the area's background work runs as jobs.
func (s *Service) Start(context.Context) error { return nil }

// Stop does nothing, as Start starts nothing.
func (s *Service) Stop(context.Context) error { return nil }
