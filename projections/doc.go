// Package projections owns rath's SQL read models (the list is [Tables]:
// sessions and their graph, usage, runs, run leases, approvals and more),
// all derived from the event log.
//
// [Projector] is registered with the events store and updates the tables in
// the same transaction as the events it consumes, so a read after an Append
// sees its effect. [Rebuild] drops every row and replays the log; a rebuilt
// database equals the incrementally built one, row for row, and [Check]
// proves that without changing the store, by rebuilding into a scratch
// database and comparing. [Reader] answers the queries the session package
// and the CLI need; [Reader.RunState] is a run's state with its lease, in
// one query, which the fleet's workers, cancel and resume act on.
//
// # Structural sharing
//
// A fork stores no chunk copies: its row names a base session and base_len,
// the length of the prefix it shares, and the chunks table holds only the
// chunks a session wrote itself. Reading a session walks the base chain, so
// fork cost and storage are O(1) in the number of chunks.
//
// It imports events and migrations and nothing else from rath (enforced
// by allowedImports in the repository's style_test.go).
package projections
