package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	execpkg "os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A console off loopback refuses a token a network attacker could guess,
// with a message that says how to make a good one; the rath process
// exits with a usage error before it listens.
func TestServe_WeakTokenRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "new", "hello")
	for _, tc := range []struct {
		name string
		env  []string
		argv []string
	}{
		{"one character", nil, []string{"--token", "x"}},
		{"a word", nil, []string{"--token", "letmein-please"}},
		{"21 base64 characters", nil, []string{"--token", "Zm9vYmFyYmF6cXV4MTIzN"}},
		{"31 hex characters", nil, []string{"--token", "0123456789abcdef0123456789abcde"}},
		{"long but repetitive", nil, []string{"--token", strings.Repeat("ab", 40)}},
		{"from the environment", []string{"RATH_TOKEN=hunter2hunter2"}, nil},
	} {
		// A server that accepts the token serves until killed.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := execpkg.CommandContext(ctx, os.Args[0], append([]string{"--dir", dir, "serve", "--addr", "0.0.0.0:0"}, tc.argv...)...)
		cmd.Env = append(append(os.Environ(), mainEnv+"=1", "RATH_TOKEN="), tc.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		var exit *execpkg.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != ExitUsage {
			t.Errorf("%s: %v, want exit %d\n%s", tc.name, err, ExitUsage, stderr.String())
			continue
		}
		for _, want := range []string{"bits of entropy", "needs 128", "rath serve --token generate"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("%s: the message lacks %q:\n%s", tc.name, want, stderr.String())
			}
		}
	}
}

var tokenLine = regexp.MustCompile(`token \(shown once, kept nowhere\): ([A-Za-z0-9_-]+)\n`)
var anyServingURL = regexp.MustCompile(`serving .* on http://[^ ]*:(\d+)/`)

// --token generate makes a strong token, prints it once, and the console
// off loopback admits that token and nothing else; a good token of one's
// own is accepted too.
func TestServe_TokenGenerate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustRun(t, dir, "new", "hello")
	serve := func(token string) (port string, stderr *syncBuffer) {
		t.Helper()
		cmd := execpkg.Command(os.Args[0], "--dir", dir, "serve", "--addr", "0.0.0.0:0", "--token", token)
		cmd.Env = append(os.Environ(), mainEnv+"=1", "RATH_TOKEN=")
		stderr = &syncBuffer{}
		pipe, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		})
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(pipe)
			for sc.Scan() {
				stderr.Write([]byte(sc.Text() + "\n"))
				lines <- sc.Text()
			}
			close(lines)
		}()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("serve ended:\n%s", stderr.String())
				}
				if m := anyServingURL.FindStringSubmatch(l); m != nil {
					go func() {
						for range lines {
						}
					}()
					return m[1], stderr
				}
			case <-timeout:
				t.Fatalf("no URL on stderr:\n%s", stderr.String())
			}
		}
	}
	status := func(port, token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+"/api/runs", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	port, stderr := serve("generate")
	m := tokenLine.FindAllStringSubmatch(stderr.String(), -1)
	if len(m) != 1 || len(m[0][1]) < 22 {
		t.Fatalf("want one token line, got:\n%s", stderr.String())
	}
	token := m[0][1]
	if tokenBits(token) < minTokenBits {
		t.Fatalf("the generated token %q is weak", token)
	}
	for _, tc := range []struct {
		token string
		want  int
	}{{token, http.StatusOK}, {"", http.StatusUnauthorized}, {"generate", http.StatusUnauthorized}, {token[:len(token)-1], http.StatusUnauthorized}} {
		if got := status(port, tc.token); got != tc.want {
			t.Errorf("token %q: %d, want %d", tc.token, got, tc.want)
		}
	}
	// Another start makes another token.
	_, stderr2 := serve("generate")
	if m2 := tokenLine.FindStringSubmatch(stderr2.String()); m2 == nil || m2[1] == token {
		t.Fatalf("a second start: %s", stderr2.String())
	}
	own := "Zm9vYmFyYmF6cXV4MTIzNDU2" // 24 base64 characters
	port3, stderr3 := serve(own)
	if strings.Contains(stderr3.String(), own) {
		t.Errorf("a token of one's own is printed:\n%s", stderr3.String())
	}
	if got := status(port3, own); got != http.StatusOK {
		t.Errorf("own token: %d", got)
	}
}

func TestTokenBits(t *testing.T) {
	for _, tc := range []struct {
		token string
		ok    bool
	}{
		{"", false},
		{"Zm9vYmFyYmF6cXV4MTIzNDU2", true},
		{"Zm9vYmFyYmF6cXV4MTIzND", true}, // 22
		{"Zm9vYmFyYmF6cXV4MTIzN", false}, // 21
		{"0123456789abcdef0123456789abcdef", true},
		{"0123456789abcdef0123456789abcde", false},
		{strings.Repeat("7", 60), false},
		{"12345678901234567890123456789012345678", false}, // 38 digits: 126 bits
		{"123456789012345678901234567890123456789", true},
	} {
		if got := checkToken(tc.token) == nil; got != tc.ok {
			t.Errorf("%q: ok %v (%.0f bits), want %v", tc.token, got, tokenBits(tc.token), tc.ok)
		}
	}
}
