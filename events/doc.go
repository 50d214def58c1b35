// Package events is rath's event catalogue: what every package names when
// it writes or reads the log, and nothing that stores it.
//
// # What it owns
//
//   - [Event], the record of one stored event, and [Payload]: one Go struct
//     per event type, each with a type name and a version, its stream
//     ([StreamPayload]) and its validation ([Validator], [ErrInvalid]).
//   - Canonical JSON encoding ([Canonical], [CanonicalizeJSON]) and a strict
//     decoder ([Decode]). A type whose struct changes gets a new version and
//     an upcaster from the old one, declared with it in the catalogue;
//     Decode upcasts stored old versions step by step, and the catalogue
//     refuses a type missing one (evidence.redacted is at version 2, which
//     added the shapes a redaction keeps).
//   - Stream names ([SubmitStream], [LeaseStream], [MemoryStream], ...), the
//     form a payload takes in its row ([ExpandStored]) and what a redaction
//     leaves in its place ([RedactedMarker], [Shape], [EvidenceRedacted],
//     [SecretRedacted]).
//
// # What it does not own
//
// The log itself (the store, its writer, the Merkle tree, verify, redaction
// and copy, on SQLite or PostgreSQL) is package eventlog, which imports
// this one. This package imports nothing else from rath.
package events
