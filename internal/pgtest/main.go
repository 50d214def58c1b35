package pgtest

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// Main starts one server for a whole test binary, hands it to set, runs the
// tests and stops the server even when they fail. Call it from TestMain:
//
//	var pg *pgtest.Server
//	func TestMain(m *testing.M) { pgtest.Main(m, func(s *pgtest.Server) { pg = s }) }
//
// When the server cannot start, every test fails: the binary exits 1 with
// the reason, it does not skip. Each cleanup runs after the tests (Main
// ends with os.Exit, so a TestMain cannot clean up after it).
func Main(m *testing.M, set func(*Server), cleanup ...func()) {
	MainWith(m, Options{}, set, cleanup...)
}

// MainWith is Main with a server started with opts.
func MainWith(m *testing.M, opts Options, set func(*Server), cleanup ...func()) {
	srv, err := Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: PostgreSQL for the tests:", err)
		os.Exit(1)
	}
	set(srv)
	code := m.Run()
	for _, c := range cleanup {
		c()
	}
	srv.Stop()
	os.Exit(code)
}
