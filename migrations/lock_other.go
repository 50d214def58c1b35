//go:build !unix

package migrations

import "context"

// fileLock is a no-op where rath keeps no kernel lock (as the write gate,
// it is kept on Unix systems only): there, upMu serializes the
// migrations of one process, and SQLite's write lock alone orders
// processes.
type fileLock struct{}

func lockFile(context.Context, string, string) (*fileLock, error) { return nil, nil }

func (*fileLock) unlock() error { return nil }
