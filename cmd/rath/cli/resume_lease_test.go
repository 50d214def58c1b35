package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Three processes resume one approved run at once: one continues it, the
// approved command runs once (its effect file lies outside the
// workspace), and the two others are refused before they run anything,
// naming who holds the run (or, started late, that it finished).
func TestResume_ConcurrentResumesRunTheCallOnce(t *testing.T) {
	t.Parallel()
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			env := []string{"RATH_HOME=" + t.TempDir()}
			ws := filepath.Join(t.TempDir(), "ws")
			os.MkdirAll(ws, 0o755)
			effect := filepath.Join(t.TempDir(), "effect")
			cas := filepath.Join(t.TempDir(), "cassette.json")
			os.WriteFile(cas, []byte(fmt.Sprintf(`{"scripted": true, "description": "run a command once", "responses": [
 {"tool_calls": [{"id": "c1", "name": "run_shell_command", "arguments": {"cmd": "echo ran >> %s; sleep 2"}}]},
 {"content": "done"}]}`, effect)), 0o644)
			rath := func(argv ...string) result {
				return rathExit(t, env, append(append([]string(nil), store...), argv...)...)
			}
			r := rath("run", "--cassette", cas, "--workspace", ws, "--tools", "run_shell_command", "--approve", "run_shell_command", "--no-stream", "go")
			if r.code != ExitWaiting {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			run := regexp.MustCompile(`run: (run-[0-9a-f]+)`).FindStringSubmatch(r.stdout)[1]
			if r := rath("approve", requestID.FindString(r.stderr), "--as", "alice"); r.code != 0 {
				t.Fatalf("approve: exit %d\n%s", r.code, r.stderr)
			}
			var wg sync.WaitGroup
			results := make([]result, 3)
			for i := range results {
				wg.Go(func() { results[i] = rath("resume", run) })
			}
			wg.Wait()
			ok, refused := 0, 0
			for _, r := range results {
				switch {
				case r.code == 0:
					ok++
				case strings.Contains(r.stderr, "run "+run+" is being continued by resume:"),
					// It started after the one that continued it finished.
					strings.Contains(r.stderr, "not resumable: "+run+" finished"):
					refused++
				default:
					t.Errorf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
			}
			b, _ := os.ReadFile(effect)
			if ok != 1 || refused != 2 || string(b) != "ran\n" {
				t.Fatalf("%d resumes finished, %d were refused; the command ran %d times; want 1, 2 and once", ok, refused, strings.Count(string(b), "ran"))
			}
			if out := rath("replay", run); out.code != 0 || !strings.Contains(out.stdout, "reproduced") {
				t.Fatalf("replay: exit %d\n%s%s", out.code, out.stdout, out.stderr)
			}
			if v := rath("verify"); v.code != 0 {
				t.Fatalf("verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}
