// Package signkey holds the Ed25519 keys that sign a store's evidence:
// the checkpoints of its Merkle log (as signed notes, the format of
// golang.org/x/mod/sumdb/note) and the attestations of exported run
// bundles (DSSE envelopes). One key file serves both, so an auditor
// checks one public key.
//
// A signer key file holds the note private key text
// ("PRIVATE+KEY+name+hash+base64"); its verifier key is the note
// verifier key text ("name+hash+base64") and the same public key as a
// PKIX PEM block for tools that do not speak the note format (openssl,
// securesystemslib, cosign).
package signkey
