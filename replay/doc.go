// Package replay re-executes recorded runs against their recorded model
// and tool answers and proves that they reproduce the log, or says where
// they do not.
//
// [Run] runs a workflow's code again in a scratch store with an oracle
// (the protocol in internal/oracle, shared with flow) that answers every
// model call and tool call from the original run's events (no network, no side effects), then compares the
// events it produced with the recorded ones, stream by stream, ignoring
// wall-clock fields (at, latency, durations). The [Report] gives events
// compared and matched and the first divergence, in the three kinds of
// Temporal's replayer: missing, extra and mismatch, with the recorded seq,
// both sides as a readable diff, and a hint (prompt changed, tool sequence
// changed, code path changed). Memory writes are computed again by the
// replayed code (the record gives only their stream versions, from which
// the memory ids derive), so a change to memo extraction or archiving is
// a divergence too.
//
// [Resume] continues a crashed run: recorded calls are answered from the
// log, and once the record runs out the run goes on live. Its new events
// are forwarded to the store once the scratch store committed them, and
// all of them before each live call, so no recorded model call or tool
// call is made twice. [ForkAt] replays a run up to a seq and goes on live
// from there as a new run linked to the original.
//
// What it may import is the allowedImports table in the repository's
// style_test.go, which the tests enforce.
package replay
