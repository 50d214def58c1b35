package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/internal/console"
)

// oidcFlags are rath serve's sign-in with OpenID Connect.
type oidcFlags struct {
	issuer, clientID, secretEnv, claim, redirect string
	scopes                                       []string
}

func (f *oidcFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.issuer, "oidc-issuer", "", "sign users in with this OpenID Connect provider (its issuer URL); every request then needs a signed-in user")
	fl.StringVar(&f.clientID, "oidc-client-id", "", "with --oidc-issuer: this console's client id at the provider")
	fl.StringVar(&f.secretEnv, "oidc-client-secret-env", "", "with --oidc-issuer: the environment variable holding the client's secret (none: a public client, PKCE only)")
	fl.StringVar(&f.claim, "oidc-claim", console.DefaultOIDCClaim, "with --oidc-issuer: the ID token claim whose values TENANT:ROLE grant roles")
	fl.StringVar(&f.redirect, "oidc-redirect-url", "", "with --oidc-issuer: the callback registered at the provider (https://HOST/auth/callback); default: the request's own host")
	fl.StringSliceVar(&f.scopes, "oidc-scopes", console.DefaultOIDCScopes, "with --oidc-issuer: the scopes asked for at sign-in")
}

// set reports whether any --oidc- flag was given.
func (f *oidcFlags) set(cmd *cobra.Command) bool {
	for _, name := range []string{"oidc-issuer", "oidc-client-id", "oidc-client-secret-env", "oidc-claim", "oidc-redirect-url", "oidc-scopes"} {
		if cmd.Flags().Changed(name) {
			return true
		}
	}
	return false
}

// build checks the flags and discovers the provider; nil when sign-in is
// not asked for. The secret comes from the environment only: a flag's
// value would show in ps and in shell history.
func (f *oidcFlags) build(ctx context.Context, cmd *cobra.Command) (*console.OIDC, error) {
	if !f.set(cmd) {
		return nil, nil
	}
	if f.issuer == "" || f.clientID == "" {
		return nil, usagef(cmd, "--oidc-issuer and --oidc-client-id go together (and the other --oidc- flags with them)")
	}
	if cmd.Flags().Changed("token") {
		return nil, usagef(cmd, "--token is the single-user sign-in; --oidc-issuer signs each user in: use one")
	}
	var secret string
	if f.secretEnv != "" {
		if secret = os.Getenv(f.secretEnv); secret == "" {
			return nil, usagef(cmd, "--oidc-client-secret-env: the environment variable %s is empty or not set", f.secretEnv)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	o, err := console.NewOIDC(dctx, console.OIDCConfig{Issuer: f.issuer, ClientID: f.clientID, ClientSecret: secret,
		Claim: f.claim, Scopes: f.scopes, RedirectURL: f.redirect})
	if err != nil {
		return nil, fmt.Errorf("--oidc-issuer: %w", err)
	}
	return o, nil
}
