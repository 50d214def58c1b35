package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// TestRun_NewIDsDifferAcrossStores: the first session of every store used
// to get the same id, so a session exported from one store could not be
// imported into another that had made its own first session.
func TestRun_NewIDsDifferAcrossStores(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	idA := strings.TrimSpace(mustRun(t, a, "new", "from store a"))
	idB := strings.TrimSpace(mustRun(t, b, "new", "from store b"))
	if idA == idB {
		t.Fatalf("the first sessions of two stores have one id: %s", idA)
	}
	file := filepath.Join(t.TempDir(), "a.jsonl")
	mustRun(t, a, "export", idA, "-o", file)
	mustRun(t, b, "import", file)
	for id, want := range map[string]string{idA: "from store a", idB: "from store b"} {
		got := decodeJSON[shown](t, mustRun(t, b, "show", id, "--json"))
		if len(got.Chunks) != 1 || got.Chunks[0].Content != want {
			t.Fatalf("%s in store b after the import = %+v, want %q", id, got.Chunks, want)
		}
	}
	if r := rathCLI(t, b, "verify"); r.code != 0 {
		t.Fatalf("verify after the import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// newChildEnv makes the test binary run `rath new` repeatedly against a
// store; its value is "dir count tag". TestMain hands it to newChild
// before it starts the binary's PostgreSQL server, which a child neither
// needs nor would stop.
const newChildEnv = "RATH_CLI_TEST_NEW_CHILD"

// newChild runs `rath new` count times against dir, each opening the
// store anew as a separate command would, and prints the ids: the child
// process of TestRun_NewInConcurrentProcesses.
func newChild(spec string) int {
	f := strings.Fields(spec)
	n, _ := strconv.Atoi(f[1])
	for i := range n {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), Config{}, []string{"--dir", f[0], "new", fmt.Sprintf("%s-%d", f[2], i)}, strings.NewReader(""), &out, &errb); code != 0 {
			fmt.Fprintf(os.Stderr, "rath new: exit %d: %s", code, errb.String())
			return 1
		}
		fmt.Print(out.String())
	}
	return 0
}

// TestRun_NewInConcurrentProcesses: processes each running `rath new`
// against one store at the same time derive ids from seeds of their own,
// so their ids are disjoint by construction instead of colliding and being
// retried; every command succeeds and every session holds its own text.
func TestRun_NewInConcurrentProcesses(t *testing.T) {
	const procs, each = 3, 15
	dir := filepath.Join(t.TempDir(), "store")
	mustRun(t, dir, "new", "first") // the store exists before the children race
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ids := make([][]string, procs)
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			cmd := execpkg.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d p%d", newChildEnv, dir, each, p))
			var errb bytes.Buffer
			cmd.Stderr = &errb
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("process %d: %v\n%s", p, err, errb.String())
			}
			for _, f := range strings.Fields(string(out)) {
				if strings.HasPrefix(f, "s-") { // skip anything the test framework prints
					ids[p] = append(ids[p], f)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	rt, err := rath.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	seen := map[string]string{} // id -> text
	seedOwner := map[string]int{}
	for p, list := range ids {
		if len(list) != each {
			t.Fatalf("process %d printed %d ids, want %d: %v", p, len(list), each, list)
		}
		for i, id := range list {
			want := fmt.Sprintf("p%d-%d", p, i)
			if other, dup := seen[id]; dup {
				t.Fatalf("%s was created for %q and for %q", id, other, want)
			}
			seen[id] = want
			s, err := rt.Session(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if cs := s.Chunks(); len(cs) != 1 || cs[0].Content != want {
				t.Fatalf("%s holds %+v, want %q", id, cs, want)
			}
			evs, err := rt.Store().Read(t.Context(), eventlog.Query{Stream: id, Limit: 1})
			if err != nil || len(evs) != 1 {
				t.Fatalf("creation of %s: %v %v", id, evs, err)
			}
			pl, err := evs[0].Decode()
			if err != nil {
				t.Fatal(err)
			}
			seed := pl.(*events.SessionCreated).Derivation.Seed
			if owner, ok := seedOwner[seed]; ok && owner != p {
				t.Fatalf("processes %d and %d derived ids from one seed %q: their ids can collide", owner, p, seed)
			}
			seedOwner[seed] = p
		}
	}
	if v, err := rt.Verify(t.Context(), eventlog.VerifyOptions{}); err != nil || !v.OK() {
		t.Fatalf("verify: %v %v", v, err)
	}
}
