// Package sandboxtest is the conformance suite every sandbox.Backend must
// pass. [Run] opens fresh sandboxes on a backend and checks the contract of
// package sandbox: command results, timeouts and process-tree kills, output
// caps under 100 MB of output with bounded memory, file operations and
// their errors, path escapes (lexical and through symlinks made by
// commands), binary files, concurrent calls, Close, and, according to the
// capabilities under test, stdin, isolation from the host and the absence
// of network.
//
// The local, bwrap and opensandbox backends all run it from their own
// tests; a third-party backend should too.
//
// It imports package sandbox and nothing else from rath.
package sandboxtest
