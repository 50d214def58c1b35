// Package keyring owns the keys of crypto-shredding: one data key per
// subject (whoever content belongs to), wrapped by a key-encryption key
// (a [KEK]) and kept in the subject_keys table, and the sealed form of a
// payload or blob encrypted under it with AES-256-GCM. Forgetting a
// subject is deleting its row: what was sealed under its key can no
// longer be opened, while the hashes that cover the ciphertext (the
// log's leaves, its Merkle tree, every checkpoint) still verify.
//
// # Subjects
//
// A subject is a level and an id, "level:id": "user:ID" (a person a run
// names), "run:RUNID" (a run's content when it names no one),
// "session:SID" (content appended outside any run) and
// "memory:NAMESPACE" (memory written outside a run). An id is printable
// ASCII without spaces, at most [MaxSubjectLen] bytes in all; [Subject]
// builds one and [ValidSubject] checks one.
//
// # Sealed form
//
// A sealed payload is JSON, so it fits a TEXT column:
//
//	{"$sealed":1,"s":"user:alice","k":"<key id>","n":"<nonce>","c":"<ciphertext>"}
//
// with nonce and ciphertext in standard base64. The AEAD's additional
// data binds the subject and a caller's binding (the event log gives the
// event's stream and type), so a sealed payload moved to another event
// does not open. [IsSealed] and [SealedSubject] read the form without
// any key.
//
// # What it does not own
//
// The schema (package migrations, 00016), the event log, and when
// content is sealed (package eventlog calls a [*Keyring] through an
// interface of its own). It imports no rath package. It works on a
// *sql.DB or *sql.Tx it is given, with ? placeholders passed through the
// rebind function given to [New].
//
// # Concurrency
//
// A [*Keyring] is safe for concurrent use; it caches unwrapped data keys
// in memory until [Keyring.Forget], an erasure through it, or an erasure
// by another process: every erasure rewrites a generation row of
// store_meta, which a keyring reads at most once per [Freshness] and
// drops its cache when it changed ([Keyring.Epoch]).
package keyring
