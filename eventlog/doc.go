// Package eventlog is rath's source of truth: the append-only, Merkle-hashed
// event log on embedded SQLite or PostgreSQL. What it stores, the event
// types, is package events.
//
// # What it owns
//
//   - [Store]: Append with optimistic concurrency per stream (a typed
//     [*ConflictError]) and lease fencing ([*FencedError]), one writer
//     goroutine with group commit (many concurrent appenders share a
//     transaction, and Append returns only after the commit is durable),
//     reads by stream, seq range and run, subscriptions, content-addressed
//     blobs, the Merkle tree and [Store.Verify].
//   - The [Projector] hook: read models registered with the store are updated
//     in the same transaction as the events they consume.
//   - The [Redactor] hook: secrets are removed from every payload and blob
//     before it is hashed and written, and each removal is recorded as an
//     events.SecretRedacted event on events.StreamRedactions; [Store.Redact]
//     deletes payloads later, keeping their leaves.
//   - The checkpoints' hook ([Options.AfterCommit]), copying a log
//     ([Store.CopyFrom]) and erasing one.
//
// # What it does not own
//
// The schema is applied by package migrations before [Open]; read models live
// in package projections; sessions in package session.
//
// # Concurrency
//
// A [*Store] is safe for concurrent use. All writes go through one goroutine
// started by [Open] and stopped by [Store.Close]; reads use a separate pool.
package eventlog
