// Package rathbin gives tests that run rath as a separate process its
// binary: the one `make test` built once for the whole suite (named by
// $RATH_TEST_BINARY), or, when a package's tests run on their own, one
// built from this tree with go build. Linking the 85 MB binary once
// instead of once per package saves the suite about a minute of CPU.
package rathbin
