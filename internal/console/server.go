package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/access"
	"github.com/gorath/rath/flow"
)

//go:embed static
var staticFS embed.FS

// CSRFHeader is the header a write must carry, holding the value the
// served page embeds (meta name="rath-csrf").
const CSRFHeader = "X-Rath-CSRF"

// TokenCookie is the cookie visiting /?token=TOKEN sets.
const TokenCookie = "rath_token"

// Options configure the console.
type Options struct {
	// Runtime is the open store. Required.
	Runtime *rath.Runtime
	// Token, if set, is required on every request (Bearer or cookie).
	Token string
	// Workflow rebuilds the workflow a recorded run ran: in
	// rath.ReplayMode for a replay, in rath.LiveMode for a resume or a
	// fork, which go on live. Nil (what rath serve uses) means
	// rath.Runtime.RecordedWorkflow: registered workflows, the built-in
	// agent, registered builders, and runs whose record describes them.
	Workflow func(ctx context.Context, rt *rath.Runtime, runID string, mode rath.Mode) (flow.Workflow, error)
	// Now is the clock for running runs' durations. Nil means time.Now.
	Now func() time.Time
	// Submit, if set, serves POST /api/runs (submit.go); nil answers
	// 501.
	Submit SubmitFunc
	// Prices, by model name, give the runs list its cost column (the
	// config file's "prices"); nil shows none.
	Prices map[string]flow.ModelPrice
	// AllowLive lets console users run recorded work again for real: a
	// replay with live tools, a fork (which goes on live after its seq)
	// and a resume (which goes on live where the record ends). Those run the run's tools in this process's sandboxes, so they
	// are the operator's decision; false refuses them with 403 and the
	// page does not offer them. The runtime's sandbox registry is what
	// confines them (rath serve --allow-live gives it only --backends).
	AllowLive bool
	// LiveCopies is the directory a live-tools replay copies workspaces
	// into (replay.WithCopiesIn): under the workspace root of the
	// runtime's local and bwrap backends, if they have one. Empty means
	// the system's temporary directory.
	LiveCopies string
	// OIDC, if set, signs users in with OpenID Connect (oidc.go): every
	// request then needs a signed-in session, on loopback too, and the
	// page shows who is signed in.
	OIDC *OIDC
}

// Server is the console's handler.
type Server struct {
	opts  Options
	rt    *rath.Runtime
	csrf  string
	mux   *http.ServeMux
	index *template.Template
	// heavy serializes replays, verifications and dossiers: each reads a
	// whole run or the whole log.
	heavy sync.Mutex
	// done ends the live tails (Close), so a graceful shutdown is not held
	// open by Server-Sent Events.
	done     chan struct{}
	doneOnce sync.Once
	// bg is the runs the console started (forks, resumes).
	bg sync.WaitGroup
	// replays keeps each run's last replay verdict from this console, so
	// the run page and the dossier show it.
	replays struct {
		sync.Mutex
		m map[string]*ReplayView
	}
	// fleetClock is set when Options.Now was not given: approval
	// deadlines are then judged on the fleet's clock (fleet.Now), the one
	// they were set by and a decision is judged by.
	fleetClock bool
}

// New returns the console over opts.Runtime.
func New(opts Options) (*Server, error) {
	if opts.Runtime == nil {
		return nil, errors.New("console: a runtime is required")
	}
	fleetClock := opts.Now == nil
	if fleetClock {
		opts.Now = time.Now
	}
	if opts.Workflow == nil {
		opts.Workflow = func(ctx context.Context, rt *rath.Runtime, runID string, mode rath.Mode) (flow.Workflow, error) {
			return rt.RecordedWorkflow(ctx, runID, mode)
		}
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("console: csrf value: %w", err)
	}
	page, err := fs.ReadFile(staticFS, "static/index.html")
	if err != nil {
		return nil, err
	}
	index, err := template.New("index").Parse(string(page))
	if err != nil {
		return nil, fmt.Errorf("console: index template: %w", err)
	}
	s := &Server{opts: opts, rt: opts.Runtime, csrf: hex.EncodeToString(b), mux: http.NewServeMux(), index: index, done: make(chan struct{}),
		fleetClock: fleetClock}
	s.replays.m = map[string]*ReplayView{}
	s.routes()
	return s, nil
}

// liveAllowed reports whether the console offers what calls the model
// and runs tools live (a fork at an event).
func (s *Server) liveAllowed() bool { return s.opts.AllowLive }

// lastReplay is the run's last replay verdict from this console, or nil.
func (s *Server) lastReplay(run string) *ReplayView {
	s.replays.Lock()
	defer s.replays.Unlock()
	return s.replays.m[run]
}

// Close ends the live tails in progress and cancels the runs the console
// started (forks, resumes), waiting for them to stop; call it before
// http.Server.Shutdown.
func (s *Server) Close() {
	s.doneOnce.Do(func() { close(s.done) })
	s.bg.Wait()
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /api/runs", s.apiRuns)
	m.HandleFunc("POST /api/runs", s.apiSubmit) // a write: CSRF applies
	m.HandleFunc("GET /api/runs/{id}", s.apiRun)
	m.HandleFunc("GET /api/runs/{id}/events", s.apiRunEvents)
	m.HandleFunc("GET /api/runs/{id}/stream", s.apiRunStream)
	m.HandleFunc("GET /api/runs/{id}/dossier", s.apiRunDossier)
	m.HandleFunc("GET /api/runs/{id}/tools", s.apiRunTools)
	m.HandleFunc("GET /api/runs/{id}/trace", s.apiRunTrace)
	m.HandleFunc("GET /api/runs/{id}/calls/{seq}", s.apiRunCall)
	m.HandleFunc("POST /api/runs/{id}/replay", s.apiRunReplay)
	m.HandleFunc("POST /api/runs/{id}/fork", s.apiRunFork)
	m.HandleFunc("POST /api/runs/{id}/cancel", s.apiRunCancel)
	m.HandleFunc("POST /api/runs/{id}/resume", s.apiRunResume)
	m.HandleFunc("POST /api/verify", s.apiVerify)
	m.HandleFunc("GET /api/sessions/{id}", s.apiSession)
	m.HandleFunc("GET /api/graph", s.apiGraph)
	m.HandleFunc("GET /api/graph/labels", s.apiGraphLabels)
	m.HandleFunc("GET /api/compare", s.apiCompare)
	m.HandleFunc("GET /api/workers", s.apiWorkers)
	m.HandleFunc("GET /api/memory/search", s.apiMemorySearch)
	m.HandleFunc("GET /api/memory/namespaces", s.apiMemoryNamespaces)
	m.HandleFunc("GET /api/memory/list", s.apiMemoryList)
	m.HandleFunc("POST /api/memory/forget", s.apiMemoryForget)
	m.HandleFunc("GET /api/approvals", s.apiApprovals)
	m.HandleFunc("POST /api/approvals/{id}", s.apiDecide) // a write: CSRF applies
	m.HandleFunc("GET /api/evals/datasets", s.apiEvalDatasets)
	m.HandleFunc("GET /api/evals/datasets/{name}", s.apiEvalDataset)
	m.HandleFunc("GET /api/evals/experiments/{name}", s.apiEvalExperiment)
	m.HandleFunc("GET /api/evals/compare", s.apiEvalCompare)
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
	})
	m.HandleFunc("GET /{$}", s.page)
	m.HandleFunc("GET /app.js", s.asset("app.js", "text/javascript; charset=utf-8"))
	m.HandleFunc("GET /evals.js", s.asset("evals.js", "text/javascript; charset=utf-8"))
	m.HandleFunc("GET /app.css", s.asset("app.css", "text/css; charset=utf-8"))
}

// contentSecurityPolicy allows the console's own script, style and API,
// nothing inline, nothing from elsewhere, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// ServeHTTP applies the security headers, the host and token checks and,
// for writes, the CSRF checks, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if o := s.opts.OIDC; o != nil {
		if o.serveAuth(w, r, s.csrf) {
			return
		}
		id, ok := o.identity(r)
		if !ok {
			o.challenge(w, r)
			return
		}
		r = r.WithContext(access.WithIdentity(r.Context(), id))
	} else if s.opts.Token == "" && !loopbackHost(r.Host) {
		// Without a token only a loopback name reaches the console: a
		// page that rebinds its own name to 127.0.0.1 is refused.
		writeError(w, http.StatusForbidden, "host %q is not a loopback name; serve with --token to allow other hosts", r.Host)
		return
	}
	if s.opts.Token != "" && s.opts.OIDC == nil {
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && r.URL.Path == "/" {
			if !s.tokenOK(t) {
				writeError(w, http.StatusUnauthorized, "wrong token")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: t, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			// Out of the address bar and the history.
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rath"`)
			writeError(w, http.StatusUnauthorized, "a token is required: Authorization: Bearer TOKEN, or visit /?token=TOKEN")
			return
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := s.csrfCheck(r); err != nil {
			writeError(w, http.StatusForbidden, "%v", err)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.opts.Token)) == 1
}

func (s *Server) authorized(r *http.Request) bool {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, t, ok := strings.Cut(auth, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && s.tokenOK(strings.TrimSpace(t)) {
			return true
		}
	}
	if c, err := r.Cookie(TokenCookie); err == nil && s.tokenOK(c.Value) {
		return true
	}
	return false
}

// csrfCheck refuses a write that did not come from the console's page:
// the page's secret header value must be there, and the browser's Origin
// and Sec-Fetch-Site, when sent, must name this site.
func (s *Server) csrfCheck(r *http.Request) error {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(s.csrf)) != 1 {
		return fmt.Errorf("a write needs the %s header of the console's page", CSRFHeader)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return fmt.Errorf("a write from another site (Sec-Fetch-Site: %s) is refused", site)
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		scheme := "http://"
		if r.TLS != nil {
			scheme = "https://"
		}
		if origin != scheme+r.Host {
			return fmt.Errorf("a write from origin %q is refused", origin)
		}
	}
	return nil
}

// loopbackHost reports whether a Host header names this machine's
// loopback: localhost or a loopback IP, with any port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackAddr reports whether a listen address binds only loopback.
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	return loopbackHost(host)
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	live := "off"
	if s.opts.AllowLive {
		live = "on"
	}
	who := ""
	if id, ok := access.IdentityFrom(r.Context()); ok && id.Via == ViaOIDC {
		who = id.Subject + " · " + id.Tenant + " · " + string(id.Role)
	}
	if err := s.index.Execute(w, struct{ CSRF, Live, Who string }{s.csrf, live, who}); err != nil {
		http.Error(w, "page: "+err.Error(), http.StatusInternalServerError)
	}
}

func (s *Server) asset(name, ctype string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(staticFS, "static/"+name)
		if err != nil {
			writeError(w, http.StatusNotFound, "no asset %s", name)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Write(b)
	}
}

// writeJSON writes v; the encoder escapes <, > and & so no JSON answer
// can be read as markup.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

type apiError struct {
	Error string `json:"error"`
}

// refuseLive answers a live action on a console not allowed to run one.
func (s *Server) refuseLive(w http.ResponseWriter, what string) bool {
	if s.opts.AllowLive {
		return false
	}
	writeError(w, http.StatusForbidden, "%s: this console does not run recorded work again for real: its operator did not start rath serve with --allow-live", what)
	return true
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, apiError{Error: fmt.Sprintf(format, args...)})
}
