package memory_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/memory"
)

// firstUseEnv names the runtime directory of a TestFirstUseChild process.
const firstUseEnv = "RATH_MEMORY_FIRST_USE_CHILD"

// TestFirstUseChild is not a test: it is one of the processes of
// TestLocal_FirstUseByManyProcesses. It opens the runtime, says "ready",
// waits for the go file, then opens the runtime's memory (the first use:
// no index exists yet) and remembers one thing.
func TestFirstUseChild(t *testing.T) {
	dir := os.Getenv(firstUseEnv)
	if dir == "" {
		t.Skip("helper process of TestLocal_FirstUseByManyProcesses")
	}
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: dir, Memory: memory.LocalOptions{LockTimeout: time.Minute}})
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	m, err := rt.Memory(ctx)
	if err != nil {
		fail(err)
	}
	if _, err := m.Remember(ctx, "user/ann", fmt.Sprintf("process %d was here", os.Getpid()), nil); err != nil {
		fail(err)
	}
	if err := rt.Close(); err != nil {
		fail(err)
	}
	fmt.Println("ok")
	os.Exit(0)
}

// Processes that open a runtime's memory for the first time at once all
// succeed: one creates the index, the others open it in turn.
func TestLocal_FirstUseByManyProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	const procs = 6
	for round := range 2 {
		dir := t.TempDir()
		rt := MustOpenRuntime(t, dir) // the database exists; the index does not
		rt.Close()
		cmds := make([]*exec.Cmd, procs)
		outs := make([]*strings.Builder, procs)
		errs := make([]*strings.Builder, procs)
		read := make([]chan struct{}, procs)
		for i := range cmds {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFirstUseChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), firstUseEnv+"="+dir)
			outs[i], errs[i], read[i] = &strings.Builder{}, &strings.Builder{}, make(chan struct{})
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = errs[i]
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stdout)
			for sc.Scan() { // wait for "ready" (or an error)
				fmt.Fprintln(outs[i], sc.Text())
				if sc.Text() == "ready" || strings.HasPrefix(sc.Text(), "error") {
					break
				}
			}
			go func() {
				defer close(read[i])
				for sc.Scan() {
					fmt.Fprintln(outs[i], sc.Text())
				}
			}()
			cmds[i] = cmd
		}
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for i, cmd := range cmds {
			<-read[i] // all of stdout read, as Wait requires
			if err := cmd.Wait(); err != nil {
				t.Errorf("round %d: process %d: %v\n%s%s", round, i, err, outs[i], errs[i])
			}
		}
		if t.Failed() {
			return
		}
		rt = MustOpenRuntime(t, dir)
		m, err := rt.Memory(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		hits, err := m.Recall(t.Context(), "user/ann", "process was here", 2*procs)
		if err != nil || len(hits) != procs {
			t.Fatalf("round %d: %d memories recalled, want %d (%v)", round, len(hits), procs, err)
		}
		rt.Close()
	}
}
