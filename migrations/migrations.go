package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"sync"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

//go:embed *.sql
var files embed.FS

// goose has no session locker for SQLite, so runs in one process are
// serialized here; across processes SQLite's own write lock serializes the
// migration transactions.
var upMu sync.Mutex

// Migration is one migration and whether it has been applied.
type Migration struct {
	Version int64  `json:"version"`
	Source  string `json:"source"`
	Applied bool   `json:"applied"`
	// AppliedAt is empty when the migration is pending.
	AppliedAt string `json:"applied_at,omitempty"`
}

func provider(db *sql.DB) (*goose.Provider, error) {
	p, err := goose.NewProvider(database.DialectSQLite3, db, files)
	if err != nil {
		return nil, fmt.Errorf("migrations: new provider: %w", err)
	}
	return p, nil
}

// Up applies every pending migration and returns how many it applied.
func Up(ctx context.Context, db *sql.DB) (int, error) {
	upMu.Lock()
	defer upMu.Unlock()
	p, err := provider(db)
	if err != nil {
		return 0, err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("migrations: up: %w", err)
	}
	return len(res), nil
}

// Status lists every embedded migration in version order.
func Status(ctx context.Context, db *sql.DB) ([]Migration, error) {
	p, err := provider(db)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: status: %w", err)
	}
	out := make([]Migration, 0, len(st))
	for _, s := range st {
		m := Migration{Version: s.Source.Version, Source: s.Source.Path, Applied: s.State == goose.StateApplied}
		if m.Applied && !s.AppliedAt.IsZero() {
			m.AppliedAt = s.AppliedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		out = append(out, m)
	}
	return out, nil
}

// ProjectionTables lists the tables that are pure projections of the event
// log, in an order safe for deleting their rows.
var ProjectionTables = []string{"chunks", "session_edges", "usage", "runs", "sessions", "id_counters", "projection_checkpoints"}
