package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
)

// describeDSN names a PostgreSQL database by host, port and name, never
// with its password.
func describeDSN(dsn string) string {
	cfg, err := eventlog.ParsePostgresDSN(dsn)
	if err != nil {
		return "the PostgreSQL database of --dsn"
	}
	return fmt.Sprintf("PostgreSQL database %q at %s:%d", cfg.Database, cfg.Host, cfg.Port)
}

// existingDSN fails unless the DSN's database has rath's schema; a wrong
// or unreachable server fails here, naming host and port.
func (a *app) existingDSN() error {
	if !eventlog.IsPostgresDSN(a.dsn) {
		return &usageError{err: fmt.Errorf("--dsn must be a postgres:// or postgresql:// URL (--dir selects the embedded store)"), hint: "rath --help"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ms, err := rath.MigrationStatus(ctx, a.dsn)
	if err != nil {
		return fmt.Errorf("open %s: %w", describeDSN(a.dsn), err)
	}
	for _, m := range ms {
		if m.Applied {
			return nil
		}
	}
	return fmt.Errorf("no rath store in %s (\"rath new\", \"rath import\" or \"rath migrate\" creates one)", describeDSN(a.dsn))
}

// connectNotice is how long a PostgreSQL connection may take before the
// CLI says it is still connecting (a server over a slow link, or one
// that accepts and never answers, would otherwise look like a hang).
const connectNotice = time.Second

// connecting prints on stderr, once the connection to --dsn has taken
// connectNotice, that it is still being made, and again every few
// seconds; the returned func stops it. Without --dsn it does nothing.
func (a *app) connecting(ctx context.Context) (stop func()) {
	if a.dsn == "" {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		wait := connectNotice
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			fmt.Fprintf(a.stderr, "rath: connecting to %s (%s so far; connect_timeout=N in the DSN bounds it)\n",
				describeDSN(a.dsn), time.Since(start).Round(time.Second))
			wait = 5 * time.Second
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
