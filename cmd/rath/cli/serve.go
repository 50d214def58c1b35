package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorath/rath"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/console"
	"github.com/gorath/rath/projections"
)

func newServeCmd(a *app) *cobra.Command {
	var addr, token, workspaceRoot, auth string
	var allowLive bool
	var tenantConns int
	var backends []string
	var oidcf oidcFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a web console and a JSON API over the store: runs, events (live), sessions, graph, replay, verify, dossiers",
		Long: `serve answers a JSON API under /api/ (docs/openapi.yaml) and a web console
at / built into the binary (no network needed). It listens on loopback by
default; any other address needs a token (--token or $RATH_TOKEN) of at
least 128 bits of entropy (22 random base64 characters, 32 hex), sent as
"Authorization: Bearer TOKEN" or set as a cookie by visiting /?token=TOKEN.
--token generate makes one and prints it once on stderr; it is kept
nowhere, so a restart makes another. It prints the URL on stderr and
serves until interrupted (SIGINT, SIGTERM).

A console user replays from the record. Running recorded work again for
real (a replay with live tools, a fork, which goes on live) runs the
run's commands in this process's sandboxes, as this user: it is refused
(403) unless the operator starts serve with --allow-live. Then those
actions, and resumes, run on the --backends listed only (bwrap and
opensandbox unless told; local runs tools unconfined as this user), in
workspaces under --workspace-root if set (live-tools copies are made
there too).

--oidc-issuer URL --oidc-client-id ID signs each user in with OpenID
Connect (the authorization code flow with PKCE) on any address, loopback
included: the ID token's --oidc-claim (groups) values TENANT:ROLE, such
as acme:approver, give the user a role (viewer, approver, operator,
admin) in a tenant; a user with none is refused. The client's secret,
if it has one, is read from the environment variable
--oidc-client-secret-env names, never from a flag (docs/SERVE.md,
"Signing in with OpenID Connect"). It implies --auth tokens.

--auth tokens serves several people: every request, on loopback too,
carries an API token (rath tokens create --tenant T --role R) as
"Authorization: Bearer TOKEN" (such a write needs no CSRF header) or as
the cookie /?token=TOKEN sets. A viewer reads; an approver also decides
approvals; an operator submits, cancels, resumes, forks, replays and
verifies; an admin does all, memory forget included. A role that lacks
what a route needs is answered 403; an unknown, revoked or expired
token 401. Every read of run content appends an access.viewed event
(rath access lists them), and a decision records the identity.`,
		Example: `rath serve
rath serve --addr 0.0.0.0:7777 --token generate
RATH_TOKEN=$(openssl rand -base64 32) rath serve --addr 0.0.0.0:7777
rath serve --allow-live --backends bwrap --workspace-root /srv/work
RATH_OIDC_SECRET=… rath serve --addr 0.0.0.0:7777 --oidc-issuer https://id.example.com --oidc-client-id rath --oidc-client-secret-env RATH_OIDC_SECRET
rath serve --auth tokens --addr 0.0.0.0:7777`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			signIn, err := oidcf.build(cmd.Context(), cmd)
			if err != nil {
				return err
			}
			if signIn != nil {
				// Each user signs in; the single token is not used.
				token = ""
			} else if token == "" {
				token = os.Getenv("RATH_TOKEN")
			}
			generated := token == tokenGenerate
			if generated {
				var err error
				if token, err = newToken(); err != nil {
					return err
				}
			}
			if tenantConns < 1 {
				return usagef(cmd, "--tenant-conns %d: want at least 1", tenantConns)
			}
			switch auth {
			case "", "local":
				auth = console.AuthLocal
			case console.AuthTokens:
				if cmd.Flags().Changed("token") && signIn == nil {
					return usagef(cmd, "--auth tokens identifies each request by its own API token (rath tokens create): drop --token")
				}
				token = "" // $RATH_TOKEN is the single-token mode's
			default:
				return usagef(cmd, "--auth %q: want local or tokens", auth)
			}
			if signIn != nil {
				auth = console.AuthTokens // signing in implies identities on every request
			}
			if auth == console.AuthLocal && !console.LoopbackAddr(addr) {
				if token == "" {
					return usagef(cmd, "--addr %s is not a loopback address: set --token or RATH_TOKEN (%s)", addr, makeTokenHint)
				}
				if err := checkToken(token); err != nil {
					return usagef(cmd, "--addr %s is not a loopback address and %v", addr, err)
				}
			}
			if !allowLive && (cmd.Flags().Changed("backends") || workspaceRoot != "") {
				return usagef(cmd, "--backends and --workspace-root confine live actions: they go with --allow-live")
			}
			if allowLive {
				list, err := parseBackends(backends)
				if err != nil {
					return usagef(cmd, "--backends: %v", err)
				}
				if workspaceRoot != "" {
					if st, err := os.Stat(workspaceRoot); err != nil || !st.IsDir() {
						return usagef(cmd, "--workspace-root: %s is not a directory", workspaceRoot)
					}
				}
				// The runtime can open no other backend, whatever a
				// session in the log claims, nor a workspace outside the
				// root: live tools and forks run nowhere else.
				if a.sandboxes, err = rath.BuiltinSandboxesWith(rath.SandboxOptions{WorkspaceRoot: workspaceRoot}, list...); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			sub := &httpSubmitter{a: a, rt: rt}
			defer sub.close()
			// The config file's price table gives the runs list a cost
			// column; without one (or without the file) there is none.
			cf, err := flow.LoadConfig(flow.DefaultConfigPath(os.Getenv))
			if err != nil {
				// The console works without prices; say why none show.
				fmt.Fprintf(a.stderr, "rath: no cost column: %v\n", err)
			}
			srv, err := console.New(console.Options{Runtime: rt, Auth: auth, Token: token, Prices: cf.Prices,
				Submit: sub.submit, AllowLive: allowLive, LiveCopies: workspaceRoot, OIDC: signIn, TenantConns: tenantConns})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
				BaseContext: func(net.Listener) context.Context { return ctx }}
			if generated {
				// Shown this once: it is stored nowhere.
				fmt.Fprintf(a.stderr, "rath: token (shown once, kept nowhere): %s\n", token)
			}
			url := "http://" + ln.Addr().String() + "/"
			if token != "" || auth == console.AuthTokens {
				url += " (sign in once at /?token=TOKEN)"
			}
			if signIn != nil {
				url += " (users sign in at " + signIn.Issuer() + ")"
			}
			fmt.Fprintf(a.stderr, "rath: serving %s on %s\n", a.where(), url)
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			srv.Close()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil {
				return err
			}
			if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			fmt.Fprintln(a.stderr, "rath: stopped")
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7777", "listen address (a non-loopback one needs --token)")
	cmd.Flags().StringVar(&auth, "auth", "local", "local: one person (loopback, or --token); tokens: every request carries an API token (rath tokens create) with a tenant and a role, on loopback too")
	cmd.Flags().StringVar(&token, "token", "", "require this token on every request (env RATH_TOKEN); \"generate\" makes one and prints it once")
	cmd.Flags().BoolVar(&allowLive, "allow-live", false, "let console users replay with live tools and fork (both run recorded commands again for real); without it they are refused")
	cmd.Flags().StringSliceVar(&backends, "backends", fleet.DefaultBackends(), "with --allow-live: the sandbox backends the console runs tools on (local runs them unconfined as this user)")
	cmd.Flags().IntVar(&tenantConns, "tenant-conns", projections.DefaultTenantConns, "on PostgreSQL: how many connections the tenants' read pools hold open together; a request waits for one when all are in use")
	oidcf.register(cmd)
	cmd.Flags().StringVar(&workspaceRoot, "workspace-root", "", "with --allow-live: the directory under which local and bwrap workspaces, and live-tools copies, must lie")
	return cmd
}
