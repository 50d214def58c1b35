package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tokensStore is a store that `rath serve --auth tokens` serves, each
// command a process of its own: the tests of tenants, roles and access
// records set it up with runs waiting for approval and API tokens.
type tokensStore struct {
	t     *testing.T
	store []string // the store's flags (storeFor)
	env   []string
	cas   string // approveCassette's file
	base  string // the console's URL, once serve has started it
}

// newTokensStore returns a fresh store of backend ("sqlite",
// "postgres") with a home whose config names no provider.
func newTokensStore(t *testing.T, backend string) *tokensStore {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"providers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cas := filepath.Join(t.TempDir(), "approve.json")
	if err := os.WriteFile(cas, []byte(approveCassette), 0o644); err != nil {
		t.Fatal(err)
	}
	return &tokensStore{t: t, store: storeFor(t, backend), env: []string{"RATH_HOME=" + home}, cas: cas}
}

// rath runs the CLI on the store.
func (s *tokensStore) rath(argv ...string) result {
	return rathExit(s.t, s.env, append(append([]string(nil), s.store...), argv...)...)
}

// waitingRun runs, in tenant ("" for the default), a run that waits for
// the approval of a shell command, and returns it and its request.
func (s *tokensStore) waitingRun(tenant string) (run, req string) {
	s.t.Helper()
	ws := filepath.Join(s.t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		s.t.Fatal(err)
	}
	argv := []string{"run", "--cassette", s.cas, "--workspace", ws, "--tools", "run_shell_command", "--approve", "run_shell_command", "--no-stream"}
	if tenant != "" {
		argv = append(argv, "--tenant", tenant)
	}
	r := s.rath(append(argv, "write", "out")...)
	if r.code != ExitWaiting {
		s.t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return regexp.MustCompile(`run: (run-[0-9a-f]+)`).FindStringSubmatch(r.stdout)[1], requestID.FindString(r.stderr)
}

// token creates an API token (rath tokens create --json argv...).
func (s *tokensStore) token(argv ...string) tokenCreated {
	s.t.Helper()
	r := s.rath(append([]string{"tokens", "create", "--json"}, argv...)...)
	if r.code != 0 {
		s.t.Fatalf("tokens create: exit %d\n%s", r.code, r.stderr)
	}
	return decodeJSON[tokenCreated](s.t, r.stdout)
}

// serve starts `rath serve --auth tokens` on the store, with extra
// flags; the test's cleanup stops it.
func (s *tokensStore) serve(extra ...string) {
	s.t.Helper()
	_, serveErr := startRath(s.t, append(append(append([]string(nil), s.store...), "serve", "--addr", "127.0.0.1:0", "--auth", "tokens"), extra...)...)
	s.base = servedURL(s.t, serveErr)
}

// do sends a request with tok as its bearer token (none if empty).
func (s *tokensStore) do(method, path, tok, body string) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.base+strings.TrimPrefix(path, "/"), strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
