// Command fleetbench measures rath's fleet on a throwaway PostgreSQL
// cluster it starts and stops itself (internal/pgtest): R runs of K
// rounds each (a scripted model reply asking for a shell command, the
// command run by the local sandbox backend, the transcript), submitted
// with one `rath submit --batch` and executed by W `rath worker`
// processes, for each W given; then a raw baseline in the same
// invocation, which writes the same event rows with plain INSERTs from W
// connections, one transaction per round.
//
// It reports, per phase: steps/s (a step is one round), the gap between
// a run's consecutive rounds (p50, p99, from the events' timestamps) and
// the time between steps (a round's tool.returned to the next round's
// tool.called: the gap without the round's command), CPU
// per step of the worker processes (their rusage), split into their own
// (from /proc just before they stop) and their shell commands', and of
// the server (the postmaster and its backends, from /proc), the cores
// that kept busy and so how far more workers could go on this machine,
// bytes stored per step (the growth of pg_total_relation_size over the
// database's tables; the unlogged staging tables apart) and WAL
// per step (pg_current_wal_lsn before and after), the CPU of the submit
// per run (batch, and single submits on their own), and the sequencing
// lag: from an event's commit (its transaction's commit timestamp; the
// cluster runs with track_commit_timestamp on) to its delivery to a
// subscriber (eventlog.Store.Subscribe in this process), over all events
// and over the workers' alone (the batch submit's one big commit apart;
// the workers start once the subscriber has the submit's events). It
// also prints the lag from the event's own timestamp, taken by the
// writer inside the transaction, which adds the rest of the transaction:
// a batch submit's first events wait for the whole batch.
//
// -pg-delay 0,0.5ms,2ms runs every W once per delay, with every
// connection of the submit, the workers and the subscriber going through
// a proxy in this process that holds each direction's bytes that long
// (internal/netdelay; 0 connects directly), as a database on another
// machine would be; the raw baseline runs once per W, directly, with the
// first delay's rows. It then prints, per delay, the fewest workers
// against the most: steps/s, step gap p50 and CPU a step.
//
// -statements N prints each phase's N most expensive statements
// (pg_stat_statements), -wal N the N relations that wrote the most WAL
// (pg_walinspect), and -cpuprofile DIR has each worker write a Go CPU
// profile there (RATH_CPU_PROFILE).
//
// -kek FILE (default $RATH_KEK_FILE) has every rath process seal the
// content it stores under that key-encryption key, and the subscriber
// open it: two invocations, with and without, show what sealing costs a
// step on the fleet's path.
//
// It is a measurement, not a test: it prints a table and asserts
// nothing. `make fleetbench` (which `make bench` runs) builds rath and
// calls it; docs/PERFORMANCE.md has figures from one machine.
//
//	go run ./cmd/fleetbench -runs 200 -rounds 5 -workers 1,4 -pg-delay 0,0.5ms,2ms
package main
