package webhooks

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenantkit/tenantkit/store"
)

// The Service plays its part in a Kit's lifecycle (tenantkit.Area):
// deliveries, retries, sweeps and inbound processing run as jobs
// (RegisterJobs, service.go); the delivery queues' takeover runs in the
// process, from Start to Stop.

// Name is the area's name in the Kit's errors and logs.
func (s *Service) Name() string { return "webhooks" }

// Migrations returns the area's schema lines.
func (s *Service) Migrations() []store.Migrations { return []store.Migrations{Migrations} }

// EventTypes describes the events the area emits.
func (s *Service) EventTypes() []store.EventType { return EventTypes }

// Start runs the delivery queues' takeover and sweep in this process
// (drain's Queues.Run): a queue whose drain died with its process is
// handed on once its lease lapses (3 s), without waiting for the job
// engine's periodic SweepJob (whose leader may be the process that
// died). Every process serving deliveries should run it; the Kit calls
// Start after RegisterJobs and the job engine's start. Cancelling ctx
// does not stop it: Stop does. A second Start does nothing.
func (s *Service) Start(ctx context.Context) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.jobs == nil {
		return errors.New("webhooks: Start needs RegisterJobs first")
	}
	if s.runDone != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	s.runCancel, s.runDone = cancel, done
	go func() {
		defer close(done)
		s.queues.Run(ctx)
	}()
	return nil
}

// Stop ends what Start started, waiting no longer than ctx allows, then
// waits for the queue wake-ups this process started after commits; the
// Kit calls it once the job engine has stopped.
func (s *Service) Stop(ctx context.Context) error {
	s.runMu.Lock()
	cancel, done := s.runCancel, s.runDone
	s.runCancel, s.runDone = nil, nil
	s.runMu.Unlock()
	var err error
	if cancel != nil {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("webhooks: the queues' takeover did not stop: %w", ctx.Err())
		}
	}
	s.Wait()
	return err
}
