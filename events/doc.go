// Package events owns rath's source of truth: the append-only, hash-chained
// event log on embedded SQLite.
//
// # What it owns
//
//   - The event catalogue: one Go struct per event type, each with a type name
//     and a version ([Payload]), canonical JSON encoding ([Canonical]) and a
//     strict decoder ([Decode]). A type whose struct changes gets a new
//     version and an upcaster from the old one, declared with it in the
//     catalogue; Decode upcasts stored old versions step by step, and the
//     catalogue refuses a type missing one (evidence.redacted is at version
//     2, which added the shapes a redaction keeps).
//   - [Store]: Append with optimistic concurrency per stream (a typed
//     [*ConflictError]), one writer goroutine with group commit (many
//     concurrent appenders share a transaction, and Append returns only after
//     the commit is durable), reads by stream, seq range and run, in-process
//     subscriptions, content-addressed blobs, the hash chain and [Store.Verify].
//   - The [Projector] hook: read models registered with the store are updated
//     in the same transaction as the events they consume.
//   - The [Redactor] hook: secrets are removed from every payload and blob
//     before it is hashed and written, and each removal is recorded as a
//     [SecretRedacted] event on [StreamRedactions].
//
// # What it does not own
//
// The schema is applied by package migrations before [Open]; read models live
// in package projections; sessions in package session. This package imports
// nothing else from rath.
//
// # Concurrency
//
// A [*Store] is safe for concurrent use. All writes go through one goroutine
// started by [Open] and stopped by [Store.Close]; reads use a separate pool.
package events
