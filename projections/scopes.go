package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"
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
)

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
// tenant. On SQLite a scope is NewScope's.
//
// Scopes is safe for concurrent use; Close closes the tenants' pools.
type Scopes struct {
	db *sqlx.DB

	mu    sync.Mutex // protects following
	pools map[string]*sqlx.DB
	used  []string // tenants by last use, least recent first
}

// NewScopes returns the scopes of db, the store's read pool.
func NewScopes(db *sqlx.DB) *Scopes { return &Scopes{db: db, pools: map[string]*sqlx.DB{}} }

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
		pool = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
		return nil
	})
	conn.Close()
	if err != nil {
		return nil, err
	}
	pool.SetMaxOpenConns(max(s.db.Stats().MaxOpenConnections, 1))
	pool.SetMaxIdleConns(tenantPoolIdle)
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
