package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/gorath/rath/access"
)

// Sign-in with OpenID Connect: the authorization code flow with PKCE
// (S256), a nonce and a state bound to the browser by a cookie; on
// success a server-side session whose cookie holds only a random id.

const (
	// SessionCookie holds a signed-in user's session id.
	SessionCookie = "rath_session"
	// stateCookie binds a sign-in in progress to the browser that began
	// it, so a callback carrying another browser's state is refused.
	stateCookie = "rath_oidc_state"
	// ViaOIDC is the Via of an identity signed in with OpenID Connect.
	ViaOIDC = "oidc"
	// SignInHeader, on a 401 from the API, names the page that signs the
	// user in again; the console's script goes there.
	SignInHeader = "X-Rath-Sign-In"

	// DefaultOIDCClaim is the ID token claim whose values grant roles.
	DefaultOIDCClaim = "groups"
	// DefaultMaxSession bounds a session even when the ID token lives
	// longer.
	DefaultMaxSession = 12 * time.Hour
	// signInWindow is how long a sign-in may take at the provider.
	signInWindow = 10 * time.Minute
	// maxPending bounds the sign-ins in progress held in memory: anyone
	// can start one.
	maxPending = 10000
	// exchangeTimeout bounds the code exchange with the provider.
	exchangeTimeout = 30 * time.Second
)

// DefaultOIDCScopes are the scopes asked for when OIDCConfig.Scopes is
// empty: the ID token, the e-mail and profile, and the groups.
var DefaultOIDCScopes = []string{oidc.ScopeOpenID, "email", "profile", "groups"}

// OIDCConfig configures sign-in with an OpenID Connect provider.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL; discovery reads
	// ISSUER/.well-known/openid-configuration. Required.
	Issuer string
	// ClientID is this console's client id at the provider. Required.
	ClientID string
	// ClientSecret is the client's secret; empty for a public client,
	// which PKCE alone protects. rath serve reads it from the
	// environment variable --oidc-client-secret-env names.
	ClientSecret string
	// Claim is the ID token claim whose values TENANT:ROLE grant roles.
	// Empty means DefaultOIDCClaim.
	Claim string
	// Scopes are asked for at sign-in. Empty means DefaultOIDCScopes.
	Scopes []string
	// RedirectURL is the callback the provider sends users back to
	// (https://HOST/auth/callback), registered at the provider. Empty
	// means the request's own scheme and Host, which is right unless a
	// proxy in front terminates TLS or renames the host.
	RedirectURL string
	// MaxSession bounds a session; it also ends when its ID token
	// expires. Zero means DefaultMaxSession.
	MaxSession time.Duration
	// HTTPClient talks to the provider. Nil means http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock sessions and ID tokens are judged by. Nil means
	// time.Now.
	Now func() time.Time
}

// OIDC signs users in with an OpenID Connect provider. Make one with
// NewOIDC and hand it to the console in Options.OIDC. It is safe for
// concurrent use; its sessions live in memory, so a restart signs every
// user out.
type OIDC struct {
	cfg      OIDCConfig
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	store    *signInStore
}

// NewOIDC discovers the provider at cfg.Issuer and checks that it can
// do what the console needs (PKCE with S256 when it lists its methods).
func NewOIDC(ctx context.Context, cfg OIDCConfig) (*OIDC, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" {
		return nil, errors.New("oidc: an issuer and a client id are required")
	}
	if cfg.Claim == "" {
		cfg.Claim = DefaultOIDCClaim
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = DefaultOIDCScopes
	}
	if !slices.Contains(cfg.Scopes, oidc.ScopeOpenID) {
		cfg.Scopes = append([]string{oidc.ScopeOpenID}, cfg.Scopes...)
	}
	if cfg.MaxSession <= 0 {
		cfg.MaxSession = DefaultMaxSession
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.RedirectURL != "" {
		u, err := url.Parse(cfg.RedirectURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("oidc: redirect URL %q is not an absolute http(s) URL", cfg.RedirectURL)
		}
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, cfg.HTTPClient), cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("oidc: discover %s: %w", cfg.Issuer, err)
	}
	var meta struct {
		Methods []string `json:"code_challenge_methods_supported"`
	}
	if err := p.Claims(&meta); err != nil {
		return nil, fmt.Errorf("oidc: discovery document: %w", err)
	}
	if len(meta.Methods) > 0 && !slices.Contains(meta.Methods, "S256") {
		return nil, fmt.Errorf("oidc: %s does not offer PKCE with S256 (it lists %s)", cfg.Issuer, strings.Join(meta.Methods, ", "))
	}
	v := p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now})
	return &OIDC{cfg: cfg, provider: p, verifier: v, store: newSignInStore()}, nil
}

// Issuer is the provider's issuer URL, recorded with each identity.
func (o *OIDC) Issuer() string { return o.cfg.Issuer }

func (o *OIDC) oauth2Config(redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret,
		Endpoint: o.provider.Endpoint(), RedirectURL: redirect, Scopes: o.cfg.Scopes}
}

// redirectURL is where the provider sends the user back.
func (o *OIDC) redirectURL(r *http.Request) string {
	if o.cfg.RedirectURL != "" {
		return o.cfg.RedirectURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/auth/callback"
}

// secure reports whether cookies must be Secure: under TLS, or behind a
// proxy whose public callback is https.
func (o *OIDC) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(o.cfg.RedirectURL, "https://")
}

// serveAuth answers /auth/login, /auth/callback and /auth/logout; it
// reports false for any other path.
func (o *OIDC) serveAuth(w http.ResponseWriter, r *http.Request, csrf string) bool {
	switch {
	case r.URL.Path == "/auth/login" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		o.login(w, r)
	case r.URL.Path == "/auth/callback" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		o.callback(w, r)
	case r.URL.Path == "/auth/logout" && r.Method == http.MethodPost:
		o.logout(w, r, csrf)
	case r.URL.Path == "/auth/logout" && r.Method == http.MethodGet:
		// A page, changing nothing: signing out is a POST from it.
		authPage(w, http.StatusOK, pageView{Title: "Sign out", SignOut: true, CSRF: csrf})
	default:
		return false
	}
	return true
}

// login starts a sign-in: a fresh state, nonce and PKCE verifier kept in
// memory, the state also in a cookie, then off to the provider.
func (o *OIDC) login(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	state, nonce := randomID(), randomID()
	verifier := oauth2.GenerateVerifier()
	redirect := o.redirectURL(r)
	now := o.cfg.Now()
	if !o.store.begin(state, pendingSignIn{nonce: nonce, verifier: verifier, redirect: redirect, next: next,
		tenant: r.URL.Query().Get("tenant"), expires: now.Add(signInWindow)}, now) {
		authPage(w, http.StatusServiceUnavailable, pageView{Title: "Too many sign-ins in progress",
			Message: "Too many sign-ins are in progress; try again in a few minutes."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: state, Path: "/auth/", HttpOnly: true,
		Secure: o.secure(r), SameSite: http.SameSiteLaxMode, MaxAge: int(signInWindow / time.Second)})
	u := o.oauth2Config(redirect).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
	http.Redirect(w, r, u, http.StatusFound)
}

// callback finishes a sign-in: the state must be this browser's and
// unused, the code is exchanged with the PKCE verifier, the ID token is
// verified (signature, issuer, audience, expiry) and must carry the
// nonce; its claim's values must grant a role.
func (o *OIDC) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	clearCookie(w, stateCookie, "/auth/", o.secure(r))
	if e := q.Get("error"); e != "" {
		authPage(w, http.StatusUnauthorized, pageView{Title: "Sign-in refused",
			Message: "The provider refused the sign-in: " + e + " " + q.Get("error_description"), SignIn: true})
		return
	}
	state := q.Get("state")
	c, err := r.Cookie(stateCookie)
	if state == "" || err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		authPage(w, http.StatusBadRequest, pageView{Title: "Sign-in not recognised",
			Message: "This sign-in was not started in this browser, or it was already used.", SignIn: true})
		return
	}
	p, ok := o.store.take(state, o.cfg.Now())
	if !ok {
		authPage(w, http.StatusBadRequest, pageView{Title: "Sign-in expired",
			Message: "This sign-in took too long or was already used.", SignIn: true})
		return
	}
	g, err := o.exchange(r.Context(), q.Get("code"), p)
	if err != nil {
		var nr *noRoleError
		if errors.As(err, &nr) {
			authPage(w, http.StatusForbidden, pageView{Title: "No role in rath", Message: nr.Error(), SignIn: true})
			return
		}
		authPage(w, http.StatusUnauthorized, pageView{Title: "Sign-in failed", Message: err.Error(), SignIn: true})
		return
	}
	id := randomID()
	o.store.open(id, g, o.cfg.Now())
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: id, Path: "/", HttpOnly: true,
		Secure: o.secure(r), SameSite: http.SameSiteLaxMode, Expires: g.expires})
	http.Redirect(w, r, p.next, http.StatusSeeOther)
}

// exchange trades the code for tokens and turns the verified ID token
// into a grant.
func (o *OIDC) exchange(ctx context.Context, code string, p pendingSignIn) (grant, error) {
	if code == "" {
		return grant{}, errors.New("the provider sent no code")
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.cfg.HTTPClient), exchangeTimeout)
	defer cancel()
	tok, err := o.oauth2Config(p.redirect).Exchange(ctx, code, oauth2.VerifierOption(p.verifier))
	if err != nil {
		return grant{}, fmt.Errorf("exchange the code: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return grant{}, errors.New("the provider sent no ID token")
	}
	idt, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return grant{}, fmt.Errorf("verify the ID token: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(p.nonce)) != 1 {
		return grant{}, errors.New("the ID token's nonce is not this sign-in's")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return grant{}, fmt.Errorf("read the ID token's claims: %w", err)
	}
	subject := idt.Subject
	if email, _ := claims["email"].(string); email != "" && claims["email_verified"] == true {
		subject = email
	}
	if subject == "" || strings.ContainsFunc(subject, isControl) {
		return grant{}, errors.New("the ID token names no usable subject")
	}
	tenant, role, err := mapClaim(claimValues(claims[o.cfg.Claim]), p.tenant)
	if err != nil {
		return grant{}, &noRoleError{subject: subject, claim: o.cfg.Claim, tenant: p.tenant, err: err}
	}
	expires := idt.Expiry
	if limit := o.cfg.Now().Add(o.cfg.MaxSession); expires.IsZero() || expires.After(limit) {
		expires = limit
	}
	return grant{id: access.Identity{Subject: subject, Issuer: o.cfg.Issuer, Tenant: tenant, Role: role, Via: ViaOIDC},
		expires: expires}, nil
}

// logout ends the session. It is a POST carrying the page's CSRF value
// (as a form field or the header), so another site cannot sign a user
// out.
func (o *OIDC) logout(w http.ResponseWriter, r *http.Request, csrf string) {
	v := r.Header.Get(CSRFHeader)
	if v == "" {
		v = r.PostFormValue("csrf")
	}
	if subtle.ConstantTimeCompare([]byte(v), []byte(csrf)) != 1 || crossSite(r) {
		authPage(w, http.StatusForbidden, pageView{Title: "Sign out refused",
			Message: "Sign out from the console's own page."})
		return
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		o.store.close(c.Value)
	}
	clearCookie(w, SessionCookie, "/", o.secure(r))
	authPage(w, http.StatusOK, pageView{Title: "Signed out",
		Message: "You are signed out of this console. Your provider may keep you signed in there.", SignIn: true})
}

// identity is the signed-in identity of the request's session cookie,
// if it names a live session.
func (o *OIDC) identity(r *http.Request) (access.Identity, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return access.Identity{}, false
	}
	g, ok := o.store.lookup(c.Value, o.cfg.Now())
	return g.id, ok
}

// challenge answers a request without a live session: a page is sent
// to sign in (and back to where it was), the API answers 401 naming the
// sign-in page so the console's script can go there.
func (o *OIDC) challenge(w http.ResponseWriter, r *http.Request) {
	login := "/auth/login"
	if strings.HasPrefix(r.URL.Path, "/api/") || r.Method != http.MethodGet {
		w.Header().Set(SignInHeader, login)
		writeError(w, http.StatusUnauthorized, "sign in first: %s", login)
		return
	}
	if next := localPath(r.URL.RequestURI()); next != "/" {
		login += "?next=" + url.QueryEscape(next)
	}
	http.Redirect(w, r, login, http.StatusSeeOther)
}

// crossSite reports whether the browser says a request comes from
// another site. Sec-Fetch-Site decides when sent: the console's pages
// send no referrer, so a form's Origin is "null".
func crossSite(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site != "same-origin" && site != "none"
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "null" {
		scheme := "http://"
		if r.TLS != nil {
			scheme = "https://"
		}
		return origin != scheme+r.Host
	}
	return false
}

// localPath returns p if it is a path on this site, else "/": a sign-in
// never sends the user to another site.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") ||
		strings.ContainsFunc(p, isControl) {
		return "/"
	}
	if u, err := url.Parse(p); err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return p
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func clearCookie(w http.ResponseWriter, name, path string, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: path, HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

// randomID is 256 random bits in hex.
func randomID() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// pageView is what the sign-in pages show.
type pageView struct {
	Title, Message string
	// SignIn offers a link to sign in (again).
	SignIn bool
	// SignOut offers the sign-out button, which posts CSRF.
	SignOut bool
	CSRF    string
}

// authTemplate renders the sign-in pages: self-contained, no script,
// every value escaped by html/template.
var authTemplate = template.Must(template.New("auth").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>rath: {{.Title}}</title></head>
<body><h1 id="auth-title">{{.Title}}</h1>
{{with .Message}}<p id="auth-message">{{.}}</p>{{end}}
{{if .SignOut}}<form method="post" action="/auth/logout"><input type="hidden" name="csrf" value="{{.CSRF}}"><button id="sign-out" type="submit">Sign out</button></form>{{end}}
{{if .SignIn}}<p><a id="sign-in" href="/auth/login">Sign in</a></p>{{end}}
</body></html>
`))

func authPage(w http.ResponseWriter, code int, v pageView) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	authTemplate.Execute(w, v)
}
