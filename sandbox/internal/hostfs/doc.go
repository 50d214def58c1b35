// Package hostfs gives the host-directory backends (sandbox/local and
// sandbox/bwrap) their file operations: a workspace directory opened as an
// os.Root, so that "..", absolute paths and symlinks cannot reach outside
// it, with the error mapping, size limits and change hashes the
// sandbox.Sandbox contract asks for.
//
// It owns no process handling (see sandbox/internal/proc) and imports only
// package sandbox from rath.
package hostfs
