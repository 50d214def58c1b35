package cli

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/sys/unix"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/migrations"
)

// migrationStore is one of the two stores a migration test runs on: a fresh
// runtime directory, or a fresh PostgreSQL database (and a directory for
// the per-process files). It returns the store flags and the directory.
func migrationStore(t *testing.T, backend string) (store []string, dir string, dsn string) {
	t.Helper()
	dir = t.TempDir()
	store = []string{"--dir", dir}
	if backend == "postgres" {
		_, dsn = newDatabase(t)
		store = append(store, "--dsn", dsn)
	}
	return store, dir, dsn
}

// onBothStores runs body in parallel on each store; fresh makes a new
// store of that kind.
func onBothStores(t *testing.T, body func(t *testing.T, fresh func() (store []string, dir, dsn string))) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			body(t, func() ([]string, string, string) { return migrationStore(t, backend) })
		})
	}
}

// rathProcs starts one rath process per argument list at once (each
// started before any is waited for) and returns their results in order.
// A process still running after limit is killed and reported as such:
// the tests that use this wait for processes that must not block.
func rathProcs(t *testing.T, limit time.Duration, argvs ...[]string) []result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmds := make([]*execpkg.Cmd, len(argvs))
	outs := make([][2]bytes.Buffer, len(argvs))
	for i, argv := range argvs {
		cmds[i] = execpkg.CommandContext(ctx, stockRath(t), argv...)
		cmds[i].Env = append(os.Environ(), "RATH_HOME="+t.TempDir())
		cmds[i].Stdout, cmds[i].Stderr = &outs[i][0], &outs[i][1]
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	res := make([]result, len(argvs))
	for i, c := range cmds {
		err := c.Wait()
		res[i] = result{stdout: outs[i][0].String(), stderr: outs[i][1].String()}
		var ee *execpkg.ExitError
		switch {
		case ctx.Err() != nil:
			res[i].code = -1
			res[i].stderr += fmt.Sprintf("\n(killed: still running after %s)", limit)
		case errors.As(err, &ee):
			res[i].code = ee.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
	}
	return res
}

// failures lists the processes that did not exit 0, with what they said.
func failures(argvs [][]string, res []result) []string {
	var bad []string
	for i, r := range res {
		if r.code != 0 {
			bad = append(bad, fmt.Sprintf("rath %s: exit %d: %s", strings.Join(argvs[i], " "), r.code, strings.TrimSpace(r.stderr)))
		}
	}
	return bad
}

// Twenty processes opening one new store at once all succeed: one
// migrates it, the others wait for the migration lock and find the
// schema current (on SQLite most of them failed with "table … already
// exists").
func TestMigrate_ConcurrentFirstOpens(t *testing.T) {
	const openers = 20
	onBothStores(t, func(t *testing.T, fresh func() ([]string, string, string)) {
		store, dir, _ := fresh()
		argvs := make([][]string, openers)
		for i := range argvs {
			argvs[i] = append(append([]string{}, store...), "new", fmt.Sprintf("opener %d", i))
		}
		res := rathProcs(t, 2*time.Minute, argvs...)
		if bad := failures(argvs, res); len(bad) > 0 {
			t.Fatalf("%d of %d first opens failed:\n%s", len(bad), openers, strings.Join(bad, "\n"))
		}
		sessions := decodeJSON[[]map[string]any](t, mustRun(t, dir, append(store[2:], "sessions", "--json")...))
		if len(sessions) != openers {
			t.Fatalf("%d sessions after %d opens", len(sessions), openers)
		}
		if v := decodeJSON[verifyView](t, mustRun(t, dir, append(store[2:], "verify", "--json")...)); !v.OK {
			t.Fatalf("verify = %+v", v)
		}
		ms := decodeJSON[[]migrations.Migration](t, mustRun(t, dir, append(store[2:], "migrate", "status", "--json")...))
		for _, m := range ms {
			if !m.Applied {
				t.Fatalf("migration %d (%s) is pending after the opens", m.Version, m.Source)
			}
		}
	})
}

// `rath worker &` and `rath submit` on a new store, as a user starts
// them: both open it at once; the submit succeeds, the worker stays up
// and runs the submitted run.
func TestMigrate_WorkerAndSubmitOnANewStore(t *testing.T) {
	onBothStores(t, func(t *testing.T, fresh func() ([]string, string, string)) {
		// A few fresh stores: the race is lost at random.
		for i := range 3 {
			store, dir, _ := fresh()
			cas := filepath.Join(t.TempDir(), "cassette.json")
			os.WriteFile(cas, []byte(cassette), 0o644)
			work := filepath.Join(t.TempDir(), "ws")
			os.MkdirAll(work, 0o755)
			w := execpkg.Command(stockRath(t), append(store, "worker", "--backends", "local")...)
			w.Env = append(os.Environ(), "RATH_HOME="+t.TempDir())
			stderr, err := w.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Process.Kill(); w.Wait() })
			sub := rathProcs(t, 2*time.Minute, append(append([]string{}, store...), "submit", "--cassette", cas, "--workspace", work,
				"--tools", "write_workspace_file,run_shell_command", "write", "a", "file"))[0]
			// The worker names itself once its store is open (notices,
			// such as a slow connection's, may come first); a worker that
			// fails to open it exits.
			r := bufio.NewReader(stderr)
			var said strings.Builder
			for {
				line, err := r.ReadString('\n')
				said.WriteString(line)
				if strings.HasPrefix(line, "worker ") {
					break
				}
				if err != nil {
					t.Fatalf("store %d: the worker started with the submit exited:\n%s", i, said.String())
				}
			}
			go r.WriteTo(io.Discard) // keep the worker's stderr drained
			if sub.code != 0 {
				t.Fatalf("store %d: submit started with the worker: exit %d: %s", i, sub.code, sub.stderr)
			}
			id := strings.TrimSpace(sub.stdout)
			if out := mustRun(t, dir, append(store[2:], "wait", "--timeout", "2m", id)...); !strings.Contains(out, id+"\tdone") {
				t.Fatalf("store %d: wait: %s", i, out)
			}
		}
	})
}

// migrationLock is the store's migration lock, held by the test as
// another migrating process would hold it: PostgreSQL's advisory lock on
// a connection of its own, or the flock of the database's lock file.
type migrationLock struct {
	db      *sql.DB // PostgreSQL: the pool holding the lock's connection
	path    string  // SQLite: the lock file
	release func()  // lets go of the lock; later calls do nothing
}

// holdMigrationLock takes the migration lock of the store in dir (or at
// dsn), for the rest of the test or until its release.
func holdMigrationLock(t *testing.T, dir, dsn string) *migrationLock {
	t.Helper()
	var once sync.Once
	l := &migrationLock{path: filepath.Join(dir, rath.DBFile) + migrations.LockSuffix}
	if dsn != "" {
		cfg, err := eventlog.ParsePostgresDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		l.db = stdlib.OpenDB(*cfg)
		t.Cleanup(func() { l.db.Close() })
		conn, err := l.db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(t.Context(), `SELECT pg_advisory_lock($1)`, migrations.LockID); err != nil {
			t.Fatal(err)
		}
		l.release = func() {
			once.Do(func() {
				conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, migrations.LockID)
				conn.Close()
			})
		}
	} else {
		f, err := os.OpenFile(l.path, os.O_RDONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		l.release = func() { once.Do(func() { f.Close() }) }
	}
	t.Cleanup(l.release)
	return l
}

// advisoryLocks counts the holders of (granted) or waiters for advisory
// lock $2 in the current database (advisory locks are per database).
const advisoryLocks = `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted = $1
	AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND ((classid::bigint << 32) | objid::bigint) = $2`

// held tells whether the test still holds the lock.
func (l *migrationLock) held(t *testing.T) bool {
	if l.db != nil {
		var n int
		err := l.db.QueryRowContext(t.Context(), advisoryLocks, true, migrations.LockID).Scan(&n)
		return err == nil && n == 1
	}
	g, err := os.Open(l.path)
	if err != nil {
		return false
	}
	defer g.Close()
	// Another descriptor cannot take it while the test's holds it.
	return errors.Is(unix.Flock(int(g.Fd()), unix.LOCK_EX|unix.LOCK_NB), unix.EWOULDBLOCK)
}

// waitedForBy tells whether process pid waits for the lock: on
// PostgreSQL a backend waits for the advisory lock (pg_locks shows it not
// granted); on SQLite the process holds the lock file open (it opens it
// only to take the lock).
func (l *migrationLock) waitedForBy(t *testing.T, pid int) bool {
	if l.db != nil {
		var n int
		err := l.db.QueryRowContext(t.Context(), advisoryLocks, false, migrations.LockID).Scan(&n)
		return err == nil && n > 0
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && target == l.path {
			return true
		}
	}
	return false
}

// Opening a store whose schema is current takes no lock: many commands
// (appends, listings, migrate status) run to the end while another
// process holds the migration lock (on PostgreSQL each used to wait for
// it, polling every 5 s).
func TestMigrate_OpensOfACurrentStoreDoNotWaitForTheMigrationLock(t *testing.T) {
	const appenders = 8
	onBothStores(t, func(t *testing.T, fresh func() ([]string, string, string)) {
		store, dir, dsn := fresh()
		ids := make([]string, appenders)
		for i := range ids {
			ids[i] = strings.TrimSpace(mustRun(t, dir, append(store[2:], "new", fmt.Sprintf("session %d", i))...))
		}
		lock := holdMigrationLock(t, dir, dsn)
		var argvs [][]string
		for i, id := range ids {
			argvs = append(argvs, append(append([]string{}, store...), "append", id, "--role", "assistant", fmt.Sprintf("reply %d", i)))
		}
		argvs = append(argvs, append(append([]string{}, store...), "sessions"), append(append([]string{}, store...), "migrate", "status"))
		res := rathProcs(t, time.Minute, argvs...)
		if !lock.held(t) {
			t.Fatal("the migration lock was let go while the commands ran")
		}
		if bad := failures(argvs, res); len(bad) > 0 {
			t.Fatalf("%d of %d commands did not finish while the migration lock was held:\n%s", len(bad), len(argvs), strings.Join(bad, "\n"))
		}
	})
}

// A process that finds a new store's migration lock held waits for it,
// and then finds the schema the holder left: here the holder migrates
// nothing, so the waiter migrates once the lock is free.
func TestMigrate_AFirstOpenWaitsForTheMigrationLock(t *testing.T) {
	onBothStores(t, func(t *testing.T, fresh func() ([]string, string, string)) {
		store, dir, dsn := fresh()
		lock := holdMigrationLock(t, dir, dsn)
		cmd := execpkg.Command(stockRath(t), append(store, "new", "after the lock")...)
		cmd.Env = append(os.Environ(), "RATH_HOME="+t.TempDir())
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		giveUp := time.After(time.Minute)
		for !lock.waitedForBy(t, cmd.Process.Pid) {
			select {
			case err := <-done:
				t.Fatalf("rath new ended (%v) without waiting for the held migration lock:\n%s", err, errb.String())
			case <-giveUp:
				cmd.Process.Kill()
				t.Fatalf("rath new is not waiting for the migration lock:\n%s", errb.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		lock.release()
		if err := <-done; err != nil {
			t.Fatalf("rath new after the lock was let go: %v\n%s", err, errb.String())
		}
		if out := mustRun(t, dir, append(store[2:], "show", strings.TrimSpace(out.String()))...); !strings.Contains(out, "after the lock") {
			t.Fatalf("show: %s", out)
		}
	})
}
