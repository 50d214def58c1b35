package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoPostgres is returned when no PostgreSQL installation is found.
var ErrNoPostgres = errors.New("pgtest: no PostgreSQL binaries found (apt-get install -y postgresql)")

// Options tune a server. The zero value is a durable server (fsync on), as a
// user would run it.
type Options struct {
	// BinDir holds initdb and postgres. Empty means the newest
	// /usr/lib/postgresql/*/bin.
	BinDir string
	// Settings are extra `-c name=value` server settings.
	Settings map[string]string
	// StartTimeout bounds initdb plus startup. Zero means 60 s.
	StartTimeout time.Duration
}

// Server is a running throwaway PostgreSQL cluster.
type Server struct {
	dir  string
	port int
	bin  string
	args []string
	cmd  *exec.Cmd
	cred *syscall.Credential
	// owner is dir's owner file, locked while dir is this process's
	// (leftovers.go).
	owner *os.File

	logMu sync.Mutex
	log   bytes.Buffer

	stopOnce sync.Once
	exited   <-chan struct{}
}

// Start makes a new cluster and starts it. Call Stop when done.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := binDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	removeLeftovers(os.TempDir(), time.Now())
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	owner, err := own(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: lock %s: %w", dir, err)
	}
	s := &Server{dir: dir, bin: bin, owner: owner}
	if os.Geteuid() == 0 {
		// The server refuses root: hand the directory to the postgres user.
		cred, err := postgresUser()
		if err != nil {
			s.remove()
			return nil, err
		}
		s.cred = cred
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			s.remove()
			return nil, fmt.Errorf("pgtest: chown %s: %w", dir, err)
		}
	}
	if err := s.initdb(ctx); err != nil {
		s.remove()
		return nil, err
	}
	if err := s.start(ctx, opts.Settings); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func binDir(given string) (string, error) {
	if given != "" {
		return given, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(matches) == 0 {
		return "", ErrNoPostgres
	}
	sort.Slice(matches, func(i, j int) bool { return version(matches[i]) > version(matches[j]) })
	return filepath.Dir(matches[0]), nil
}

func version(postgresPath string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(postgresPath))))
	return v
}

func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root needs the postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", "HOME=" + s.dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

func (s *Server) initdb(ctx context.Context) error {
	cmd := s.command(ctx, "initdb", "-D", s.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	return nil
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// DataDir is the cluster's data directory (tables, pg_wal): tests grep
// it for what must not be stored in clear, after a CHECKPOINT.
func (s *Server) DataDir() string { return s.dataDir() }

func (s *Server) start(ctx context.Context, settings map[string]string) error {
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		s.port = port
		args := []string{"-D", s.dataDir(), "-p", strconv.Itoa(port), "-k", s.dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200"}
		keys := make([]string, 0, len(settings))
		for k := range settings {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			args = append(args, "-c", k+"="+settings[k])
		}
		s.args = args
		exited, err := s.launch()
		if err != nil {
			return err
		}
		if err = s.waitReady(ctx, exited); err == nil {
			return nil
		}
		<-exited
		// The port may have been taken between picking and binding it.
		if attempt < 3 && strings.Contains(s.Log(), "could not bind") {
			continue
		}
		return err
	}
}

func (s *Server) waitReady(ctx context.Context, exited <-chan struct{}) error {
	for {
		probe := s.command(ctx, "pg_isready", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres", "-q")
		if probe.Run() == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("pgtest: postgres exited during startup:\n%s", s.Log())
		case <-ctx.Done():
			s.cmd.Process.Signal(syscall.SIGQUIT)
			return fmt.Errorf("pgtest: postgres not ready: %w\n%s", ctx.Err(), s.Log())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: pick a port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Port is the loopback TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// DSN is a connection string for the named database as the superuser
// postgres (trust authentication, loopback only).
func (s *Server) DSN(database string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), Path: "/" + database}
	u.RawQuery = "sslmode=disable"
	return u.String()
}

// CreateDatabase makes a new empty database and returns its DSN. Tests that
// share one server each take their own database.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	if err := s.Exec(ctx, "postgres", fmt.Sprintf(`CREATE DATABASE %q`, name)); err != nil {
		return "", err
	}
	return s.DSN(name), nil
}

// CreateDatabaseFrom creates a database as a copy of template (which no
// session may be connected to) and returns its DSN: a suite that needs
// many databases of one schema migrates a template once and copies it,
// which costs a fraction of migrating each.
func (s *Server) CreateDatabaseFrom(ctx context.Context, name, template string) (string, error) {
	if err := s.Exec(ctx, "postgres", fmt.Sprintf(`CREATE DATABASE %q TEMPLATE %q`, name, template)); err != nil {
		return "", err
	}
	return s.DSN(name), nil
}

// Exec runs SQL with psql against a database, as a person with psql would
// (tamper tests edit rows this way).
func (s *Server) Exec(ctx context.Context, database, sql string) error {
	cmd := s.command(ctx, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres", "-d", database, "-c", sql)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: psql: %w\n%s", err, out)
	}
	return nil
}

// Log is what the server has printed so far.
func (s *Server) Log() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.String()
}

// Kill stops the server at once (SIGQUIT: immediate shutdown, as after a
// crash) and waits for it, keeping the data directory so Restart can bring
// it back.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGQUIT)
		<-s.exited
	}
}

// Restart starts a killed server again on the same port, settings and data.
func (s *Server) Restart(ctx context.Context) error {
	exited, err := s.launch()
	if err != nil {
		return err
	}
	return s.waitReady(ctx, exited)
}

// launch starts the postmaster with s.args.
func (s *Server) launch() (<-chan struct{}, error) {
	// Not CommandContext: the server outlives the start timeout.
	cmd := s.command(context.Background(), "postgres", s.args...)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT // a crashed test binary takes its server down
	cmd.SysProcAttr.Setpgid = true
	cmd.Stdout, cmd.Stderr = logWriter{s}, logWriter{s}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	return exited, nil
}

// Stop shuts the server down (fast mode) and removes its directory. It is
// safe to call more than once. A directory whose process died without
// Stop is removed by a later Start (leftovers.go).
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
			select {
			case <-s.exited:
			case <-time.After(10 * time.Second):
				s.cmd.Process.Kill()
				<-s.exited
			}
		}
		s.remove()
	})
}

// remove deletes the server's directory, then lets its owner file go.
func (s *Server) remove() {
	os.RemoveAll(s.dir)
	s.owner.Close()
}

// logWriter collects the server's output; its two pipes write concurrently.
type logWriter struct{ s *Server }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.logMu.Lock()
	defer w.s.logMu.Unlock()
	return w.s.log.Write(p)
}
