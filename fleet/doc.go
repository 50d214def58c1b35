// Package fleet runs rath runs on a fleet of worker processes: a program
// submits a run (Submit), and any worker process sharing the store
// executes it (Run). The queue is River (github.com/riverqueue/river) on
// the store's own database, with its SQLite driver for the embedded store
// and its database/sql driver over pgx for PostgreSQL; a run's job is
// inserted in the same transaction as its run.submitted event, so the
// log never has a run without a job, nor the queue a job without a run.
// SubmitBatch writes many runs, with their input sessions
// (session.Prepared) and jobs, in one transaction; a process that only
// submits opens the queue with Options.SubmitOnly (River's insert-only
// client: no listener, no workers).
//
// The event log stays the source of truth. A worker owns a run through a
// lease recorded as a run.leased event with a fencing token, renewed well
// inside the lease time; every append the worker makes for the run is
// checked against the current token in its transaction (the lease is
// the eventlog.Scope of its appends: rath.WithLease, replay.WithLease), so a worker that lost its lease (paused,
// partitioned, too slow) can no longer write to the run. A worker that
// dies stops renewing and beating; once its lease is expired, another worker takes the
// run (a new token) and continues it with replay's resume machinery:
// recorded model and tool calls are answered from the log, so nothing
// that completed runs again. A tool call that was in flight when the
// worker died runs again (at-least-once); make such tools idempotent.
//
// A run has at most one execution at a time: a worker ends a second job
// for a run it is executing, and a job for a run another holder has live
// (a worker, or a resume through Resume or Hold: `rath resume`, the
// console) or that finished ends without doing anything. Workers beat a heartbeat (fleet_workers); a live peer
// expires, with fencing, the leases of a worker whose heartbeat is older
// than DeadAfter, and each worker re-enqueues runs whose lease expired
// (unless a job of theirs is waiting already), so a dead worker's run is
// taken over within seconds. River rescues a stuck job by its age alone;
// rath does not wait for it. A holder whose renewals failed for a lease
// time stops the run itself (ErrLeaseLost). On PostgreSQL leases and
// heartbeats use the database's clock.
//
// A store error that passes (eventlog.IsTransient) suspends the run like a
// retryable model error: River retries the job with backoff, and only
// the last of MaxAttempts ends the run, with the reason.
package fleet
