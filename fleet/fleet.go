package fleet

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/migrations"
	"github.com/gorath/rath/session"
)

// Defaults for Options fields left zero.
const (
	DefaultQueue       = river.QueueDefault
	DefaultConcurrency = 4
	DefaultLeaseTime   = 15 * time.Second
	DefaultMaxAttempts = 5
	DefaultDeadAfter   = 2 * time.Second
)

// The application_name of River's connections on PostgreSQL, beside the
// event store's (eventlog.AppWriter and the others).
const (
	AppRiver       = "rath river"        // River's queries: fetches, completions, the leader
	AppRiverListen = "rath river listen" // River's LISTEN for inserted jobs
)

// fetchCooldown is the least time between two of a worker's fetches of
// jobs. River's default, 100 ms, bounds a worker to Concurrency run
// starts per 100 ms and makes a run submitted just after a fetch wait
// that long: with short runs a worker of 4 slots started 40 runs a
// second and no more (docs/PERFORMANCE.md). A fetch is only made while a
// slot is free and a job was announced, a job ended or the poll fired,
// so a short cooldown adds statements only while runs come and go.
const fetchCooldown = 5 * time.Millisecond

// Options configure a Fleet.
type Options struct {
	// Queue is the queue submitted runs go to and workers take them from.
	// The default tenant's runs wait on it; another tenant's, on
	// Queue_TENANT.
	Queue string
	// Tenants are the tenants whose runs this process works (a worker
	// takes runs of no other), and the first the one it submits runs
	// for. Empty means the default tenant (events.DefaultTenant) only.
	Tenants []string
	// Concurrency is how many runs this process works at once.
	Concurrency int
	// LeaseTime is how long a worker's hold on a run lasts without a
	// renewal; renewals come every third of it. A dead worker's run is
	// taken over about this long after its last renewal.
	LeaseTime time.Duration
	// DeadAfter is how long a worker may go without a heartbeat (they
	// come every fifth of it) before its peers expire its leases, with
	// fencing, and take its runs over: a crashed worker's runs go on
	// within about DeadAfter, not LeaseTime. A worker that is only slow
	// to beat for that long loses its runs too (fencing keeps the log
	// right; a tool call it is running may run twice). Zero means
	// DefaultDeadAfter.
	DeadAfter time.Duration
	// MaxAttempts bounds how often a run is tried after its worker was
	// lost, the store failed it or its workflow failed for a retryable
	// reason (Retryable); a run that fails inside its workflow for any
	// other reason ends failed at once (its run.finished says why).
	MaxAttempts int
	// Retryable says which workflow errors are worth a retry of the whole
	// run: on such an error the run is left open (no run.finished) and
	// tried again after a backoff, resumed from its record, until
	// MaxAttempts; the last attempt records the failure. Nil means
	// DefaultRetryable.
	Retryable func(error) bool
	// RetryBackoff is the wait before the second attempt of a run; it
	// doubles with each attempt, up to a minute. Zero means one second.
	RetryBackoff time.Duration
	// WorkerID names this worker in leases and listings. Empty means
	// host-pid-random.
	WorkerID string
	// Resolve returns the workflow a submitted run names, from the
	// parameters of its submission; for a run that started before
	// (Resuming(ctx) is true), from those its run.started recorded, so
	// what the first attempt resolved and recorded (a provider, rules
	// a worker imposed) holds for the whole run. A Resolve that adds to
	// params before a run starts has its additions recorded with it. Nil
	// means the runtime's own resolution, live: a workflow registered by
	// name, the built-in agent (rath.AgentWorkflow, whose parameters
	// Policy judges first) or a registered rath.Builder; a resumed run's
	// through rath.Runtime.RecordedWorkflow, as `rath resume` and the
	// console resolve it.
	Resolve func(ctx context.Context, name string, params map[string]string) (flow.Workflow, error)
	// Policy is what this worker lets a submitted run of the built-in
	// agent ask for (Policy.CheckAgent), and the approval rules it
	// imposes on each (Policy.Impose). It applies when Resolve is nil.
	// The zero value allows the DefaultBackends, no MCP server a run
	// brings, any workspace, and imposes no rule.
	Policy Policy
	// Logger receives River's and the workers' logs. Nil discards them.
	Logger *slog.Logger
	// Clock is this machine's clock; nil means time.Now. Leases and
	// heartbeats are on it on SQLite (one machine, one clock); on
	// PostgreSQL they are on the database's clock whatever this one
	// says, so a worker whose clock is off neither takes a live lease
	// nor keeps one that ran out. Set it to test a skewed machine.
	Clock func() time.Time
	// Log, if set, gets one line for each run this worker takes,
	// finishes, hands back or loses, and for each job it ends because
	// the run is held or finished.
	Log io.Writer
	// SubmitOnly opens the queue to insert jobs only (Submit,
	// SubmitBatch): no listener connection, no workers; Run fails with
	// ErrSubmitOnly. It is what a process that submits and exits needs.
	SubmitOnly bool

	// beforeTake, for tests, runs when a worker has a job and has not
	// taken its run's lease yet.
	beforeTake func()
}

// RunArgs is the queue's job for one run: the run id; everything else
// is in the run's run.submitted event.
type RunArgs struct {
	Run string `json:"run"`
}

// Kind names the job kind in River's tables.
func (RunArgs) Kind() string { return "rath_run" }

// Fleet is one process's view of the run queue: it submits runs and, with
// Run, works them.
type Fleet struct {
	rt       *rath.Runtime
	opts     Options
	db       *sql.DB
	sharedDB bool // db is the event store's: not ours to close
	listener *pgxpool.Pool
	client   *river.Client[*sql.Tx]

	// held are the runs this process is executing: a second job for one
	// of them ends at once (Work).
	held struct {
		sync.Mutex
		runs map[string]bool
	}
	logMu sync.Mutex // one Log line at a time
}

// Open connects to the queue on rt's database, creating River's tables if
// needed.
func Open(ctx context.Context, rt *rath.Runtime, opts Options) (*Fleet, error) {
	if opts.Queue == "" {
		opts.Queue = DefaultQueue
	}
	tenants, err := tenantsOf(opts)
	if err != nil {
		return nil, err
	}
	opts.Tenants = tenants
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.LeaseTime <= 0 {
		opts.LeaseTime = DefaultLeaseTime
	}
	if opts.DeadAfter <= 0 {
		opts.DeadAfter = DefaultDeadAfter
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Retryable == nil {
		opts.Retryable = DefaultRetryable
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = time.Second
	}
	if opts.WorkerID == "" {
		host, _ := os.Hostname()
		var b [3]byte
		rand.Read(b[:])
		opts.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Fleet{rt: rt, opts: opts}
	f.held.runs = map[string]bool{}
	var driver riverdriver.Driver[*sql.Tx]
	store := rt.Store()
	// The queue is where the log is: River's driver is the one for the
	// database the store's target names, as in Migrate.
	switch {
	case eventlog.IsPostgresDSN(store.Target()):
		cfg, err := eventlog.ParsePostgresDSN(store.Target())
		if err != nil {
			return nil, err
		}
		// River's connections get the event store's keepalives and user
		// timeout: a worker paused or cut off while River holds a job row
		// locked is found dead in seconds, not when the kernel gives up.
		eventlog.BoundStalls(cfg)
		eventlog.NameConnections(cfg, AppRiver)
		if opts.SubmitOnly {
			// An insert-only client listens for nothing, and inserts in
			// the event store's transactions: it checks River's schema
			// through the store's read pool, on a connection the store
			// has open already, and does not close it.
			f.db, f.sharedDB = store.DB().DB, true
			driver = riverdatabasesql.New(f.db)
			break
		}
		f.db = stdlib.OpenDB(*cfg)
		pcfg, err := pgxpool.ParseConfig(store.Target())
		if err != nil {
			f.db.Close()
			return nil, fmt.Errorf("fleet: %w", err)
		}
		eventlog.BoundStalls(pcfg.ConnConfig)
		eventlog.NameConnections(pcfg.ConnConfig, AppRiverListen)
		pcfg.MaxConns = 2
		if f.listener, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
			f.db.Close()
			return nil, fmt.Errorf("fleet: %w", err)
		}
		driver = riverdatabasesql.NewWithPgxListener(f.db, f.listener)
	default:
		db, err := openQueueSQLite(store.Target())
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		db.SetMaxOpenConns(4)
		f.db = db
		driver = riversqlite.New(db)
	}
	if err := migrate(ctx, driver, f.db); err != nil {
		f.close()
		return nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &runWorker{f: f})
	// One queue per tenant, each with all the slots: a worker of several
	// tenants takes whichever's run comes first.
	queues := map[string]river.QueueConfig{}
	for _, q := range f.queues() {
		queues[q] = river.QueueConfig{MaxWorkers: opts.Concurrency}
	}
	if opts.SubmitOnly {
		queues = nil // River's insert-only client
	}
	// On SQLite a worker learns of new jobs only by polling River's
	// table. On PostgreSQL every insert (rath submit's, POST /api/runs',
	// the reaper's) sends River's NOTIFY and a worker's listener fetches
	// at once, as it does when one of its jobs ends; polling is only the
	// fallback for a lost notification, so it runs at River's default
	// period. Each poll is a statement on the server: 5 a second made a
	// quarter of an idle worker's.
	fetchPoll := 200 * time.Millisecond
	if f.listener != nil {
		fetchPoll = time.Second
	}
	client, err := river.NewClient(driver, &river.Config{
		ID:      opts.WorkerID,
		Logger:  opts.Logger,
		Workers: workers,
		Queues:  queues,
		// A run may take hours; rath's lease, not a timeout, decides
		// whether its worker is alive.
		JobTimeout:           -1,
		RescueStuckJobsAfter: 4 * opts.LeaseTime,
		MaxAttempts:          opts.MaxAttempts,
		FetchPollInterval:    fetchPoll,
		FetchCooldown:        fetchCooldown,
		RetryPolicy:          backoff{first: opts.RetryBackoff, most: time.Minute},
	})
	if err != nil {
		f.close()
		return nil, fmt.Errorf("fleet: river client: %w", err)
	}
	f.client = client
	return f, nil
}

// DefaultRetryable retries runs that failed on a model call the provider
// could not answer for a while (rate limits, 5xx, timeouts, dropped
// connections) after the provider's own retries gave up.
func DefaultRetryable(err error) bool { return model.KindOf(err).Retryable() }

// backoff is River's retry policy for run jobs: first, doubling with each
// attempt up to most, with ±25% jitter so runs that failed together are
// not retried together.
type backoff struct{ first, most time.Duration }

func (b backoff) NextRetry(job *rivertype.JobRow) time.Time {
	d := b.first
	for i := 1; i < job.Attempt && d < b.most; i++ {
		d *= 2
	}
	d = min(d, b.most)
	d = time.Duration(float64(d) * (0.75 + 0.5*mrand.Float64()))
	return time.Now().Add(d)
}

// migrate creates or updates River's own tables; several processes may
// race to do it at once. A database already at the latest version costs
// one query (migrated).
func migrate(ctx context.Context, driver riverdriver.Driver[*sql.Tx], db *sql.DB) error {
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("fleet: river migrations: %w", err)
	}
	if all := m.AllVersions(); len(all) > 0 && migrated(ctx, db, all[len(all)-1].Version) {
		return nil
	}
	// On SQLite, under rath's migration lock: River's own migrations list
	// the applied versions outside the transaction that applies one, as
	// goose does. (On PostgreSQL the retries below suffice.)
	if migrations.DialectOf(db) == migrations.SQLite {
		release, err := migrations.LockSQLite(ctx, db)
		if err != nil {
			return fmt.Errorf("fleet: river migrations: %w", err)
		}
		defer release()
	}
	var last error
	for range 5 {
		if _, last = m.Migrate(ctx, rivermigrate.DirectionUp, nil); last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("fleet: river migrations: %w", last)
}

func (f *Fleet) close() {
	if f.listener != nil {
		f.listener.Close()
	}
	if f.db != nil && !f.sharedDB {
		f.db.Close()
	}
}

// Close releases the queue's connections. Stop workers first (Run
// returns when its context ends).
func (f *Fleet) Close() error {
	f.close()
	return nil
}

// WorkerID is this process's worker name.
func (f *Fleet) WorkerID() string { return f.opts.WorkerID }

// Submit records a run of the named workflow on input and enqueues its
// job, in one transaction, and returns the run id at once.
func (f *Fleet) Submit(ctx context.Context, workflow string, input *session.Session, params map[string]string) (string, error) {
	run, err := newRunID()
	if err != nil {
		return "", err
	}
	tenant := f.submitTenant()
	sub := events.RunSubmitted{Run: run, Workflow: workflow, InputSession: input.ID(), Queue: f.queueOf(tenant), Params: params, Tenant: tenant}
	_, err = f.rt.Store().AppendTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := f.client.InsertTx(ctx, tx, RunArgs{Run: run}, &river.InsertOpts{Queue: f.queueOf(tenant)})
		if err != nil {
			return fmt.Errorf("fleet: enqueue %s: %w", run, err)
		}
		return nil
	}, eventlog.Write{Stream: events.SubmitStream(run), Expected: eventlog.NoStream, Events: []events.Payload{sub}})
	if err != nil {
		return "", fmt.Errorf("fleet: submit: %w", err)
	}
	return run, nil
}

// Run works runs until ctx ends, then stops taking new ones and waits
// for those in flight to finish, up to grace; runs still going then are
// canceled and handed back (their leases lapse and another worker
// resumes them).
func (f *Fleet) Run(ctx context.Context, grace time.Duration) error {
	if f.opts.SubmitOnly {
		return ErrSubmitOnly
	}
	started := time.Now()
	if err := f.beat(ctx, started); err != nil {
		return fmt.Errorf("fleet: register worker: %w", err)
	}
	if err := f.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("fleet: start workers: %w", err)
	}
	var bg sync.WaitGroup
	rctx, stopReaper := context.WithCancel(context.Background())
	bg.Go(func() { f.reap(rctx) })
	// The heartbeat goes on until the runs in flight are stopped: peers
	// must not take over runs this worker is still finishing.
	hctx, stopBeat := context.WithCancel(context.Background())
	defer stopBeat()
	bg.Go(func() { f.heartbeat(hctx, started) })
	<-ctx.Done()
	f.logf("stopping: no new runs; those in flight get %s to finish", grace)
	stopReaper()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := f.client.Stop(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = f.client.StopAndCancel(context.Background())
	}
	stopBeat()
	bg.Wait()
	f.logf("stopped")
	if gerr := f.goodbye(context.Background()); gerr != nil {
		f.opts.Logger.Warn("fleet: unregister worker", "err", gerr)
	}
	return err
}
