package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/internal/hostfs"
	"github.com/gorath/rath/sandbox/internal/proc"
)

// Launcher builds the process that runs one request. dir is the request's
// working directory, already checked to be a directory inside the
// workspace, as a clean relative path.
type Launcher interface {
	Command(req sandbox.ExecRequest, dir string) (proc.Command, error)
}

// Options are the per-sandbox defaults; zero values mean the sandbox
// package's defaults.
type Options struct {
	Timeout   time.Duration
	MaxOutput int
}

// Sandbox implements sandbox.Sandbox and sandbox.Remover on a host
// workspace. It is safe for concurrent use.
type Sandbox struct {
	*hostfs.Workspace
	id     string
	launch Launcher
	opts   Options

	// life is cancelled by Close; every Exec's context is tied to it so
	// Close kills running commands.
	life   context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex // protects closed and the Add side of running
	closed  bool
	running sync.WaitGroup
}

var (
	_ sandbox.Sandbox = (*Sandbox)(nil)
	_ sandbox.Remover = (*Sandbox)(nil)
	_ sandbox.Walker  = (*Sandbox)(nil)
)

// New returns a sandbox over ws whose commands are launched by l.
func New(id string, ws *hostfs.Workspace, l Launcher, opts Options) *Sandbox {
	if opts.Timeout <= 0 {
		opts.Timeout = sandbox.DefaultTimeout
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = sandbox.DefaultMaxOutput
	}
	life, cancel := context.WithCancelCause(context.Background())
	return &Sandbox{Workspace: ws, id: id, launch: l, opts: opts, life: life, cancel: cancel}
}

// ID implements sandbox.Sandbox.
func (s *Sandbox) ID() string { return s.id }

// enter registers a call; it fails once Close has started.
func (s *Sandbox) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return sandbox.ErrClosed
	}
	s.running.Add(1)
	return nil
}

// Exec implements sandbox.Sandbox.
func (s *Sandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if req.Command == "" {
		return sandbox.ExecResult{}, errors.New("exec: empty command")
	}
	if err := s.enter(); err != nil {
		return sandbox.ExecResult{}, err
	}
	defer s.running.Done()
	dir, err := s.DirPath("exec", req.Dir)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if req.Timeout <= 0 {
		req.Timeout = s.opts.Timeout
	}
	if req.MaxStdout <= 0 {
		req.MaxStdout = s.opts.MaxOutput
	}
	if req.MaxStderr <= 0 {
		req.MaxStderr = s.opts.MaxOutput
	}
	cmd, err := s.launch.Command(req, dir)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.life, func() { cancel(context.Cause(s.life)) })
	defer stop()
	res, err := proc.Run(ctx, cmd)
	if err != nil {
		return res, fmt.Errorf("exec: %w", err)
	}
	return res, nil
}

// ReadFile implements sandbox.Sandbox.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.running.Done()
	return s.Workspace.ReadFile(ctx, p)
}

// WriteFile implements sandbox.Sandbox.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) (sandbox.FileChange, error) {
	if err := s.enter(); err != nil {
		return sandbox.FileChange{}, err
	}
	defer s.running.Done()
	return s.Workspace.WriteFile(ctx, p, data)
}

// Remove implements sandbox.Remover.
func (s *Sandbox) Remove(ctx context.Context, p string) (sandbox.FileChange, error) {
	if err := s.enter(); err != nil {
		return sandbox.FileChange{}, err
	}
	defer s.running.Done()
	return s.Workspace.Remove(ctx, p)
}

// List implements sandbox.Sandbox.
func (s *Sandbox) List(ctx context.Context, p string, recursive bool) ([]sandbox.FileInfo, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.running.Done()
	return s.Workspace.List(ctx, p, recursive)
}

// Walk implements sandbox.Walker.
func (s *Sandbox) Walk(ctx context.Context, p string, fn func(sandbox.FileInfo) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.running.Done()
	return s.Workspace.Walk(ctx, p, fn)
}

// Stat implements sandbox.Sandbox.
func (s *Sandbox) Stat(ctx context.Context, p string) (sandbox.FileInfo, error) {
	if err := s.enter(); err != nil {
		return sandbox.FileInfo{}, err
	}
	defer s.running.Done()
	return s.Workspace.Stat(ctx, p)
}

// Close kills running commands, waits for every call in progress and
// closes the workspace root. The directory and its files stay.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel(sandbox.ErrClosed)
	s.running.Wait()
	return s.Workspace.Close()
}
