package identity

import (
	"context"
	"errors"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// The Service plays its part in a Kit's lifecycle (tenantkit.Area).

// Name is the area's name in the Kit's errors and logs.
func (s *Service) Name() string { return "identity" }

// Migrations are the area's migration lines: the SQL store's tables.
func (s *Service) Migrations() []store.Migrations { return []store.Migrations{Migrations} }

// EventTypes describes the events the area emits.
func (s *Service) EventTypes() []store.EventType { return EventTypes }

// RegisterJobs registers the password-reset mail worker on e (before e
// starts); from then on RequestPasswordReset enqueues a job instead of
// mailing during the request, so that a reset request costs the same
// whether or not the account exists and survives a restart. Registering
// on the engine already registered is a no-op; a second engine is an
// error.
func (s *Service) RegisterJobs(e *jobs.Engine) error {
	switch {
	case s.jobs == e:
		return nil
	case s.jobs != nil:
		return errors.New("identity: RegisterJobs: already registered on another job engine")
	}
	if err := jobs.Register(e, jobs.WorkFunc[resetArgs](s.workReset), nil); err != nil {
		return err
	}
	s.jobs = e
	return nil
}

// Start does nothing: the area runs no background work of its own (its
// reset mail runs on the job engine).
func (s *Service) Start(context.Context) error { return nil }

// Stop does nothing; see Start.
func (s *Service) Stop(context.Context) error { return nil }
