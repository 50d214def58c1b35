package projections

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/gorath/rath/eventlog"
)

// Bounds of the tenants' pools Scopes keeps on PostgreSQL.
const (
	// maxTenantPools is how many tenants keep a pool; the one used least
	// recently is closed for a new one.
	maxTenantPools = 32
	// tenantPoolIdle is how many idle connections each keeps, and for
	// how long.
	tenantPoolIdle     = 2
	tenantPoolIdleTime = time.Minute
	// DefaultTenantConns is ScopesOptions.Conns's default: with the
	// store's read pool and writer, well under PostgreSQL's default
	// max_connections (100) for a few servers on one cluster.
	DefaultTenantConns = 16
	// TenantPoolApp is the application_name the tenants' connections log
	// in with, so that pg_stat_activity tells them apart; a DSN's
	// application_name (or PGAPPNAME) wins, as for every connection of
	// the store.
	TenantPoolApp = "rath tenant"
)

// ScopesOptions bound the tenants' pools of a Scopes.
type ScopesOptions struct {
	// Conns is how many connections the tenants' pools hold open
	// together, whatever the number of tenants. A query that needs one
	// more waits, as long as its context allows, for one to be closed;
	// while it waits the pools keep no idle connection. Zero means
	// DefaultTenantConns.
	Conns int
}

// Scopes hands out tenants' scopes of one read pool, for a server that
// opens one per request.
//
// On PostgreSQL each tenant reads through a pool of its own whose
// connections log in with rath.tenant set to it and the role
// rath_tenant (startup parameters, so RESET returns to them): migration
// 00018's row-level security binds every query sent on them, and a
// scoped read costs no round trip more than an unscoped one (a
// transaction per request would cost its BEGIN and COMMIT, half again
// the runs list's time on a loaded machine). A connection never changes
// tenant. All the pools share one budget of connections
// (ScopesOptions.Conns), so that many tenants cannot exhaust the
// cluster's max_connections. On SQLite a scope is NewScope's.
//
// Scopes is safe for concurrent use; Close closes the tenants' pools.
type Scopes struct {
	db    *sqlx.DB
	slots chan struct{} // one per open tenant connection

	mu      sync.Mutex // protects following
	pools   map[string]*sqlx.DB
	used    []string // tenants by last use, least recent first
	waiting int      // queries waiting for a slot
}

// NewScopes returns the scopes of db, the store's read pool.
func NewScopes(db *sqlx.DB, opts ScopesOptions) *Scopes {
	if opts.Conns <= 0 {
		opts.Conns = DefaultTenantConns
	}
	return &Scopes{db: db, pools: map[string]*sqlx.DB{}, slots: make(chan struct{}, opts.Conns)}
}

// Scope returns tenant's scope ("" for every tenant's), as NewScope
// does; on PostgreSQL a tenant's runs its queries on the tenant's pool.
func (s *Scopes) Scope(ctx context.Context, tenant string) (*Scope, error) {
	sc, err := NewScope(ctx, s.db, tenant)
	if err != nil || tenant == "" || !sc.pg {
		return sc, err
	}
	pool, err := s.pool(ctx, tenant)
	if err != nil {
		return nil, err
	}
	sc.pool = pool
	return sc, nil
}

// pool returns tenant's pool, opening it on first use.
func (s *Scopes) pool(ctx context.Context, tenant string) (*sqlx.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.used, tenant); i >= 0 {
		s.used = append(slices.Delete(s.used, i, i+1), tenant)
		return s.pools[tenant], nil
	}
	// The read pool's own settings (server, user, stall bounds), from
	// one of its connections: the pool may be one the program gave.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("projections: scope: %w", err)
	}
	var pool *sqlx.DB
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("projections: scope: the read pool's driver is %T, not pgx's", dc)
		}
		cfg := c.Conn().Config()
		cfg.RuntimeParams["rath.tenant"] = tenant
		cfg.RuntimeParams["role"] = "rath_tenant"
		// rath's name for the tenants' connections, unless the DSN (or
		// PGAPPNAME, or the program's pool) named the application: then
		// that name, as for the store's own connections.
		if app := cfg.RuntimeParams["application_name"]; app == "" || app == eventlog.AppReads {
			cfg.RuntimeParams["application_name"] = TenantPoolApp
		}
		// Every connection of every tenant's pool is dialed through
		// the budget, and gives its slot back when closed.
		dial := cfg.DialFunc
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if err := s.acquire(ctx); err != nil {
				return nil, err
			}
			c, err := dial(ctx, network, addr)
			if err != nil {
				s.release()
				return nil, err
			}
			return &budgeted{Conn: c, release: s.release}, nil
		}
		pool = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
		return nil
	})
	conn.Close()
	if err != nil {
		return nil, err
	}
	pool.SetMaxOpenConns(max(s.db.Stats().MaxOpenConnections, 1))
	pool.SetMaxIdleConns(s.idleLocked())
	pool.SetConnMaxIdleTime(tenantPoolIdleTime)
	if len(s.used) >= maxTenantPools {
		old := s.used[0]
		s.used = s.used[1:]
		s.pools[old].Close()
		delete(s.pools, old)
	}
	s.pools[tenant] = pool
	s.used = append(s.used, tenant)
	return pool, nil
}

// acquire takes a slot of the budget for a new connection, waiting for
// one while ctx allows. A waiter makes the pools drop their idle
// connections, and keep none until no one waits: an idle connection of
// one tenant's must not starve another's query.
func (s *Scopes) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
	s.wait(1)
	defer s.wait(-1)
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("projections: scope: all %d tenant connections in use: %w", cap(s.slots), ctx.Err())
	}
}

// Waiting is how many queries wait for a connection of the budget.
func (s *Scopes) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// release gives back a closed connection's slot.
func (s *Scopes) release() { <-s.slots }

// wait counts a waiter in (+1) or out (-1), and sets the pools' idle
// connections when the first comes or the last goes.
func (s *Scopes) wait(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting += d
	if s.waiting == 0 || (d > 0 && s.waiting == 1) {
		// Closing the idle connections releases their slots.
		for _, p := range s.pools {
			p.SetMaxIdleConns(s.idleLocked())
		}
	}
}

// idleLocked is how many idle connections a pool keeps now; s.mu is
// held.
func (s *Scopes) idleLocked() int {
	if s.waiting > 0 {
		return 0 // none
	}
	return tenantPoolIdle
}

// budgeted is a tenant's connection, whose Close gives its slot back
// once.
type budgeted struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *budgeted) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// Close closes the tenants' pools (not the read pool).
func (s *Scopes) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, p := range s.pools {
		errs = append(errs, p.Close())
	}
	s.pools, s.used = map[string]*sqlx.DB{}, nil
	return errors.Join(errs...)
}
