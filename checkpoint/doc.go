// Package checkpoint signs the Merkle log of a store (package events)
// and lets witnesses cosign it, so that a history rewritten by whoever
// holds the database, or even the log's signing key, is caught.
//
// A checkpoint is a C2SP tlog-checkpoint: a signed note
// (golang.org/x/mod/sumdb/note, Ed25519, keys of package signkey) whose
// text is three lines, the store's origin, the tree size and the base64
// RFC 6962 root at that size:
//
//	rath.store/5f0c2b1e9d8a47c6b3e2f1a0c9d8e7f6
//	1000
//	kq2y0lQ0mVY8R6cM3n1nJ3p7x0o3v0yq0Yz0pX9rWbU=
//
//	— rath-log Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URY...
//
// The origin is "rath.store/" followed by the store's id, a random value
// the schema migration records once in store_meta (key store_id), so two
// stores never share an origin, and a copy of a store (rath copy) is a log
// of its own.
//
// # Signing
//
// A Signer, given to eventlog.Options.AfterCommit, signs the head the
// writer just committed every Every events, every Interval while events
// arrive, at the end of each run (a commit holding run.finished) and when
// it is closed. Checkpoints are stored in the store's checkpoints table,
// append-only, with the verifier key of their signer, so a change of key
// is visible. Sign signs the current head on demand.
//
// # Witnesses
//
// A Witness holds another key and a state file of its own outside the
// store: the last checkpoint it cosigned. For each new checkpoint signed
// by the log key it trusts, it checks a consistency proof from that
// checkpoint (tlog.CheckTree) and refuses a fork or a rollback with a
// *ForkError or *RollbackError; otherwise it adds its cosignature, a
// second note signature line over the same text by its own key, to the
// store's checkpoint_cosignatures table. (A note signature, not the C2SP
// tlog-cosignature format, which signs a timestamped variant of the text.)
//
// # Verifying
//
// Verify checks every stored checkpoint against the tree (the root at its
// size) and its signatures and cosignatures, and names each witness key
// by its key id. The store records its witnesses' keys itself, so a
// caller who trusts particular witnesses pins their keys
// (VerifyOptions.Witnesses): unless one of them cosigned, the report is
// Unwitnessed (a *WitnessError); Covering returns the signed
// checkpoint with its cosignatures that covers a given size, for
// exported evidence.
package checkpoint
