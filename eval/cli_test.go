package eval_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/gorath/rath"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/internal/rathbin"
)

var (
	bin    rathbin.Shared
	server *pgtest.Server
	// stores are copies of one migrated database.
	stores *pgtest.Template
)

func TestMain(m *testing.M) {
	pgtest.MainWith(m, pgtest.Unsynced(), func(s *pgtest.Server) {
		server, stores = s, s.Template("evaltemplate", rath.Migrate)
	}, bin.Remove)
}

// store is one empty store the CLI reaches through its environment, and a
// way to run SQL on its database behind rath's back, as a tamperer would.
type store struct {
	env  []string
	exec func(t *testing.T, q string)
	// dropGuard is the statement that lifts the events table's refusal
	// of updates.
	dropGuard string
}

var backends = []struct {
	name string
	new  func(t *testing.T) store
}{
	{"sqlite", func(t *testing.T) store {
		dir := t.TempDir()
		return store{env: []string{"RATH_DIR=" + dir}, dropGuard: `DROP TRIGGER events_no_update`,
			exec: func(t *testing.T, q string) {
				t.Helper()
				db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, rath.DBFile)+"?_pragma=busy_timeout(5000)")
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}}
	}},
	{"postgres", func(t *testing.T) store {
		name, dsn := stores.New(t)
		return store{env: []string{"RATH_DSN=" + dsn, "RATH_DIR=" + t.TempDir()}, dropGuard: `DROP TRIGGER events_no_update ON events`,
			exec: func(t *testing.T, q string) {
				t.Helper()
				if err := server.Exec(t.Context(), name, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}}
	}},
}

func forEach(t *testing.T, fn func(t *testing.T, st store)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.new(t))
		})
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// cli runs the rath binary, a process of its own, with the store's
// environment, a config home of the test's and env added.
func (st store) cli(t *testing.T, home string, env []string, argv ...string) result {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin.Path(t), argv...)
	cmd.Dir = home
	cmd.Env = append(append(append(os.Environ(), "RATH_HOME="+home, "OPENAI_API_KEY=", "ANTHROPIC_API_KEY="), st.env...), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func (st store) must(t *testing.T, home string, env []string, argv ...string) string {
	t.Helper()
	r := st.cli(t, home, env, argv...)
	if r.code != 0 {
		t.Fatalf("rath %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(argv, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func decode[T any](t *testing.T, text string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("not the expected JSON: %v\n%s", err, text)
	}
	return v
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Views of the CLI's JSON, as a script reads them.
type (
	runJSON struct {
		ID          string `json:"id"`
		Input       string `json:"input_session"`
		FinishedSeq int64  `json:"finished_seq"`
	}
	itemJSON struct {
		ID           string          `json:"id"`
		Run          string          `json:"run"`
		InputSession string          `json:"input_session"`
		LastSeq      int64           `json:"last_seq"`
		LastLeaf     string          `json:"last_leaf"`
		Input        json.RawMessage `json:"input"`
		Ideal        json.RawMessage `json:"ideal"`
		Metadata     map[string]any  `json:"metadata"`
	}
	datasetJSON struct {
		Name  string     `json:"name"`
		Items []itemJSON `json:"items"`
	}
	scoreJSON struct {
		Seq        int64   `json:"seq"`
		Item       string  `json:"item"`
		Run        string  `json:"run"`
		Scorer     string  `json:"scorer"`
		Version    string  `json:"scorer_version"`
		ConfigHash string  `json:"config_hash"`
		Value      float64 `json:"value"`
		Reason     string  `json:"reason"`
		Reads      []int64 `json:"reads"`
	}
	scoreResultJSON struct {
		Experiment string      `json:"experiment"`
		ModelCalls int64       `json:"model_calls"`
		Scores     []scoreJSON `json:"scores"`
	}
	verifyJSON struct {
		OK        bool   `json:"ok"`
		FailedSeq int64  `json:"failed_seq"`
		Failure   string `json:"failure"`
		Scores    *struct {
			Scores          int    `json:"scores"`
			Counterfactuals int    `json:"counterfactuals"`
			Failure         string `json:"failure"`
			ScoreSeq        int64  `json:"score_seq"`
			EventSeq        int64  `json:"event_seq"`
		} `json:"scores"`
	}
)

// recordRuns records two runs of the question through `rath run`: one
// answers Paris, the other calls a tool and answers Lyon.
func recordRuns(t *testing.T, st store, home string) (paris, lyon runJSON) {
	t.Helper()
	p := writeFile(t, home, "paris.json", `{"scripted":true,"responses":[{"content":"Paris is the capital."}]}`)
	l := writeFile(t, home, "lyon.json", `{"scripted":true,"responses":[{"tool_calls":[{"id":"c1","name":"list_workspace_files","arguments":{}}]},{"content":"Lyon, I think."}]}`)
	st.must(t, home, nil, "run", "--cassette", p, "What is the capital of France?")
	st.must(t, home, nil, "run", "--cassette", l, "--workspace", filepath.Join(home, "work"), "--tools", "list_workspace_files", "What is the capital of France?")
	runs := decode[[]runJSON](t, st.must(t, home, nil, "runs", "--json"))
	if len(runs) != 2 {
		t.Fatalf("runs: %+v", runs)
	}
	return runs[1], runs[0] // newest first
}
