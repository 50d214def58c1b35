// Package pgtest starts a throwaway PostgreSQL server for tests: a fresh
// cluster made with initdb in a temporary directory, listening on a free
// loopback port, stopped and removed when the test binary is done.
//
// The server is real (the Debian postgresql package's binaries under
// /usr/lib/postgresql/<version>/bin); nothing here mocks PostgreSQL. A test
// that needs the server fails, never skips, when it cannot start: run
// `apt-get install -y postgresql` (the Makefile's deps target does).
//
// PostgreSQL refuses to run as root, so when the test runs as root the
// server's processes run as the postgres user and the directory is handed
// to it. The postmaster is a direct child of the test process with a
// parent-death signal, so a test binary that crashes takes its server down
// with it. Its directory stays behind, though (as it does when a test ends
// the binary with os.Exit): the process holds a lock on a file in each of
// its servers' directories, and Start removes every directory whose lock
// has been let go.
//
// This package is for tests only; it imports nothing from rath.
package pgtest
