// Package fleet runs rath runs on a fleet of worker processes: a program
// submits a run (Submit), and any worker process sharing the store
// executes it (Run). The queue is River (github.com/riverqueue/river) on
// the store's own database, with its SQLite driver for the embedded store
// and its database/sql driver over pgx for PostgreSQL; a run's job is
// inserted in the same transaction as its run.submitted event, so the
// log never has a run without a job, nor the queue a job without a run.
//
// The event log stays the source of truth. A worker owns a run through a
// lease recorded as a run.leased event with a fencing token, renewed well
// inside the lease time; every append the worker makes for the run is
// checked against the current token in its transaction
// (events.ContextWithLease), so a worker that lost its lease (paused,
// partitioned, too slow) can no longer write to the run. A worker that
// dies stops renewing; once its lease expires, another worker takes the
// run (a new token) and continues it with replay's resume machinery:
// recorded model and tool calls are answered from the log, so nothing
// that completed runs again. A tool call that was in flight when the
// worker died runs again (at-least-once); make such tools idempotent.
//
// River rescues a stuck job by its age alone; rath does not wait for it.
// Each worker also looks for runs whose lease expired and re-enqueues
// them, so a dead worker's run is taken over within about the lease time.
package fleet
