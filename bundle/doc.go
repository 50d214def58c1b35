// Package bundle writes attested run bundles: a directory holding a
// run's events exactly as the store's Merkle log commits to them, with
// everything a stranger needs to check them without rath and without
// trusting the operator's database (docs/EVIDENCE.md, "Attested run
// bundles").
//
// A bundle holds:
//
//   - events.jsonl: the run's events, one leaf line each (the bytes whose
//     SHA-256(0x00 ‖ line) is the event's leaf hash, RFC 6962);
//   - payloads/SEQ.json and payloads/SEQ.salt: each payload as appended and
//     its salt, so SHA-256(salt ‖ payload) is the commitment in its line;
//   - blobs/HASH: every blob the payloads reach (tool output, file
//     contents, model requests and responses, message segments);
//   - checkpoint: a C2SP tlog-checkpoint signed note of the log's tree, with
//     any witness cosignatures, and proofs.json: one RFC 9162 inclusion
//     proof per line against that checkpoint's root;
//   - verifier.vkey and public.pem: the signer's public key, as a note
//     verifier key and as PKIX PEM; witnesses.vkey when witnesses cosigned;
//   - attestation.dsse.json: a DSSE envelope (Ed25519) of an in-toto
//     Statement v1 whose subjects are the SHA-256 of every other file and
//     whose predicate ([Predicate]) names the run, its seqs, the checkpoint,
//     models, tools, approvals and the replay verdict;
//   - VERIFY.md: what the bundle is and where to get what checks it. A
//     bundle ships no code: whoever can change it in transit could change
//     that too. The verifiers are cmd/rathverify (Go) and its verify.sh and
//     verify.py, a module of their own taken at a version the auditor
//     chooses, with the log's and the witnesses' keys as their holders
//     published them ([OpenOptions]).
//
// # What it does not own
//
// The Merkle log (package events), keys (package signkey), stored and
// witnessed checkpoints (given as [Options.Checkpoint]) and replay (the
// verdict is given as [Options.Replay]). It imports events and signkey
// only.
package bundle
