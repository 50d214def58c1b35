// Package main is rathverify, the standalone verifier of attested run
// bundles (docs/EVIDENCE.md, "Attested run bundles"). An auditor runs it
// from the rath repository at a version they choose, so the code that checks
// a bundle never comes from the bundle:
//
//	go run github.com/gorath/rath/cmd/rathverify@VERSION -log-key LOG.vkey -witness WITNESS.vkey DIR
//
// It owns no API. It is a module of its own inside the rath repository
// (tags cmd/rathverify/vX.Y.Z), importing nothing from rath, only the
// standard library and golang.org/x/mod: it is short enough to read
// before running, and `go run` fetches nothing else. (The rath module
// itself could not be run this way: its go.mod has a replace directive.) Beside it, verify.sh (bash, coreutils,
// OpenSSL 3) and verify.py (Python 3 with securesystemslib) make the same
// checks with other tools; the three agree on every bundle the tests
// build, good or bad.
package main
