package projections

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/jmoiron/sqlx"
)

// Scope is the read model as one tenant sees it: the one read layer the
// console and its API query through. Every query sees only the tenant's
// runs, sessions, approvals, datasets, memory namespaces and access
// records (the reads of its content), and the
// leases, lineage edges, usage, snapshots and chunks of those, whether
// or not it filters on the tenant itself.
//
// On PostgreSQL a Scope's queries run in one read-only transaction that
// sets rath.tenant and the role rath_tenant (SET LOCAL), and migration
// 00018's row-level security policies filter the rows; on SQLite, which
// has none, the Scope rewrites each query's tables into the tenant's
// rows. A Scope of the empty tenant sees every tenant's, as the CLI and
// workers do.
//
// Nothing is sent before the first query: a request that reads no
// tenant data (a static asset, a refused one) costs no round trip. The
// first query's round trip opens the transaction and sets the tenant and
// the role in one simple-protocol message (tenants are names that need
// no quoting, CheckTenant), so a scoped read costs one round trip more
// than an unscoped one: its COMMIT.
//
// A Scope is for one request: not safe for concurrent use. Close ends
// its transaction; a query after Close begins another.
type Scope struct {
	db     *sqlx.DB
	tenant string
	pg     bool
	conn   *sqlx.Conn // PostgreSQL: the connection of the transaction in progress, if any
	pool   *sqlx.DB   // PostgreSQL: the tenant's own pool (Scopes), if any
	ctx    context.Context
}

var _ queryer = (*Scope)(nil)

// NewScope returns tenant's scope of db (the store's read pool); the
// empty tenant's sees every tenant's rows. A tenant that is not a valid
// name is an error matching events.ErrInvalid. It sends nothing.
func NewScope(ctx context.Context, db *sqlx.DB, tenant string) (*Scope, error) {
	if err := events.CheckTenant(tenant); err != nil {
		return nil, fmt.Errorf("projections: scope: %w", err)
	}
	return &Scope{db: db, tenant: tenant, pg: db.DriverName() != "sqlite", ctx: ctx}, nil
}

// Tenant is the scope's tenant ("" for every tenant).
func (s *Scope) Tenant() string { return s.tenant }

// Reader returns a Reader whose every query runs in the scope.
func (s *Scope) Reader() *Reader { return &Reader{db: s, q: s} }

// Close ends the scope's transaction, if one is open. A connection whose
// transaction could not be ended is dropped, never pooled in the tenant's
// role.
func (s *Scope) Close() error {
	if s.conn == nil {
		return nil
	}
	conn := s.conn
	s.conn = nil
	// The request may be gone; the transaction must end all the same.
	_, err := conn.ExecContext(context.WithoutCancel(s.ctx), "COMMIT")
	if err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	return errors.Join(err, conn.Close())
}

// Rebind and DriverName are the read pool's.
func (s *Scope) Rebind(query string) string { return s.db.Rebind(query) }
func (s *Scope) DriverName() string         { return s.db.DriverName() }

// via returns what runs the query in the scope, and the query as it
// runs there.
func (s *Scope) via(query string) (sqlx.QueryerContext, string, error) {
	if s.tenant == "" {
		return s.db, query, nil
	}
	if !s.pg {
		return s.db, scopeQuery(query, s.tenant, true), nil
	}
	if s.pool != nil {
		// Its connections are the tenant's from login (Scopes).
		return s.pool, scopeQuery(query, s.tenant, false), nil
	}
	if s.conn == nil {
		// The request's context, not the query's: one transaction serves
		// the request's queries.
		conn, err := s.db.Connx(s.ctx)
		if err != nil {
			return nil, "", fmt.Errorf("projections: scope: %w", err)
		}
		// The role too: policies do not bind a superuser or a role that
		// bypasses them (migration 00018 makes rath_tenant). Without
		// arguments the driver sends the three statements as one message.
		if _, err := conn.ExecContext(s.ctx, `BEGIN READ ONLY; SET LOCAL rath.tenant = '`+s.tenant+`'; SET LOCAL ROLE rath_tenant`); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			conn.Close()
			return nil, "", fmt.Errorf("projections: scope: set rath.tenant: %w", err)
		}
		s.conn = conn
	}
	// Row-level security filters the tables that have a tenant; those
	// derived from sessions are filtered through them.
	return s.conn, scopeQuery(query, s.tenant, false), nil
}

// GetContext, SelectContext, QueryContext and QueryRowContext run query
// in the scope.
func (s *Scope) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	q, query, err := s.via(query)
	if err != nil {
		return err
	}
	return sqlx.GetContext(ctx, q, dest, query, args...)
}

func (s *Scope) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	q, query, err := s.via(query)
	if err != nil {
		return err
	}
	return sqlx.SelectContext(ctx, q, dest, query, args...)
}

func (s *Scope) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q, query, err := s.via(query)
	if err != nil {
		return nil, err
	}
	return q.QueryContext(ctx, query, args...)
}

func (s *Scope) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	q, query, err := s.via(query)
	if err != nil {
		// A query that fails at once, so that Scan reports err's cause.
		return s.db.QueryRowContext(canceled(ctx), "SELECT 1")
	}
	switch q := q.(type) {
	case *sqlx.Conn:
		return q.QueryRowContext(ctx, query, args...)
	case *sqlx.DB:
		return q.QueryRowContext(ctx, query, args...)
	}
	return s.db.QueryRowContext(ctx, query, args...)
}

// canceled is ctx canceled: a query on it fails with context.Canceled.
func canceled(ctx context.Context) context.Context {
	c, cancel := context.WithCancel(ctx)
	cancel()
	return c
}

// scopedTable matches a table a query reads (FROM or JOIN), with its
// alias if it has one.
var scopedTable = regexp.MustCompile(`(?i)\b(FROM|JOIN)\s+(runs|sessions|approvals|datasets|memory_namespaces|access_records|run_leases|session_edges|usage|session_snapshots|chunks)\b(\s+(?:AS\s+)?([a-z_][a-z0-9_]*))?`)

// sqlWords are words that may follow a table and are no alias.
var sqlWords = map[string]bool{"where": true, "on": true, "left": true, "right": true, "inner": true, "outer": true, "cross": true, "join": true,
	"order": true, "group": true, "limit": true, "using": true, "union": true, "having": true, "offset": true, "natural": true, "window": true}

// scopeQuery rewrites the tables query reads into tenant's rows of them.
// With own, the tables with a tenant column are filtered here (SQLite);
// without, row-level security filters those and only the tables derived
// from sessions and runs are rewritten, through them. tenant is a valid
// tenant's name (CheckTenant), so it is safe as a literal.
func scopeQuery(query, tenant string, own bool) string {
	mine := func(table string) string {
		if !own {
			return table
		}
		return `(SELECT * FROM ` + table + ` WHERE tenant = '` + tenant + `')`
	}
	return scopedTable.ReplaceAllStringFunc(query, func(m string) string {
		sub := scopedTable.FindStringSubmatch(m)
		verb, table, alias := sub[1], strings.ToLower(sub[2]), sub[4]
		rest := "" // what followed the table name, when it was no alias
		if alias == "" || sqlWords[strings.ToLower(alias)] {
			alias, rest = table, sub[3]
		}
		var from string
		switch table {
		case "runs", "sessions", "approvals", "datasets", "memory_namespaces", "access_records":
			if !own {
				return m
			}
			from = mine(table)
		case "run_leases":
			if !own {
				return m
			}
			from = `(SELECT * FROM run_leases WHERE run IN (SELECT id FROM ` + mine("runs") + ` t))`
		case "session_edges":
			from = `(SELECT * FROM session_edges WHERE child IN (SELECT id FROM ` + mine("sessions") + ` t))`
		default: // usage, session_snapshots, chunks
			from = `(SELECT * FROM ` + table + ` WHERE session IN (SELECT id FROM ` + mine("sessions") + ` t))`
		}
		if alias == table && rest != "" {
			return verb + " " + from + " " + alias + rest
		}
		return verb + " " + from + " " + alias
	})
}
