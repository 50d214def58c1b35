package console

import (
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
	"github.com/gorath/rath/projections"
)

//go:embed static
var staticFS embed.FS

// CSRFHeader is the header a write must carry, holding the value the
// served page embeds (meta name="rath-csrf").
const CSRFHeader = "X-Rath-CSRF"

// TokenCookie is the cookie visiting /?token=TOKEN sets.
const TokenCookie = "rath_token"

// The console's ways of establishing who makes a request (Options.Auth).
const (
	// AuthLocal is one person on one machine: with Options.Token the
	// single token, else a loopback name; either is the OS user, an
	// admin of every tenant.
	AuthLocal = ""
	// AuthTokens requires an identity on every request, on loopback too:
	// an API token (rath tokens create) as "Authorization: Bearer TOKEN"
	// (or the cookie /?token=TOKEN sets), or what a sign-in resolver
	// added to the list establishes.
	AuthTokens = "tokens"
)

// Options configure the console.
type Options struct {
	// Runtime is the open store. Required.
	Runtime *rath.Runtime
	// Auth is how requests are identified: AuthLocal (the zero value) or
	// AuthTokens.
	Auth string
	// Token, if set, is required on every request (Bearer or cookie); it
	// goes with AuthLocal only.
	Token string
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
	// TenantConns is how many connections the tenants' read pools hold
	// open together on PostgreSQL (projections.ScopesOptions.Conns); a
	// request waits for one when all are in use. Zero means
	// projections.DefaultTenantConns.
	TenantConns int
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
	// resolvers establish who makes a request, tried in order (identify).
	resolvers []resolver
	// scopes are the tenants' read pools (serveScoped).
	scopes *projections.Scopes
}

// New returns the console over opts.Runtime.
func New(opts Options) (*Server, error) {
	if opts.Runtime == nil {
		return nil, errors.New("console: a runtime is required")
	}
	if opts.OIDC != nil {
		// Signing in implies identities on every request; the single
		// token is not one.
		opts.Auth, opts.Token = AuthTokens, ""
	}
	switch {
	case opts.Auth != AuthLocal && opts.Auth != AuthTokens:
		return nil, fmt.Errorf("console: auth %q is not %q or %q", opts.Auth, AuthLocal, AuthTokens)
	case opts.Auth == AuthTokens && opts.Token != "":
		return nil, errors.New("console: a single token goes with local auth, not with API tokens")
	}
	fleetClock := opts.Now == nil
	if fleetClock {
		opts.Now = time.Now
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
		fleetClock: fleetClock, scopes: projections.NewScopes(opts.Runtime.Store().DB(), projections.ScopesOptions{Conns: opts.TenantConns})}
	s.replays.m = map[string]*ReplayView{}
	switch {
	case opts.OIDC != nil:
		s.resolvers = []resolver{s.apiToken, s.oidcSession}
	case opts.Auth == AuthTokens:
		s.resolvers = []resolver{s.apiToken}
	case opts.Token != "":
		s.resolvers = []resolver{s.singleToken}
	default:
		s.resolvers = []resolver{s.loopback}
	}
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
	s.scopes.Close()
}

// route is one route of the console and the action it needs.
type route struct {
	pattern string
	action  access.Action
	// gate, if set, answers 404 for what the request's tenant does not
	// see, before the role is checked: another tenant's run is not
	// found, whatever the role.
	gate    func(http.HandlerFunc) http.HandlerFunc
	handler http.HandlerFunc
}

// routeTable is every route with the action it needs: a role that lacks
// it is answered 403 (needs). A new route is added here and nowhere else.
func (s *Server) routeTable() []route {
	read, decide, operate, admin := access.Read, access.Decide, access.Operate, access.Administer
	return []route{
		{"GET /api/runs", read, nil, s.apiRuns},
		{"POST /api/runs", operate, nil, s.apiSubmit}, // a write: CSRF applies
		{"GET /api/runs/{id}", read, s.gateRun, s.apiRun},
		{"GET /api/runs/{id}/events", read, s.gateRun, s.apiRunEvents},
		{"GET /api/runs/{id}/stream", read, s.gateRun, s.apiRunStream},
		{"GET /api/runs/{id}/dossier", read, s.gateRun, s.apiRunDossier},
		{"GET /api/runs/{id}/tools", read, s.gateRun, s.apiRunTools},
		{"GET /api/runs/{id}/trace", read, s.gateRun, s.apiRunTrace},
		{"GET /api/runs/{id}/calls/{seq}", read, s.gateRun, s.apiRunCall},
		{"GET /api/runs/{id}/access", admin, s.gateRun, s.apiRunAccess},
		{"POST /api/runs/{id}/replay", operate, s.gateRun, s.apiRunReplay},
		{"POST /api/runs/{id}/fork", operate, s.gateRun, s.apiRunFork},
		{"POST /api/runs/{id}/cancel", operate, s.gateRun, s.apiRunCancel},
		{"POST /api/runs/{id}/resume", operate, s.gateRun, s.apiRunResume},
		{"POST /api/verify", operate, nil, s.apiVerify},
		{"GET /api/sessions/{id}", read, s.sessionGate(""), s.apiSession},
		{"GET /api/graph", read, s.gateGraph, s.apiGraph},
		{"GET /api/graph/labels", read, s.gateGraph, s.apiGraphLabels},
		{"GET /api/compare", read, s.sessionGate("session"), s.apiCompare},
		{"GET /api/workers", read, nil, s.apiWorkers},
		{"GET /api/memory/search", read, s.gateNamespace, s.apiMemorySearch},
		{"GET /api/memory/namespaces", read, nil, s.apiMemoryNamespaces},
		{"GET /api/memory/list", read, s.gateNamespace, s.apiMemoryList},
		{"POST /api/memory/forget", admin, s.gateNamespace, s.apiMemoryForget},
		{"GET /api/approvals", read, nil, s.apiApprovals},
		{"POST /api/approvals/{id}", decide, s.gateApproval, s.apiDecide}, // a write: CSRF applies
		{"GET /api/evals/datasets", read, nil, s.apiEvalDatasets},
		{"GET /api/evals/datasets/{name}", read, s.gateDataset, s.apiEvalDataset},
		{"GET /api/evals/experiments/{name}", read, nil, s.apiEvalExperiment},
		{"GET /api/evals/compare", read, nil, s.apiEvalCompare},
		{"/api/", read, nil, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
		}},
		{"GET /{$}", read, nil, s.page},
		{"GET /app.js", read, nil, s.asset("app.js", "text/javascript; charset=utf-8")},
		{"GET /evals.js", read, nil, s.asset("evals.js", "text/javascript; charset=utf-8")},
		{"GET /app.css", read, nil, s.asset("app.css", "text/css; charset=utf-8")},
	}
}

func (s *Server) routes() {
	for _, rt := range s.routeTable() {
		h := needs(rt.action, rt.handler).ServeHTTP
		if rt.gate != nil {
			h = rt.gate(h)
		}
		s.mux.HandleFunc(rt.pattern, h)
	}
}

// needs refuses, 403, a request whose identity's role does not allow a.
func needs(a access.Action, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := access.IdentityFrom(r.Context())
		if !id.Allows(a) {
			writeError(w, http.StatusForbidden, "%s: %s is %s in tenant %q, which may not %s: that takes %s",
				r.Pattern, id.Subject, orNone(string(id.Role)), id.Tenant, a, rolesAllowing(a))
			return
		}
		h(w, r)
	})
}

// rolesAllowing names the roles that allow a ("approver or admin").
func rolesAllowing(a access.Action) string {
	var names []string
	for _, r := range access.Roles {
		if r.Allows(a) {
			names = append(names, string(r))
		}
	}
	if len(names) > 1 {
		return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	}
	return strings.Join(names, "")
}

func orNone(s string) string {
	if s == "" {
		return "no role"
	}
	return s
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
	if o := s.opts.OIDC; o != nil && o.serveAuth(w, r, s.csrf) {
		return
	}
	if s.opts.Auth == AuthLocal && s.opts.Token == "" && !loopbackHost(r.Host) {
		// Without a token only a loopback name reaches the console: a
		// page that rebinds its own name to 127.0.0.1 is refused.
		writeError(w, http.StatusForbidden, "host %q is not a loopback name; serve with --token to allow other hosts", r.Host)
		return
	}
	if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && r.URL.Path == "/" && (s.opts.Token != "" || s.opts.Auth == AuthTokens) {
		s.signIn(w, r, t)
		return
	}
	c, err := s.credential(r)
	if err != nil {
		if o := s.opts.OIDC; o != nil && errors.Is(err, access.ErrNoIdentity) {
			o.challenge(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="rath"`)
		switch {
		case !errors.Is(err, access.ErrNoIdentity):
			writeError(w, http.StatusUnauthorized, "%v", err)
		case s.opts.Auth == AuthTokens:
			writeError(w, http.StatusUnauthorized, "an identity is required: Authorization: Bearer TOKEN (rath tokens create), or visit /?token=TOKEN")
		default:
			writeError(w, http.StatusUnauthorized, "a token is required: Authorization: Bearer TOKEN, or visit /?token=TOKEN")
		}
		return
	}
	// A write carried by a cookie must come from the console's page; a
	// header credential is one no browser adds to another site's request.
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !c.header {
		if err := s.csrfCheck(r); err != nil {
			writeError(w, http.StatusForbidden, "%v", err)
			return
		}
	}
	s.serveScoped(w, r.WithContext(access.WithIdentity(r.Context(), c.id)))
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.opts.Token)) == 1
}

// credential is what a resolver found: the identity, and whether it came
// in a request header (a bearer token) rather than a cookie.
type credential struct {
	id     access.Identity
	header bool
}

// resolver finds one kind of credential in a request: errNoCredential
// when the request carries none of its kind, another error when it
// carries one that is refused (an expired token), which is 401.
type resolver func(r *http.Request) (credential, error)

// errNoCredential is a resolver's "not mine": the next one is asked.
var errNoCredential = errors.New("console: no credential of this kind")

// credential is who makes r and how: the first resolver that finds its
// kind of credential decides; none is access.ErrNoIdentity.
func (s *Server) credential(r *http.Request) (credential, error) {
	// A program that embeds the console behind its own sign-in says who
	// the request is with access.WithIdentity; no client can set a
	// context value, so only such a wrapper reaches this. Its writes keep
	// the CSRF check.
	if id, ok := access.IdentityFrom(r.Context()); ok {
		return credential{id: id}, nil
	}
	for _, res := range s.resolvers {
		c, err := res(r)
		if errors.Is(err, errNoCredential) {
			continue
		}
		return c, err
	}
	return credential{}, access.ErrNoIdentity
}

// bearer is the token of an "Authorization: Bearer" header, or "".
func bearer(r *http.Request) string {
	scheme, t, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(t)
}

// loopback is the OS user on a loopback name (checked in ServeHTTP).
func (s *Server) loopback(r *http.Request) (credential, error) {
	return credential{id: access.Local(access.ViaLoopback)}, nil
}

// singleToken is the OS user, for whoever holds the one token of rath
// serve --token. Its writes keep their CSRF check, header or cookie.
func (s *Server) singleToken(r *http.Request) (credential, error) {
	if t := bearer(r); t != "" && s.tokenOK(t) {
		return credential{id: access.Local(access.ViaSingleToken)}, nil
	}
	if c, err := r.Cookie(TokenCookie); err == nil && s.tokenOK(c.Value) {
		return credential{id: access.Local(access.ViaSingleToken)}, nil
	}
	return credential{}, errNoCredential
}

// apiToken is the identity of an API token (rath tokens create), sent
// as a bearer token or in the cookie /?token=TOKEN set.
func (s *Server) apiToken(r *http.Request) (credential, error) {
	plain, header := bearer(r), true
	if plain == "" {
		c, err := r.Cookie(TokenCookie)
		if err != nil || c.Value == "" {
			return credential{}, errNoCredential
		}
		plain, header = c.Value, false
	}
	id, err := access.LookupTokenAt(r.Context(), s.rt, plain, s.opts.Now())
	if err != nil {
		return credential{}, err
	}
	return credential{id: id, header: header}, nil
}

// oidcSession is the identity of a signed-in OpenID Connect session
// (oidc.go), carried by its cookie.
func (s *Server) oidcSession(r *http.Request) (credential, error) {
	id, ok := s.opts.OIDC.identity(r)
	if !ok {
		return credential{}, errNoCredential
	}
	return credential{id: id}, nil
}

// signIn checks a token given as /?token=TOKEN and keeps it in a cookie,
// out of the address bar and the history.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request, t string) {
	if s.opts.Auth == AuthTokens {
		if _, err := access.LookupTokenAt(r.Context(), s.rt, t, s.opts.Now()); err != nil {
			writeError(w, http.StatusUnauthorized, "%v", err)
			return
		}
	} else if !s.tokenOK(t) {
		writeError(w, http.StatusUnauthorized, "wrong token")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: t, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/", http.StatusSeeOther)
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
	who, admin := "", "off"
	id, _ := access.IdentityFrom(r.Context())
	if id.Via == ViaOIDC {
		who = id.Subject + " · " + id.Tenant + " · " + string(id.Role)
	}
	if id.Allows(access.Administer) {
		// The run page then shows who read the run.
		admin = "on"
	}
	if err := s.index.Execute(w, struct{ CSRF, Live, Who, Admin string }{s.csrf, live, who, admin}); err != nil {
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
