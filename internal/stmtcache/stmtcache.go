package stmtcache

import (
	"context"
	"database/sql"
	"sync"

	"github.com/jmoiron/sqlx"
)

// MaxStatements bounds how many statements a Cache keeps; queries past it
// run unprepared. Callers pass fixed query texts, so it is not reached.
const MaxStatements = 128

// Cache runs queries on db through statements prepared once per query
// text. Query texts must be ready for db (rebound). It is safe for
// concurrent use.
type Cache struct {
	db      *sqlx.DB
	prepare bool
	mu      sync.RWMutex
	stmts   map[string]*sqlx.Stmt
}

// New returns a Cache over db. Only SQLite's statements are kept: pgx
// already caches PostgreSQL's on each connection by itself.
func New(db *sqlx.DB) *Cache {
	return &Cache{db: db, prepare: db.DriverName() == "sqlite", stmts: map[string]*sqlx.Stmt{}}
}

// stmt returns the statement for query, preparing it the first time; nil
// when it cannot be kept (the cache is full, or preparing failed: the
// query then runs unprepared and reports its own error).
func (c *Cache) stmt(ctx context.Context, query string) *sqlx.Stmt {
	if !c.prepare {
		return nil
	}
	// Every read of the hot paths comes here: look up under a read lock.
	c.mu.RLock()
	st, ok := c.stmts[query]
	c.mu.RUnlock()
	if ok {
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[query]; ok {
		return st
	}
	if len(c.stmts) >= MaxStatements {
		return nil
	}
	// Not the caller's context: a statement outlives the call.
	st, err := c.db.PreparexContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil
	}
	c.stmts[query] = st
	return st
}

// GetContext runs query and scans its one row into dest (sqlx.Get).
func (c *Cache) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	if st := c.stmt(ctx, query); st != nil {
		return st.GetContext(ctx, dest, args...)
	}
	return c.db.GetContext(ctx, dest, query, args...)
}

// SelectContext runs query and scans its rows into dest (sqlx.Select).
func (c *Cache) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	if st := c.stmt(ctx, query); st != nil {
		return st.SelectContext(ctx, dest, args...)
	}
	return c.db.SelectContext(ctx, dest, query, args...)
}

// QueryRowContext runs a query expected to return at most one row.
func (c *Cache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := c.stmt(ctx, query); st != nil {
		return st.Stmt.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, query, args...)
}

// QueryContext runs a query returning rows.
func (c *Cache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := c.stmt(ctx, query); st != nil {
		return st.Stmt.QueryContext(ctx, args...)
	}
	return c.db.QueryContext(ctx, query, args...)
}
