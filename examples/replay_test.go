package examples_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/replay"

	"github.com/gorath/rath/internal/rathbin"
)

// Every example's runs replay with the stock rath binary (cmd/rath, built
// with the examples) in a process with nothing but PATH and an empty
// HOME and RATH_HOME: the record is all a replay needs. Those whose
// workflow is Go code replay with the example's own binary, a rath CLI
// that registers it. On SQLite, the store the example wrote; with -tags
// integration, also a PostgreSQL copy of it (rath copy).

// refusals are the examples whose runs the stock binary refuses to
// replay, with the layer it names: their workflows hold Go code the log
// does not describe (a flow.Func, an approval predicate). The README's
// "What still cannot be replayed" lists them. Each of these programs is
// also a rath CLI that registers its workflow ("EXAMPLE rath ARGS",
// cli.Config.Setup), and that one replays them.
var refusals = map[string]string{
	"02_session_lineage":   `root: a Go workflow (flow.Func)`,
	"14_human_in_the_loop": `root.release: an agent whose approval policy for "deploy" is a Go predicate`,
}

// storeUnder is where, under its -dir, an example keeps the store holding
// its runs ("" for -dir itself).
var storeUnder = map[string]string{
	"12_replay": "original", // beside it, "tampered" is a broken copy
}

// stockRath is the rath binary built with the examples.
func stockRath(t *testing.T) string {
	if p := os.Getenv(rathbin.Env); p != "" {
		return p // make test built it once for every package
	}
	return filepath.Join(binaries(t), "rath")
}

// bareEnv is `env -i PATH=… HOME=<empty>` with an empty RATH_HOME: no
// key, no config file, no provider.
func bareEnv(t *testing.T) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "RATH_HOME=" + t.TempDir()}
}

type result struct {
	stdout, stderr string
	code           int
}

// rath runs the stock binary with exactly env.
func rath(t *testing.T, env []string, argv ...string) result {
	t.Helper()
	return runBinary(t, stockRath(t), env, argv...)
}

// exampleRath returns a func that runs an example's program as the rath
// CLI it embeds ("EXAMPLE rath ARGS"), with its workflow registered.
func exampleRath(example string) func(t *testing.T, env []string, argv ...string) result {
	return func(t *testing.T, env []string, argv ...string) result {
		t.Helper()
		return runBinary(t, filepath.Join(binaries(t), example), env, append([]string{"rath"}, argv...)...)
	}
}

// runBinary runs bin with exactly env.
func runBinary(t *testing.T, bin string, env []string, argv ...string) result {
	t.Helper()
	cmd := exec.Command(bin, argv...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// replayExampleRuns replays every run in the store an example wrote under
// dir, on SQLite and (with -tags integration) on a PostgreSQL copy.
func replayExampleRuns(t *testing.T, example, dir string) {
	t.Helper()
	stores := [][]string{{"--dir", filepath.Join(dir, storeUnder[example])}}
	if pg := postgresStore(t); pg != nil {
		if r := rath(t, bareEnv(t), "copy", "--from", stores[0][1], "--to", pg[len(pg)-1]); r.code != 0 {
			t.Fatalf("rath copy to PostgreSQL: exit %d\n%s", r.code, r.stderr)
		}
		stores = append(stores, pg)
	}
	for _, store := range stores {
		replayStore(t, example, store)
	}
}

func replayStore(t *testing.T, example string, store []string) {
	t.Helper()
	argv := func(more ...string) []string { return append(append([]string(nil), store...), more...) }
	r := rath(t, bareEnv(t), argv("runs", "--json")...)
	var runs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) == 0 {
		t.Fatalf("rath runs on %v: exit %d, %v\n%s%s", store, r.code, err, r.stdout, r.stderr)
	}
	for _, run := range runs {
		env := bareEnv(t)
		replayer, by := rath, "rath"
		if want, refused := refusals[example]; refused {
			r := rath(t, env, argv("replay", "--json", run.ID)...)
			// Refused before anything runs, naming the layer: not a
			// divergence (exit 4), which would blame the run, but exit 8,
			// "this binary cannot rebuild the workflow" (docs/CLI.md).
			if r.code != 8 || !strings.Contains(r.stderr, "cannot be replayed") || !strings.Contains(r.stderr, want) {
				t.Errorf("replay %s on %v: exit %d, want 8 and a refusal naming %q\n%s%s", run.ID, store, r.code, want, r.stdout, r.stderr)
			}
			// The program's own rath CLI, which registers the workflow,
			// replays it.
			replayer, by = exampleRath(example), example+" rath"
		}
		r := replayer(t, env, argv("replay", "--json", run.ID)...)
		var rep replay.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
			t.Errorf("%s replay %s on %v: exit %d, %v\n%s%s", by, run.ID, store, r.code, err, r.stdout, r.stderr)
			continue
		}
		if rep.Divergence != nil || rep.Recorded == 0 || rep.Matched != rep.Recorded || !rep.Finished {
			t.Errorf("%s replay %s on %v: %+v", by, run.ID, store, rep)
			continue
		}
		d := replayer(t, env, argv("dossier", "--replay", "--format", "md", run.ID)...)
		if d.code != 0 || !strings.Contains(d.stdout, rep.Verdict()) {
			t.Errorf("%s dossier --replay %s on %v: exit %d, want the verdict %q\n%s", by, run.ID, store, d.code, rep.Verdict(), d.stderr)
		}
	}
}
