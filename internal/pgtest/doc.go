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
// with it.
//
// This package is for tests only; it imports nothing from rath.
package pgtest
