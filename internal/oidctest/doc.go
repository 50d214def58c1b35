// Package oidctest starts a real OpenID Connect provider on loopback for
// tests of rath's sign-in: discovery, JWKS, the authorization code flow
// with PKCE (S256) and RS256 ID tokens, from the provider library
// github.com/oauth2-proxy/mockoidc, which signs in the users a test
// queues without a login form. It adds a clock the test moves (shared
// with the console under test) and a record of the requests it saw.
//
// It owns no rath behaviour and imports no rath package; only tests
// import it.
package oidctest
