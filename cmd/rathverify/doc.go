// Package main is rathverify, the standalone verifier of attested run
// bundles (docs/EVIDENCE.md, "Attested run bundles"). An auditor runs it
// from the rath module at a version they choose, so the code that checks
// a bundle never comes from the bundle:
//
//	go run github.com/gorath/rath/cmd/rathverify@VERSION -log-key LOG.vkey -witness WITNESS.vkey DIR
//
// It owns no API. It imports nothing from rath, only the standard library
// and golang.org/x/mod, so it is short enough to read before running and
// `go run` fetches nothing else. Beside it, verify.sh (bash, coreutils,
// OpenSSL 3) and verify.py (Python 3 with securesystemslib) make the same
// checks with other tools; the three agree on every bundle the tests
// build, good or bad.
package main
