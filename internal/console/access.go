package console

import (
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
	if err := access.Record(r.Context(), s.rt, id, v, s.opts.Now()); err != nil {
		writeError(w, http.StatusInternalServerError, "the read could not be recorded, so it is not served: %v", err)
		return false
	}
	return true
}

// AccessView is GET /api/runs/{id}/access: who read the run's content,
// oldest first (the run page's "Who read this run").
type AccessView struct {
	Records []access.AccessRecord `json:"records"`
}

func (s *Server) apiRunAccess(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), r.PathValue("id")
	if _, err := s.rt.Reader().Run(ctx, id); notFound(w, err) {
		return
	}
	rs, err := access.Records(ctx, s.rt, access.Filter{Run: id})
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
