package console

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
)

// scopeKey carries a request's projections.Scope in its context.
type scopeKey struct{}

// serveScoped routes r with the read model as its identity's tenant sees
// it: every handler reads through that scope (s.reader, s.db), so one
// that forgets the tenant still finds nothing of another's. An identity
// of no tenant (the local single-user modes) sees every tenant's.
func (s *Server) serveScoped(w http.ResponseWriter, r *http.Request) {
	tenant := ""
	if id, ok := access.IdentityFrom(r.Context()); ok {
		tenant = id.Tenant
	}
	sc, err := s.scopes.Scope(r.Context(), tenant)
	if err != nil {
		writeError(w, http.StatusForbidden, "%v", err)
		return
	}
	defer sc.Close()
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, sc)))
}

// scopeOf is the request's scope; outside a request (a run the console
// started, going on in the background), every tenant's.
func (s *Server) scopeOf(ctx context.Context) *projections.Scope {
	if sc, ok := ctx.Value(scopeKey{}).(*projections.Scope); ok {
		return sc
	}
	sc, _ := projections.NewScope(ctx, s.rt.Store().DB(), "")
	return sc
}

// reader is the read model as the request's tenant sees it.
// It opens sealed content with the store's keys.
func (s *Server) reader(ctx context.Context) *projections.Reader {
	return s.scopeOf(ctx).Reader().WithOpener(s.rt.Store())
}

// db is the store's read pool as the request's tenant sees it.
func (s *Server) db(ctx context.Context) *projections.Scope { return s.scopeOf(ctx) }

// unscoped is ctx without the request's scope: for work that outlives
// the request (its transaction ends with it).
func unscoped(ctx context.Context) context.Context {
	return context.WithValue(ctx, scopeKey{}, nil)
}

// Gates: a route naming a run, session, approval, namespace or dataset
// answers 404 for one its tenant cannot see, before its handler reads
// anything of it (the log's events are not scoped: these are).

func (s *Server) gateRun(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, err := s.reader(r.Context()).Run(r.Context(), r.PathValue("id"))
		if errors.Is(err, projections.ErrNotFound) && s.db(r.Context()).Tenant() != "" {
			writeError(w, http.StatusNotFound, "no run %q", r.PathValue("id"))
			return
		}
		h(w, r)
	}
}

// sessionGate is gateSession for the route table.
func (s *Server) sessionGate(param string) func(http.HandlerFunc) http.HandlerFunc {
	return func(h http.HandlerFunc) http.HandlerFunc { return s.gateSession(param, h) }
}

func (s *Server) gateSession(param string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, id := range s.sessionsNamed(r, param) {
			_, err := s.reader(r.Context()).Session(r.Context(), id)
			if errors.Is(err, projections.ErrNotFound) {
				// A transcript or a comparison may name a run.
				_, err = s.reader(r.Context()).Run(r.Context(), id)
			}
			if errors.Is(err, projections.ErrNotFound) {
				writeError(w, http.StatusNotFound, "no session %q", id)
				return
			}
		}
		h(w, r)
	}
}

// sessionsNamed are the sessions a request names: the path's {id}, or
// the query's parameters.
func (s *Server) sessionsNamed(r *http.Request, param string) []string {
	if param == "" {
		return []string{r.PathValue("id")}
	}
	var out []string
	for _, p := range []string{"a", "b", param} {
		if v := r.URL.Query().Get(p); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func (s *Server) gateApproval(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.reader(r.Context()).Approval(r.Context(), r.PathValue("id")); errors.Is(err, projections.ErrNoApproval) && s.db(r.Context()).Tenant() != "" {
			writeError(w, http.StatusNotFound, "no approval request %q", r.PathValue("id"))
			return
		}
		h(w, r)
	}
}

// gateNamespace answers 404 for a memory namespace (?ns=) of another
// tenant's.
func (s *Server) gateNamespace(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ns := r.URL.Query().Get("ns"); ns != "" && !s.namespaceVisible(r.Context(), ns) {
			writeError(w, http.StatusNotFound, "no memory namespace %q", ns)
			return
		}
		h(w, r)
	}
}

// namespaceVisible reports whether the request's tenant sees ns: one of
// its namespaces, or (for the default tenant) one no run wrote yet.
func (s *Server) namespaceVisible(ctx context.Context, ns string) bool {
	sc := s.db(ctx)
	if sc.Tenant() == "" {
		return true
	}
	var tenant []string
	if err := sc.SelectContext(ctx, &tenant, sc.Rebind(`SELECT tenant FROM memory_namespaces WHERE namespace = ?`), ns); err != nil {
		return false
	}
	if len(tenant) == 0 {
		// Not the scope's: either another tenant's or nobody's. Nobody's
		// is the default tenant's.
		all, _ := projections.NewScope(ctx, s.rt.Store().DB(), "")
		var any []string
		if err := all.SelectContext(ctx, &any, sc.Rebind(`SELECT tenant FROM memory_namespaces WHERE namespace = ?`), ns); err != nil || len(any) > 0 {
			return false
		}
		return sc.Tenant() == events.DefaultTenant
	}
	return true
}

func (s *Server) gateDataset(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if name == "" {
			name = r.URL.Query().Get("dataset")
		}
		sc := s.db(r.Context())
		if name != "" && sc.Tenant() != "" {
			var n int
			if err := sc.GetContext(r.Context(), &n, sc.Rebind(`SELECT COUNT(*) FROM datasets WHERE name = ?`), name); err != nil || n == 0 {
				writeError(w, http.StatusNotFound, "no dataset %q", name)
				return
			}
		}
		h(w, r)
	}
}

// gateGraph answers 404 for a graph of a run (?run=) of another tenant's.
func (s *Server) gateGraph(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if run := r.URL.Query().Get("run"); run != "" && s.db(r.Context()).Tenant() != "" {
			if _, err := s.reader(r.Context()).Run(r.Context(), run); errors.Is(err, projections.ErrNotFound) {
				writeError(w, http.StatusNotFound, "no run %q", run)
				return
			}
		}
		h(w, r)
	}
}
