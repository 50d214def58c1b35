package cli

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath/internal/oidctest"
)

// `rath serve --oidc-issuer` as its own process signs a user in at a real
// provider (the client's secret read from the variable
// --oidc-client-secret-env names), refuses the API before, answers it
// after; the secret is printed nowhere.
func TestServe_OIDCSignsUsersIn(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	mustRun(t, dir, "demo")
	p := oidctest.Start(t)
	t.Setenv("RATH_TEST_OIDC_SECRET", p.ClientSecret())
	cmd, serveErr := startRath(t, "--dir", dir, "serve", "--addr", "127.0.0.1:0", "--oidc-issuer", p.Issuer(),
		"--oidc-client-id", p.ClientID(), "--oidc-client-secret-env", "RATH_TEST_OIDC_SECRET")
	var logged strings.Builder
	var mu sync.Mutex
	base := servedURLInto(t, serveErr, &logged, &mu)

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		res, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("api/runs"); code != http.StatusUnauthorized {
		t.Fatalf("API before sign-in: %d %s", code, body)
	}
	p.SignsIn("u-1", "alice@example.com", "default:viewer")
	if code, body := get(""); code != http.StatusOK || !strings.Contains(body, "alice@example.com") {
		t.Fatalf("sign-in: %d %s", code, body)
	}
	if code, body := get("api/runs"); code != http.StatusOK || !strings.Contains(body, `"status":"done"`) {
		t.Fatalf("API after sign-in: %d %s", code, body)
	}
	cmd.Process.Kill()
	cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logged.String(), p.ClientSecret()) {
		t.Fatalf("rath serve printed the client's secret:\n%s", logged.String())
	}
}

// servedURLInto is servedURL keeping what rath serve prints.
func servedURLInto(t *testing.T, serveErr *bufio.Reader, into *strings.Builder, mu *sync.Mutex) string {
	t.Helper()
	for {
		line, err := serveErr.ReadString('\n')
		mu.Lock()
		into.WriteString(line)
		mu.Unlock()
		if m := servingURL.FindStringSubmatch(line); m != nil {
			go func() {
				for {
					line, err := serveErr.ReadString('\n')
					mu.Lock()
					into.WriteString(line)
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
			return m[1]
		}
		if err != nil {
			t.Fatalf("no URL from rath serve: %q %v", into.String(), err)
		}
	}
}

// The sign-in flags are checked before anything starts: they go
// together, the secret's variable must hold one, the single token is not
// mixed in, and a provider that cannot be discovered is an error.
func TestServe_OIDCFlags(t *testing.T) {
	dir := t.TempDir()
	p := oidctest.Start(t)
	t.Setenv("RATH_TEST_OIDC_EMPTY", "")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"issuer alone", []string{"--oidc-issuer", p.Issuer()}, ExitUsage, "--oidc-issuer and --oidc-client-id go together"},
		{"claim alone", []string{"--oidc-claim", "roles"}, ExitUsage, "--oidc-issuer and --oidc-client-id go together"},
		{"empty secret variable", []string{"--oidc-issuer", p.Issuer(), "--oidc-client-id", "x", "--oidc-client-secret-env", "RATH_TEST_OIDC_EMPTY"},
			ExitUsage, "the environment variable RATH_TEST_OIDC_EMPTY is empty"},
		{"with the single token", []string{"--oidc-issuer", p.Issuer(), "--oidc-client-id", "x", "--token", "generate"}, ExitUsage, "use one"},
		{"no provider there", []string{"--oidc-issuer", p.Issuer() + "/nowhere", "--oidc-client-id", "x"}, ExitFailure, "--oidc-issuer: oidc: discover"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rathCLI(t, dir, append([]string{"serve", "--addr", "127.0.0.1:0"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d (want %d)\n%s", r.code, tt.code, r.stderr)
			}
		})
	}
}
