package eventlog

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
)

// IsPostgresDSN reports whether dsn names a PostgreSQL database: a
// postgres:// or postgresql:// URL. Anything else is not one (rath's
// embedded store is chosen by a directory, never by a DSN).
func IsPostgresDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// notifyChannel is the LISTEN/NOTIFY channel every commit signals: the
// wake-up of subscribers in every process sharing the database.
const notifyChannel = "rath_events"

// ErrUnreachable is matched by a *ConnectError.
var ErrUnreachable = errors.New("eventlog: database server unreachable")

// ConnectError reports a PostgreSQL server that could not be reached or
// refused the connection. It names the host and port (never the password)
// and matches ErrUnreachable.
type ConnectError struct {
	Host string
	Port uint16
	Err  error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("eventlog: connect to PostgreSQL at %s: %v", net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), e.Err)
}

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *ConnectError) Is(target error) bool { return target == ErrUnreachable }

func (e *ConnectError) Unwrap() error { return e.Err }

// ParsePostgresDSN parses a PostgreSQL DSN. Its errors never contain the
// password (pgx redacts it).
func ParsePostgresDSN(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("eventlog: PostgreSQL DSN: %w", err)
	}
	return cfg, nil
}

// How long a connection may stall before it is cut off, so that a
// process that stopped (SIGSTOP, a debugger, a VM pause) or lost the
// network while it held the chain lock stops every other writer for
// seconds, not until the kernel gives up on the connection.
const (
	// stalledTxTimeout is the writer session's
	// idle_in_transaction_session_timeout: the server ends a session
	// that sits in a transaction without sending its next statement for
	// this long, which rolls its transaction back and frees the chain
	// lock. A live writer sends its statements back to back.
	stalledTxTimeout = 3 * time.Second
	// writeStatementTimeout bounds each statement of the writer's
	// transactions (statement_timeout); generous, for rebuilds.
	writeStatementTimeout = 5 * time.Minute
	// keepAliveIdle, keepAliveInterval and keepAliveCount are the TCP
	// keepalives on both ends of every connection (the server's through
	// tcp_keepalives_*): a peer that stopped answering is found dead
	// after about idle + interval × count.
	keepAliveIdle     = 5 * time.Second
	keepAliveInterval = 2 * time.Second
	keepAliveCount    = 3
	// userTimeout is TCP_USER_TIMEOUT on both ends: unacknowledged data
	// fails the connection after this long.
	userTimeout = 10 * time.Second
)

// boundStalls sets the keepalives and the user timeout on both ends of
// cfg's connections (see keepAliveIdle).
func boundStalls(cfg *pgx.ConnConfig) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["tcp_keepalives_idle"] = strconv.Itoa(int(keepAliveIdle.Seconds()))
	cfg.RuntimeParams["tcp_keepalives_interval"] = strconv.Itoa(int(keepAliveInterval.Seconds()))
	cfg.RuntimeParams["tcp_keepalives_count"] = strconv.Itoa(keepAliveCount)
	cfg.RuntimeParams["tcp_user_timeout"] = strconv.FormatInt(userTimeout.Milliseconds(), 10)
	d := &net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount},
		Control:         setUserTimeout(userTimeout),
	}
	if cfg.ConnectTimeout > 0 {
		d.Timeout = cfg.ConnectTimeout
	}
	cfg.DialFunc = d.DialContext
}

// The application_name each of rath's connections reports to the server
// (pg_stat_activity, and the server's log through %a in
// log_line_prefix), so an operator, or a benchmark reading each backend's
// CPU, can tell what a connection is for.
const (
	AppWriter = "rath writer" // the store's writer: the appends' transactions
	AppReads  = "rath reads"  // the store's read pool
	AppTree   = "rath tree"   // the Merkle tree's builder
	AppListen = "rath listen" // LISTEN for other processes' commits
	AppKeys   = "rath keys"   // the keyring's pool (finds and makes subjects' keys)
)

// NameConnections sets on cfg the application_name app, unless the DSN
// (or PGAPPNAME) set one: the operator's name wins over rath's.
func NameConnections(cfg *pgx.ConnConfig, app string) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		cfg.RuntimeParams["application_name"] = app
	}
}

// BoundStalls sets on cfg the TCP keepalives and user timeout the event
// store's own connections use (both ends), for other pools on the same
// server: the fleet's job queue holds row locks too, and a stalled peer
// must be found dead as fast there.
func BoundStalls(cfg *pgx.ConnConfig) { boundStalls(cfg) }

// OpenPostgresReadPool opens a pool on the database dsn names with the
// stall bounds of the store's own connections, for
// Options.PostgresReadPool. Like sql.Open, it connects on first use.
func OpenPostgresReadPool(dsn string) (*sql.DB, error) {
	return openPool(dsn, AppReads)
}

// openPool opens a pool on dsn's database with the store's stall bounds,
// its connections named app.
func openPool(dsn, app string) (*sql.DB, error) {
	cfg, err := ParsePostgresDSN(dsn)
	if err != nil {
		return nil, err
	}
	boundStalls(cfg)
	NameConnections(cfg, app)
	return stdlib.OpenDB(*cfg), nil
}

// openKeys: a pool of keyConns connections with the stall bounds of the
// store's others. It writes too (a new key, in autocommit).
func (d *postgresDialect) openKeys(opts Options) (*sql.DB, error) {
	return openPool(opts.DSN, AppKeys)
}

// openPostgres opens the writer's and the readers' pools on the server
// the DSN names and checks it answers.
func openPostgres(ctx context.Context, opts Options, roundTrips *atomic.Int64) (wdb *sql.DB, rdb *sqlx.DB, err error) {
	cfg, err := ParsePostgresDSN(opts.DSN)
	if err != nil {
		return nil, nil, err
	}
	boundStalls(cfg)
	NameConnections(cfg, AppReads)
	wcfg, err := writerConfig(opts, AppWriter, roundTrips)
	if err != nil {
		return nil, nil, err
	}
	wdb = stdlib.OpenDB(*wcfg, stdlib.OptionAfterConnect(registerPresized))
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	if opts.PostgresReadPool != nil {
		rdb = sqlx.NewDb(opts.PostgresReadPool, "pgx")
	} else {
		rdb = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	}
	rdb.SetMaxOpenConns(opts.ReadConns)
	rdb.SetMaxIdleConns(opts.ReadConns)
	if err := wdb.PingContext(ctx); err != nil {
		wdb.Close()
		rdb.Close()
		return nil, nil, connectErr(cfg, err)
	}
	return wdb, rdb, nil
}

// writerConfig is the configuration of a connection that writes (the
// writer's, the tree builder's), named app, its round trips counted in
// roundTrips.
func writerConfig(opts Options, app string, roundTrips *atomic.Int64) (*pgx.ConnConfig, error) {
	cfg, err := ParsePostgresDSN(opts.DSN)
	if err != nil {
		return nil, err
	}
	boundStalls(cfg)
	NameConnections(cfg, app)
	wcfg := cfg.Copy()
	// The chain lock is a row lock: waiting for it longer than the busy
	// timeout fails the write with ErrBusy, as SQLite's busy_timeout does.
	wcfg.RuntimeParams["lock_timeout"] = strconv.FormatInt(max(opts.BusyTimeout.Milliseconds(), 1), 10)
	// A holder of the chain lock that stops sending is cut off.
	wcfg.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(stalledTxTimeout.Milliseconds(), 10)
	wcfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(writeStatementTimeout.Milliseconds(), 10)
	// The server replanned the writer's statements that take arrays at
	// every call (a custom plan for the arrays' length looked cheaper
	// than the generic one): planning the batch's insert cost as much as
	// running it. Its statements are written to need no custom plan (an
	// array's elements are probed one by one, never joined), so the
	// generic plan is made once per connection, and again when a table's
	// statistics change. A DSN that sets plan_cache_mode keeps its own.
	if _, set := wcfg.RuntimeParams["plan_cache_mode"]; !set {
		wcfg.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
	wcfg.DialFunc = countRoundTrips(wcfg.DialFunc, roundTrips)
	return wcfg, nil
}

func connectErr(cfg *pgx.ConnConfig, err error) error {
	return &ConnectError{Host: cfg.Host, Port: cfg.Port, Err: err}
}

// PostgreSQL error codes (https://www.postgresql.org/docs/current/errcodes-appendix.html).
const (
	pgUniqueViolation = "23505"
	pgDiskFull        = "53100"
	pgOutOfMemory     = "53200"
	pgLockNotAvail    = "55P03"
	pgSerialization   = "40001"
	pgDeadlock        = "40P01"
	pgQueryCanceled   = "57014"
)

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// pgTxFailed reports whether the writer connection's transaction is in
// PostgreSQL's failed state (a statement in it errored). COMMIT of such a
// transaction rolls back without an error through database/sql, so the
// writer asks before it commits.
func pgTxFailed(conn *sql.Conn) bool {
	failed := false
	conn.Raw(func(dc any) error {
		if c, ok := dc.(*stdlib.Conn); ok {
			failed = c.Conn().PgConn().TxStatus() == 'E'
		}
		return nil
	})
	return failed
}

// connectionLost reports whether err says the connection to PostgreSQL
// was lost (the server restarted or shut down, an administrator ended the
// session, the network failed) rather than that the statement was wrong:
// such a read can be retried on a new connection.
func connectionLost(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	code := pgCode(err)
	return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
}

// discardConn makes database/sql throw conn away on Close instead of
// pooling it: after a failure the writer cannot tell whether the server
// still holds its session.
func discardConn(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}
