package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/tenantkit/tenantkit/store"
)

// DefaultQueue is the queue jobs go to unless a kind or an enqueue says
// otherwise.
const DefaultQueue = "default"

// Config tunes an Engine. The zero value is ready to use.
type Config struct {
	// Queues maps queue names to the number of jobs this process works at
	// once in each. Defaults to {"default": 10, "events": 10}; queues named
	// by Register are added with 10 workers when missing.
	Queues map[string]int
	// FetchCooldown is the shortest pause between two fetches of a queue.
	// Defaults to 2ms. River's own default (100ms) caps throughput near
	// workers ÷ 100ms.
	FetchCooldown time.Duration
	// FetchPollInterval is how often an idle queue looks for new jobs when
	// no notification arrives: the backstop of River's insert
	// notifications (LISTEN/NOTIFY on PostgreSQL; on SQLite River's outbox
	// table, read every 50ms), which wake a queue when a job is committed,
	// by this process or another. Defaults to 1s on both engines (see
	// DefaultFetchPollInterval).
	FetchPollInterval time.Duration
	// BackgroundPollInterval is FetchPollInterval for the queues
	// registered as Background, on SQLite, where every poll takes the
	// single writer connection. Defaults to
	// DefaultBackgroundPollInterval.
	BackgroundPollInterval time.Duration
	// JobTimeout is the default time limit of one attempt. Defaults to 1
	// minute; a Worker may set its own.
	JobTimeout time.Duration
	// MaxAttempts is the default number of attempts. Defaults to 25.
	MaxAttempts int
	// LeaseTTL is how long a running job's lease lasts unless renewed;
	// renewals (and every process's sweep of lapsed leases) run every
	// LeaseTTL/5. A job whose process is killed runs again elsewhere
	// about LeaseTTL + LeaseTTL/5 after its last renewal (see the package
	// documentation, "Failover"). Defaults to DefaultLeaseTTL (5 s); at
	// least 100 ms.
	LeaseTTL time.Duration
	// RescueStuckAfter is River's own rescue, the backstop of the leases:
	// how long a job may stay running before River takes it for stuck
	// and runs it again, whether or not it renews its lease (a Work that
	// never returns). It must exceed every worker's time limit. Defaults
	// to DefaultRescueStuckAfter, or JobTimeout plus a minute when that
	// is longer.
	RescueStuckAfter time.Duration
	// Schema is the PostgreSQL schema of the job tables, kept apart from
	// the application's so a host that uses River itself never clashes.
	// Defaults to the store's schema followed by "_river" (public_river).
	// Ignored on SQLite.
	Schema string
	// EventRetention is how long the domain event log keeps events.
	// Defaults to 7 days; a shorter setting than MinEventRetention is
	// raised to it (the events stream replays 24 hours).
	EventRetention time.Duration
	// Logger receives the engine's warnings. Defaults to the store's.
	Logger *slog.Logger
}

// DefaultFetchPollInterval is Config.FetchPollInterval's default on both
// engines. A queue is woken by River's insert notification when a job
// is committed (on SQLite at once for this process's commits, within
// the 50ms its outbox listener polls for other processes'; see the
// package doc), so the poll only bounds the wait of a job whose
// notification was not sent or not read: River sends at most one per
// queue every FetchCooldown (a job committed in that window after
// another one's fetch waits for the next notification or poll), and
// none is read while the listener reconnects. On SQLite it was 100ms
// until each poll's cost showed up in a loaded server's profile (every
// poll takes the single writer; BENCHMARKS.md, "Jobs").
const DefaultFetchPollInterval = time.Second

// DefaultBackgroundPollInterval is Config.BackgroundPollInterval's
// default: the backstop of a Background queue on SQLite.
const DefaultBackgroundPollInterval = 5 * time.Second

// DefaultRescueStuckAfter is Config.RescueStuckAfter's default: above
// every tenantkit worker's time limit (webhook drains: 100 s).
const DefaultRescueStuckAfter = 5 * time.Minute

// Engine runs durable background jobs stored in the tenantkit database,
// on River. Jobs are enqueued inside the caller's transaction, so they
// exist exactly when the change that caused them commits; they survive
// restarts; several processes on one PostgreSQL share the work.
//
// Register workers and subscriptions before Start.
type Engine struct {
	db *store.DB
	// bg is db's Background: the engine's own queries (leases, sweeps,
	// River's) never wait behind requests for a connection.
	bg     *store.DB
	cfg    Config
	client client
	logger *slog.Logger

	workers  *river.Workers
	defaults map[string]kindDefaults

	// observe, when set (Observe), is told every job's outcome.
	observe func(kind, outcome string, d time.Duration)
	// table is River's job table, qualified by its schema on PostgreSQL.
	table string

	mu      sync.Mutex
	started bool
	subs    []Subscription // under subsMu
	// subsMu guards subs apart from mu: an emit hook reads them inside the
	// emitting transaction, which on SQLite holds the one writer, while
	// Start holds mu until River has started, which needs that writer.
	subsMu sync.RWMutex
	queues map[string]int
	// background holds the queues registered as Background.
	background map[string]bool
	// running holds the queues the River client was built with or has
	// been given since; Start adds the rest.
	running map[string]bool

	// holder names this engine in the leases it takes (host:pid:instance).
	holder string
	// stopping is closed by Stop; stopSweep ends the lease sweep.
	stopping  chan struct{}
	stopSweep context.CancelFunc
	swept     chan struct{}
	// leasesFrozen, set by tests, stops this engine's lease renewals and
	// sweeps, as if its process had died while its workers go on.
	leasesFrozen atomic.Bool
}

type kindDefaults struct {
	queue       string
	maxAttempts int
}

// clientMakers holds one constructor per engine; each engine's
// build-tagged file registers its own.
var clientMakers []func(ctx context.Context, db *store.DB, cfg *river.Config, schema string) (client, bool, error)

// New migrates the job tables (under the store's migration lock) and
// returns an engine. It starts nothing; call Start.
func New(ctx context.Context, db *store.DB, cfg Config) (*Engine, error) {
	e := &Engine{
		db:         db,
		bg:         db.Background(),
		cfg:        cfg,
		workers:    river.NewWorkers(),
		defaults:   map[string]kindDefaults{},
		queues:     map[string]int{DefaultQueue: 10, eventQueue: 10},
		background: map[string]bool{},
		logger:     cmp.Or(cfg.Logger, db.Logger()),
		holder:     newHolder(),
	}
	maps.Copy(e.queues, cfg.Queues)
	if err := db.Migrate(ctx, Migrations); err != nil {
		return nil, fmt.Errorf("jobs: migrate: %w", err)
	}

	schema := cfg.Schema
	if schema == "" && db.Schema() != "" {
		schema = db.Schema() + "_river"
	}
	rcfg := &river.Config{
		FetchCooldown:        cmp.Or(cfg.FetchCooldown, 2*time.Millisecond),
		FetchPollInterval:    cmp.Or(cfg.FetchPollInterval, DefaultFetchPollInterval),
		JobTimeout:           cfg.JobTimeout,
		RescueStuckJobsAfter: rescueAfter(cfg),
		MaxAttempts:          cfg.MaxAttempts,
		Logger:               quiet(e.logger),
		Workers:              e.workers,
		Queues:               map[string]river.QueueConfig{},
		Schema:               schema,
	}
	e.running = map[string]bool{}
	for name, n := range e.queues {
		rcfg.Queues[name] = river.QueueConfig{MaxWorkers: n}
		e.running[name] = true
	}
	for _, mk := range clientMakers {
		c, ok, err := mk(ctx, db, rcfg, schema)
		if err != nil {
			return nil, err
		}
		if ok {
			e.client = c
			break
		}
	}
	if e.client == nil {
		return nil, errors.New("jobs: no job driver for this store engine")
	}
	e.table = "river_job"
	if rcfg.Schema != "" {
		// River's PostgreSQL driver keeps its tables in the schema; the
		// SQLite one has none and clears it (sqlite.go).
		e.table = pgIdentifier(rcfg.Schema) + ".river_job"
	}

	registerEvents(e)
	return e, nil
}

// Outcomes of a job's run, as Observe reports them.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed" // retried later, or discarded after the last attempt
	OutcomeCancelled = "cancelled"
	OutcomeSnoozed   = "snoozed"
)

// Observe has fn told of every job run by this process: its kind, its
// outcome (OutcomeCompleted, OutcomeFailed, OutcomeCancelled,
// OutcomeSnoozed) and how long Work took. Call it before Start; fn must be
// fast and safe for concurrent use (a metrics counter).
func (e *Engine) Observe(fn func(kind, outcome string, d time.Duration)) { e.observe = fn }

// QueueDepth counts the jobs waiting or running, by kind and state
// (available, scheduled, retryable, running), across every process.
func (e *Engine) QueueDepth(ctx context.Context) (map[[2]string]int64, error) {
	rows, err := e.bg.Query(ctx, `SELECT kind, state, count(*) FROM `+e.table+`
		WHERE state IN ('available', 'scheduled', 'retryable', 'running') GROUP BY kind, state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[[2]string]int64{}
	for rows.Next() {
		var kind, state string
		var n int64
		if err := rows.Scan(&kind, &state, &n); err != nil {
			return nil, err
		}
		out[[2]string{kind, state}] = n
	}
	return out, rows.Err()
}

// pgIdentifier quotes a PostgreSQL identifier.
func pgIdentifier(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// RegisterOpts are defaults for every job of one kind.
type RegisterOpts struct {
	// Queue the kind's jobs go to. Defaults to DefaultQueue.
	Queue string
	// MaxAttempts for the kind's jobs. Defaults to the engine's.
	MaxAttempts int
	// Workers is how many of Queue's jobs this process works at once when
	// neither Config.Queues nor an earlier Register set it; zero means 10.
	// An area whose jobs mostly wait (webhook deliveries) asks for more.
	Workers int
	// Background marks Queue as one whose jobs may wait a little to be
	// picked up (imports, text extraction, provider webhooks): on SQLite
	// it is polled every Config.BackgroundPollInterval rather than
	// FetchPollInterval (insert notifications wake it either way). No
	// effect on PostgreSQL, nor on a queue sized in Config.Queues (the
	// job engine is built with it).
	Background bool
}

// Register adds the worker for jobs of kind T. It must be called before
// Start, once per kind.
func Register[T Args](e *Engine, w Worker[T], opts *RegisterOpts) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return errors.New("jobs: Register after Start")
	}
	var zero T
	if err := river.AddWorkerSafely[T](e.workers, workerAdapter[T]{e: e, w: w}); err != nil {
		return fmt.Errorf("jobs: register %s: %w", zero.Kind(), err)
	}
	d := kindDefaults{queue: DefaultQueue}
	workers := 10
	if opts != nil {
		d.queue = cmp.Or(opts.Queue, DefaultQueue)
		d.maxAttempts = opts.MaxAttempts
		workers = cmp.Or(opts.Workers, workers)
	}
	if _, ok := e.queues[d.queue]; !ok {
		e.queues[d.queue] = workers
	}
	if opts != nil && opts.Background {
		e.background[d.queue] = true
	}
	e.defaults[zero.Kind()] = d
	return nil
}

// Opts adjust one enqueue.
type Opts struct {
	// Queue overrides the kind's queue.
	Queue string
	// MaxAttempts overrides the kind's attempts.
	MaxAttempts int
	// ScheduledAt delays the first run; zero runs as soon as possible.
	ScheduledAt time.Time
	// Priority: 1 (first) to 4; defaults to 1.
	Priority int
}

func (e *Engine) insertParams(args Args, opts *Opts) river.InsertManyParams {
	d := e.defaults[args.Kind()]
	io := &river.InsertOpts{Queue: cmp.Or(d.queue, DefaultQueue), MaxAttempts: d.maxAttempts}
	if opts != nil {
		io.Queue = cmp.Or(opts.Queue, io.Queue)
		io.MaxAttempts = cmp.Or(opts.MaxAttempts, io.MaxAttempts)
		io.ScheduledAt = opts.ScheduledAt
		io.Priority = opts.Priority
	}
	return river.InsertManyParams{Args: args, InsertOpts: io}
}

// EnqueueTx adds a job inside tx: it exists only if tx commits. It
// returns the job id.
func (e *Engine) EnqueueTx(ctx context.Context, tx *store.Tx, args Args, opts *Opts) (int64, error) {
	ids, err := e.EnqueueManyTx(ctx, tx, []Args{args}, opts)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueManyTx adds several jobs inside tx, with the same options.
func (e *Engine) EnqueueManyTx(ctx context.Context, tx *store.Tx, args []Args, opts *Opts) ([]int64, error) {
	if len(args) == 0 {
		return nil, nil
	}
	params := make([]river.InsertManyParams, len(args))
	for i, a := range args {
		params[i] = e.insertParams(a, opts)
	}
	res, err := e.client.insertTx(ctx, tx, params)
	if err != nil {
		return nil, fmt.Errorf("jobs: enqueue %s: %w", args[0].Kind(), err)
	}
	return ids(res), nil
}

// Enqueue adds a job in a transaction of its own and returns its id.
func (e *Engine) Enqueue(ctx context.Context, args Args, opts *Opts) (int64, error) {
	var id int64
	err := e.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		id, err = e.EnqueueTx(ctx, tx, args, opts)
		return err
	})
	return id, err
}

func ids(res []*rivertype.JobInsertResult) []int64 {
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.Job.ID
	}
	return out
}

// Get returns a job's state, attempts, errors and progress. An unknown id
// is ErrUnknownJob.
func (e *Engine) Get(ctx context.Context, id int64) (*Info, error) {
	row, err := e.client.get(ctx, id)
	if err != nil {
		return nil, err
	}
	return infoFromRow(row), nil
}

// Cancel cancels a job. A waiting job is cancelled at once; a running job
// has its context cancelled (on PostgreSQL) and is marked for cancellation,
// which CancelRequested reports. Cancelling a finished job changes nothing.
func (e *Engine) Cancel(ctx context.Context, id int64) (*Info, error) {
	row, err := e.client.cancel(ctx, id)
	if err != nil {
		return nil, err
	}
	return infoFromRow(row), nil
}

// Periodic enqueues args every interval, on one process of those sharing
// the database (River's elected leader). Call it before Start.
func (e *Engine) Periodic(interval time.Duration, args func() Args) {
	e.client.periodic().Add(river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) {
			a := args()
			p := e.insertParams(a, nil)
			return a, p.InsertOpts
		}, nil))
}

// queueConfig is River's configuration of queue name: its workers, and
// the background poll interval when it is a Background queue on an
// engine that polls.
func (e *Engine) queueConfig(name string) river.QueueConfig {
	qc := river.QueueConfig{MaxWorkers: e.queues[name]}
	if e.background[name] && !e.db.Dialect().Notifies() {
		qc.FetchPollInterval = cmp.Or(e.cfg.BackgroundPollInterval, DefaultBackgroundPollInterval)
	}
	return qc
}

// Start starts working jobs in the background until Stop. Cancelling ctx
// does not stop the engine; call Stop.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return errors.New("jobs: already started")
	}
	for _, name := range slices.Sorted(maps.Keys(e.queues)) {
		if e.running[name] {
			continue
		}
		if err := e.client.addQueue(name, e.queueConfig(name)); err != nil {
			return fmt.Errorf("jobs: queue %s: %w", name, err)
		}
		e.running[name] = true
	}
	// River treats cancelling Start's context as a stop; ours stops only
	// through Stop, so that a host cancelling its start-up context (or a
	// SIGTERM context) does not cut running jobs short.
	if err := e.client.start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	e.started = true
	e.stopping = make(chan struct{})
	sweepCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stopSweep, e.swept = stop, make(chan struct{})
	go func() {
		defer close(e.swept)
		e.runSweeper(sweepCtx)
	}()
	return nil
}

// Running reports whether the engine is started and not stopped: it
// fetches and works jobs.
func (e *Engine) Running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started
}

// Stop stops fetching jobs and waits for running ones to finish. When ctx
// ends first, running jobs have their contexts cancelled; a job stopped
// that way runs again later (it is retried or rescued), so nothing is lost.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	started := e.started
	e.started = false
	e.mu.Unlock()
	if !started {
		return nil
	}
	close(e.stopping)
	e.stopSweep()
	<-e.swept
	err := e.client.stop(ctx)
	if err != nil && ctx.Err() != nil {
		hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return e.client.stopAndCancel(hard)
	}
	return err
}

// rescueAfter is cfg's RescueStuckAfter or its default.
func rescueAfter(cfg Config) time.Duration {
	if cfg.RescueStuckAfter != 0 {
		return cfg.RescueStuckAfter
	}
	return max(DefaultRescueStuckAfter, cmp.Or(cfg.JobTimeout, time.Minute)+time.Minute)
}
