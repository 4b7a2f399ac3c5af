package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/tenantkit/tenantkit/store"
)

// migrateAndConnect brings River's tables up to date, under the store's
// migration lock so that processes starting together apply each version
// once, and returns a client. River's Migrate runs one transaction per
// version (on PostgreSQL a new enum value cannot be used in the
// transaction that adds it). prepare, when set, runs first under the lock.
// wake, when set, is told the queues of the jobs each committed insert of
// this process made available (the SQLite driver's wakingListener).
func migrateAndConnect[TTx any](ctx context.Context, db *store.DB, driver riverdriver.Driver[TTx], cfg *river.Config, prepare func() error, wake func(queues []string)) (client, error) {
	err := db.WithLock(ctx, "tenantkit.migrate", func() error {
		if prepare != nil {
			if err := prepare(); err != nil {
				return err
			}
		}
		m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: cfg.Schema, Logger: cfg.Logger})
		if err != nil {
			return err
		}
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: migrate: %w", err)
	}
	c, err := river.NewClient(driver, cfg)
	if err != nil {
		return nil, err
	}
	return riverClient[TTx]{c: c, d: driver, schema: cfg.Schema, wake: wake}, nil
}

// client hides River's transaction type parameter (*sql.Tx on SQLite,
// pgx.Tx on PostgreSQL) from the engine.
type client interface {
	insertTx(ctx context.Context, tx *store.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
	get(ctx context.Context, id int64) (*rivertype.JobRow, error)
	cancel(ctx context.Context, id int64) (*rivertype.JobRow, error)
	update(ctx context.Context, id int64, output any) error
	periodic() *river.PeriodicJobBundle
	addQueue(name string, qc river.QueueConfig) error
	start(ctx context.Context) error
	stop(ctx context.Context) error
	stopAndCancel(ctx context.Context) error
	// running returns up to max jobs running since before horizon with
	// ids above after, in id order (River's stuck-job query).
	running(ctx context.Context, horizon time.Time, after int64, max int) ([]*rivertype.JobRow, error)
	// rescueTx moves running jobs to the states in p, appending p's
	// errors, inside tx (River's rescue, which checks no state: the
	// caller has), and wakes the queues (one per job) of those made
	// available.
	rescueTx(ctx context.Context, tx *store.Tx, p *riverdriver.JobRescueManyParams, queues []string) error
	// completeTx marks the running job id completed inside tx; it
	// reports false when the job was not running.
	completeTx(ctx context.Context, tx *store.Tx, id int64) (bool, error)
}

type riverClient[TTx any] struct {
	c      *river.Client[TTx]
	d      riverdriver.Driver[TTx]
	schema string
	wake   func(queues []string)
}

func (r riverClient[TTx]) driverTx(tx *store.Tx) (TTx, error) {
	dtx, ok := tx.Driver().(TTx)
	if !ok {
		return dtx, fmt.Errorf("jobs: transaction of type %T does not belong to this engine", tx.Driver())
	}
	return dtx, nil
}

func (r riverClient[TTx]) running(ctx context.Context, horizon time.Time, after int64, max int) ([]*rivertype.JobRow, error) {
	return r.d.GetExecutor().JobGetStuck(ctx, &riverdriver.JobGetStuckParams{AfterID: after, Max: max, Schema: r.schema, StuckHorizon: horizon})
}

func (r riverClient[TTx]) rescueTx(ctx context.Context, tx *store.Tx, p *riverdriver.JobRescueManyParams, queues []string) error {
	dtx, err := r.driverTx(tx)
	if err != nil {
		return err
	}
	p.Schema = r.schema
	exec := r.d.UnwrapExecutor(dtx)
	if _, err := exec.JobRescueMany(ctx, p); err != nil {
		return err
	}
	// Wake the queues of the jobs made available, as an insert does
	// (River's insert notification), rather than wait for their poll.
	var wake []string
	for i, state := range p.State {
		if state == string(rivertype.JobStateAvailable) && i < len(queues) {
			wake = append(wake, fmt.Sprintf(`{"queue": %q}`, queues[i]))
		}
	}
	if len(wake) == 0 || !r.d.SupportsListenNotify() {
		return nil
	}
	return exec.NotifyMany(ctx, &riverdriver.NotifyManyParams{Payload: wake, Schema: r.schema, Topic: riverInsertTopic})
}

// riverInsertTopic is the topic of River's insert notifications, which
// wake the queues named in their payloads.
const riverInsertTopic = "river_insert"

func (r riverClient[TTx]) completeTx(ctx context.Context, tx *store.Tx, id int64) (bool, error) {
	dtx, err := r.driverTx(tx)
	if err != nil {
		return false, err
	}
	p := riverdriver.JobSetStateCompleted(id, time.Now().UTC(), nil)
	rows, err := r.d.UnwrapExecutor(dtx).JobSetStateIfRunningMany(ctx, &riverdriver.JobSetStateIfRunningManyParams{
		ID: []int64{p.ID}, Attempt: []*int{p.Attempt}, ErrData: [][]byte{p.ErrData}, FinalizedAt: []*time.Time{p.FinalizedAt},
		MetadataDoMerge: []bool{false}, MetadataUpdates: [][]byte{nil}, ScheduledAt: []*time.Time{p.ScheduledAt},
		Schema: r.schema, State: []rivertype.JobState{p.State},
	})
	if err != nil {
		return false, err
	}
	return len(rows) == 1 && rows[0].State == rivertype.JobStateCompleted, nil
}

func (r riverClient[TTx]) insertTx(ctx context.Context, tx *store.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	dtx, err := r.driverTx(tx)
	if err != nil {
		return nil, err
	}
	res, err := r.c.InsertManyTx(ctx, dtx, params)
	if err == nil && r.wake != nil {
		var queues []string
		for _, ins := range res {
			if ins.Job.State == rivertype.JobStateAvailable && !slices.Contains(queues, ins.Job.Queue) {
				queues = append(queues, ins.Job.Queue)
			}
		}
		if len(queues) > 0 {
			tx.AfterCommit(func() { r.wake(queues) })
		}
	}
	return res, err
}

func (r riverClient[TTx]) get(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	return notFound(r.c.JobGet(ctx, id))
}

func (r riverClient[TTx]) cancel(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	return notFound(r.c.JobCancel(ctx, id))
}

func (r riverClient[TTx]) update(ctx context.Context, id int64, output any) error {
	_, err := r.c.JobUpdate(ctx, id, &river.JobUpdateParams{Output: output})
	return err
}

func (r riverClient[TTx]) periodic() *river.PeriodicJobBundle { return r.c.PeriodicJobs() }

func (r riverClient[TTx]) addQueue(name string, qc river.QueueConfig) error {
	return r.c.Queues().Add(name, qc)
}

func (r riverClient[TTx]) start(ctx context.Context) error { return r.c.Start(ctx) }
func (r riverClient[TTx]) stop(ctx context.Context) error  { return r.c.Stop(ctx) }
func (r riverClient[TTx]) stopAndCancel(ctx context.Context) error {
	return r.c.StopAndCancel(ctx)
}

func notFound(row *rivertype.JobRow, err error) (*rivertype.JobRow, error) {
	if errors.Is(err, rivertype.ErrNotFound) {
		return nil, ErrUnknownJob
	}
	return row, err
}
