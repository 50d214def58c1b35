package console

import (
	"context"
	"net/http"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/events"
)

// viewed appends the access.viewed of one read of run content by the
// request's identity, through its route. A read that cannot be recorded
// is not served: it answers 500 and viewed reports false.
func (s *Server) viewed(w http.ResponseWriter, r *http.Request, v access.Viewed) bool {
	id, _ := access.IdentityFrom(r.Context())
	v.Route = r.Pattern
	if id.Tenant == "" {
		v.Tenant = s.tenantOf(r.Context(), v)
	}
	if err := access.Record(r.Context(), s.rt, id, v, s.opts.Now()); err != nil {
		writeError(w, http.StatusInternalServerError, "the read could not be recorded, so it is not served: %v", err)
		return false
	}
	return true
}

// tenantOf is the tenant whose content v reads: its run's, else its
// namespace's, else the default tenant's.
func (s *Server) tenantOf(ctx context.Context, v access.Viewed) string {
	sc := s.scopeOf(unscoped(ctx))
	var tenant []string
	switch {
	case v.Run != "":
		_ = sc.SelectContext(ctx, &tenant, sc.Rebind(`SELECT tenant FROM runs WHERE id = ?`), v.Run)
	case v.Session != "":
		_ = sc.SelectContext(ctx, &tenant, sc.Rebind(`SELECT tenant FROM sessions WHERE id = ?`), v.Session)
	case v.Namespace != "":
		_ = sc.SelectContext(ctx, &tenant, sc.Rebind(`SELECT tenant FROM memory_namespaces WHERE namespace = ?`), v.Namespace)
	}
	if len(tenant) == 0 {
		return events.DefaultTenant
	}
	return tenant[0]
}

// AccessView is GET /api/runs/{id}/access: who read the run's content,
// oldest first (the run page's "Who read this run"). It is an admin's:
// the run's tenant's, or the local modes' operator.
type AccessView struct {
	Records []access.AccessRecord `json:"records"`
}

func (s *Server) apiRunAccess(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	if _, err := s.rt.Reader().Run(ctx, id); notFound(w, err) {
		return
	}
	// Through the request's scope: a tenant's records are all it holds.
	rs, err := access.Records(ctx, s.db(ctx), access.Filter{Run: id})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if rs == nil {
		rs = []access.AccessRecord{}
	}
	writeJSON(w, http.StatusOK, AccessView{Records: rs})
}

// viewedTranscript records the read of a session's transcript: the run
// that wrote it (or last read or wrote it), the session, the seqs of its
// first and last event.
func (s *Server) viewedTranscript(w http.ResponseWriter, r *http.Request, v ShowView) bool {
	return s.viewed(w, r, access.Viewed{Run: s.runOfSession(r.Context(), v.Session.ID), Session: v.Session.ID,
		FromSeq: v.Session.CreatedSeq, ToSeq: v.Session.UpdatedSeq, What: events.ViewedTranscript})
}
