package cli

import (
	"os"
	execpkg "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A run's subject follows it: `rath submit --subject` hands it to the
// worker, and `rath resume` of a run that waited for a person seals what
// it adds under the same subject. Erasing the subject then leaves none
// of either run's text readable in `rath events`, on both stores, each
// step a process of its own.
func TestSubject_FollowsSubmitWorkerAndResume(t *testing.T) {
	t.Parallel()
	for _, backend := range bothStores() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			store := storeFor(t, backend)
			kek := filepath.Join(t.TempDir(), "kek")
			env := []string{"RATH_HOME=" + t.TempDir(), "RATH_KEK_FILE=" + kek}
			rath := func(argv ...string) result {
				t.Helper()
				return rathExit(t, env, append(append([]string(nil), store...), argv...)...)
			}
			if r := rath("keys", "kek", "--out", kek); r.code != 0 {
				t.Fatalf("keys kek: exit %d\n%s", r.code, r.stderr)
			}
			ws := t.TempDir()
			readable := func(run, text string) bool {
				t.Helper()
				r := rath("events", "--json", "--run", run)
				if r.code != 0 {
					t.Fatalf("events --run %s: exit %d\n%s", run, r.code, r.stderr)
				}
				return strings.Contains(r.stdout, text)
			}
			erase := func(id string) {
				t.Helper()
				if r := rath("erase", "--subject", id, "--reason", "request", "--as", "dpo"); r.code != 0 {
					t.Fatalf("erase %s: exit %d\n%s", id, r.code, r.stderr)
				}
			}

			// A run waits for an approval, another process approves, a
			// third resumes it: the answer comes from the resume.
			cas := filepath.Join(t.TempDir(), "approve.json")
			os.WriteFile(cas, []byte(approveCassette), 0o644)
			r := rath("run", "--subject", "alice", "--cassette", cas, "--workspace", ws, "--tools", "run_shell_command", "--approve", "run_shell_command", "--no-stream", "write", "out")
			if r.code != ExitWaiting {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			run1 := regexp.MustCompile(`run: (run-[0-9a-f]+)`).FindStringSubmatch(r.stdout)[1]
			if r := rath("approve", requestID.FindString(r.stderr), "--as", "alice"); r.code != 0 {
				t.Fatalf("approve: exit %d\n%s", r.code, r.stderr)
			}
			if r := rath("resume", run1); r.code != 0 {
				t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			const resumed = "The command ran and wrote out.txt."
			if !readable(run1, resumed) {
				t.Fatal("the resumed run's answer does not read back before the erasure")
			}

			// A run submitted for bob, worked by a worker process.
			const canary = "CANARY-b0b51e"
			out := rath("submit", "--subject", "bob", "--cassette", canaryCassette(t, canary), "--workspace", ws, "--tools", "run_shell_command", "say", "it")
			if out.code != 0 {
				t.Fatalf("submit --subject: exit %d\n%s", out.code, out.stderr)
			}
			run2 := strings.TrimSpace(out.stdout)
			w := execpkg.Command(os.Args[0], append(append([]string(nil), store...), "worker", "--lease", "5s", "--backends", "local")...)
			w.Env = append(append(os.Environ(), mainEnv+"=1"), env...)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { w.Process.Kill(); w.Wait() }()
			if r := rath("wait", "--timeout", "2m", run2); r.code != 0 || !strings.Contains(r.stdout, run2+"\tdone") {
				t.Fatalf("wait: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if !readable(run2, canary+"-answer") {
				t.Fatal("the worked run's answer does not read back before the erasure")
			}

			erase("alice")
			erase("bob")
			if readable(run1, resumed) {
				t.Error("the answer the resume added reads back after erasing the run's subject: it was sealed under another key")
			}
			if readable(run2, canary) {
				t.Error("the worked run reads back after erasing the subject it was submitted for")
			}
			// Nothing was left under the runs' own keys to erase.
			for _, run := range []string{run1, run2} {
				if r := rath("erase", "--subject", "run:"+run, "--reason", "request"); r.code == 0 {
					t.Errorf("run %s had content under its own key", run)
				}
			}
		})
	}
}
