package opensandbox

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorath/rath/sandbox"
)

const (
	// streamGrace is how long past a command's timeout the client waits
	// for execd to end the stream before it gives up on the server and
	// interrupts the command itself.
	streamGrace = 15 * time.Second
	// interruptTimeout bounds the request that kills an abandoned command.
	interruptTimeout = 10 * time.Second
	// listDepthAll is the depth asked of execd for a recursive listing.
	listDepthAll = 1 << 16
	// fileMode is the mode of files WriteFile creates, in execd's
	// octal-digits convention.
	fileMode = 644
)

// Sandbox is one OpenSandbox container. It implements sandbox.Sandbox and
// sandbox.Remover and is safe for concurrent use.
//
// Differences from the host backends, all inherent to the remote API:
// stdout and stderr are rebuilt from execd's per-line events (a missing
// final newline is added back); stdin is not supported; Stat and List
// report a symlink as a symlink rather than following it; the server
// resolves symlinks for reads and writes inside its container.
type Sandbox struct {
	id, workdir string
	ex          *execd
	lc          *lifecycle
	owned       bool // created by Open, so Close deletes it

	timeout   time.Duration
	maxOutput int
	maxRead   int64
	maxFrame  int

	life   context.Context // cancelled by Close
	cancel context.CancelCauseFunc

	mu      sync.Mutex // protects closed and the Add side of running
	closed  bool
	running sync.WaitGroup

	writeMu sync.Mutex // serialises WriteFile and Remove (before/after hashes)
}

var (
	_ sandbox.Sandbox = (*Sandbox)(nil)
	_ sandbox.Remover = (*Sandbox)(nil)
)

func newSandbox(id, workdir string, ex *execd, lc *lifecycle, b *Backend) *Sandbox {
	s := &Sandbox{
		id: id, workdir: workdir, ex: ex, lc: lc,
		timeout:   cmp.Or(b.Timeout, sandbox.DefaultTimeout),
		maxOutput: cmp.Or(b.MaxOutput, sandbox.DefaultMaxOutput),
		maxRead:   cmp.Or(b.MaxReadBytes, sandbox.DefaultMaxReadBytes),
		maxFrame:  cmp.Or(b.MaxFrame, DefaultMaxFrame),
	}
	s.life, s.cancel = context.WithCancelCause(context.Background())
	return s
}

// ID returns the server's sandbox id.
func (s *Sandbox) ID() string { return s.id }

// Workdir returns the workspace directory inside the container.
func (s *Sandbox) Workdir() string { return s.workdir }

// enter registers a call and ties ctx to the sandbox's life; it fails once
// Close has started.
func (s *Sandbox) enter(ctx context.Context) (context.Context, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, sandbox.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.running.Add(1)
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.life, func() { cancel(context.Cause(s.life)) })
	return ctx, func() {
		stop()
		cancel(nil)
		s.running.Done()
	}, nil
}

// resolve turns a caller's path into the workspace-relative and the
// absolute container path.
func (s *Sandbox) resolve(op, p string) (rel, abs string, err error) {
	rel, err = sandbox.CleanPath(s.workdir, p)
	if err != nil {
		return "", "", sandbox.PathErr(op, p, err)
	}
	if rel == "." {
		return rel, s.workdir, nil
	}
	if s.workdir == "/" {
		return rel, "/" + rel, nil
	}
	return rel, s.workdir + "/" + rel, nil
}

// mapErr puts a remote failure in the sandbox vocabulary.
func mapErr(op, p string, err error) error {
	if errors.Is(err, sandbox.ErrNotFound) {
		return sandbox.PathErr(op, p, sandbox.ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w", op, p, err)
}

// Exec runs the command through execd's /command stream.
func (s *Sandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	var res sandbox.ExecResult
	if req.Command == "" {
		return res, errors.New("exec: empty command")
	}
	if len(req.Stdin) > 0 {
		return res, fmt.Errorf("exec: stdin: %w", sandbox.ErrUnsupported)
	}
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return res, err
	}
	defer leave()
	_, cwd, err := s.resolve("exec", req.Dir)
	if err != nil {
		return res, err
	}
	if cwd != s.workdir {
		ri, err := s.ex.info(ctx, cwd)
		if err != nil {
			return res, mapErr("exec", req.Dir, err)
		}
		if ri.Type != "directory" {
			return res, sandbox.PathErr("exec", req.Dir, sandbox.ErrNotDir)
		}
	}
	timeout := cmp.Or(max(req.Timeout, 0), s.timeout)
	stdout := sandbox.NewCappedBuffer(cmp.Or(max(req.MaxStdout, 0), s.maxOutput))
	stderr := sandbox.NewCappedBuffer(cmp.Or(max(req.MaxStderr, 0), s.maxOutput))

	errServerSilent := errors.New("the server did not end the command at its timeout")
	streamCtx, cancel := context.WithTimeoutCause(ctx, timeout+streamGrace, errServerSilent)
	defer cancel()
	start := time.Now()
	// HOME is the workspace, as on the host backends; the request may say
	// otherwise.
	envs := map[string]string{"HOME": s.workdir}
	maps.Copy(envs, req.Env)
	body, err := s.ex.startCommand(streamCtx, commandRequest{
		Command: req.Command,
		Cwd:     cwd,
		Timeout: timeout.Milliseconds(),
		Envs:    envs,
	})
	if err != nil {
		return res, fmt.Errorf("exec: %w", err)
	}
	defer body.Close()

	fr := newFrameReader(body, s.maxFrame, func(head, tail []byte, n int64) {
		// The frame never reached us; count it against its stream.
		if isStderr := []byte(`"stderr"`); bytes.Contains(head, isStderr) || bytes.Contains(tail, isStderr) {
			stderr.Discard(n)
		} else {
			stdout.Discard(n)
		}
	})
	var execID string
	finished := false
	res.ExitCode = -1
	for !finished {
		ev, err := fr.next()
		if err != nil {
			break
		}
		switch ev.Type {
		case "init":
			execID = ev.Text
		case "stdout", "stderr":
			w := stdout
			if ev.Type == "stderr" {
				w = stderr
			}
			// One event per line, terminator stripped; "\n" is an empty
			// line.
			if ev.Text != "\n" {
				io.WriteString(w, ev.Text)
			}
			io.WriteString(w, "\n")
		case "execution_complete":
			res.ExitCode, finished = 0, true
		case "error":
			finished = true
			if ev.Error == nil {
				break
			}
			if code, err := strconv.Atoi(ev.Error.Value); err == nil {
				res.ExitCode = code
			} else {
				// The command could not start; execd says why.
				fmt.Fprintf(stderr, "%s: %s\n", ev.Error.Name, ev.Error.Value)
			}
		}
	}
	res.Duration = time.Since(start)
	res.Stdout, res.StdoutTruncated, res.StdoutBytes = stdout.Bytes(), stdout.Truncated(), stdout.Total()
	res.Stderr, res.StderrTruncated, res.StderrBytes = stderr.Bytes(), stderr.Truncated(), stderr.Total()
	switch {
	case finished && res.ExitCode == -1 && res.Duration >= timeout:
		// execd killed the process group at the timeout.
		res.TimedOut = true
		return res, fmt.Errorf("exec: %w after %s", sandbox.ErrTimeout, timeout)
	case finished:
		return res, nil
	}
	// The stream broke off: we gave up, the caller did, or the server did.
	s.interrupt(execID)
	switch cause := context.Cause(streamCtx); {
	case ctx.Err() != nil:
		return res, fmt.Errorf("exec: %w", context.Cause(ctx))
	case errors.Is(cause, errServerSilent):
		res.TimedOut = true
		return res, fmt.Errorf("exec: %w after %s (%v)", sandbox.ErrTimeout, timeout, cause)
	default:
		return res, fmt.Errorf("exec: the command stream ended before the command finished")
	}
}

// interrupt kills an abandoned command, best effort: the stream is already
// gone and the sandbox may be too.
func (s *Sandbox) interrupt(execID string) {
	if execID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), interruptTimeout)
	defer cancel()
	_ = s.ex.interrupt(ctx, execID)
}

// ReadFile downloads a regular file.
func (s *Sandbox) ReadFile(ctx context.Context, p string) ([]byte, error) {
	const op = "read"
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	_, abs, err := s.resolve(op, p)
	if err != nil {
		return nil, err
	}
	ri, err := s.ex.info(ctx, abs)
	if err != nil {
		return nil, mapErr(op, p, err)
	}
	switch ri.Type {
	case "directory":
		return nil, sandbox.PathErr(op, p, sandbox.ErrIsDir)
	case "file", "symlink":
	default:
		return nil, sandbox.PathErr(op, p, sandbox.ErrNotRegular)
	}
	if ri.Size > s.maxRead {
		return nil, sandbox.PathErr(op, p, fmt.Errorf("%w: %d bytes, limit %d", sandbox.ErrTooLarge, ri.Size, s.maxRead))
	}
	body, err := s.ex.download(ctx, abs)
	if err != nil {
		return nil, mapErr(op, p, err)
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, s.maxRead+1))
	if err != nil {
		return nil, mapErr(op, p, err)
	}
	if int64(len(data)) > s.maxRead {
		return nil, sandbox.PathErr(op, p, fmt.Errorf("%w: more than %d bytes", sandbox.ErrTooLarge, s.maxRead))
	}
	return data, nil
}

// hashRemote returns the content hash of the file at abs.
func (s *Sandbox) hashRemote(ctx context.Context, abs string) (string, error) {
	body, err := s.ex.download(ctx, abs)
	if err != nil {
		return "", err
	}
	defer body.Close()
	return sandbox.HashReader(body)
}

// existing returns the hash of the regular file at abs ("" when absent)
// and refuses directories and special files.
func (s *Sandbox) existing(ctx context.Context, op, p, abs string) (remoteInfo, string, error) {
	ri, err := s.ex.info(ctx, abs)
	if errors.Is(err, sandbox.ErrNotFound) {
		return remoteInfo{}, "", nil
	}
	if err != nil {
		return ri, "", mapErr(op, p, err)
	}
	switch ri.Type {
	case "directory":
		return ri, "", sandbox.PathErr(op, p, sandbox.ErrIsDir)
	case "file":
		h, err := s.hashRemote(ctx, abs)
		if err != nil {
			return ri, "", mapErr(op, p, err)
		}
		return ri, h, nil
	case "symlink":
		return ri, "", nil
	}
	return ri, "", sandbox.PathErr(op, p, sandbox.ErrNotRegular)
}

// WriteFile uploads data, creating parent directories.
func (s *Sandbox) WriteFile(ctx context.Context, p string, data []byte) (sandbox.FileChange, error) {
	const op = "write"
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return sandbox.FileChange{}, err
	}
	defer leave()
	rel, abs, err := s.resolve(op, p)
	if err != nil {
		return sandbox.FileChange{}, err
	}
	if rel == "." {
		return sandbox.FileChange{}, sandbox.PathErr(op, p, sandbox.ErrIsDir)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, before, err := s.existing(ctx, op, p, abs)
	if err != nil {
		return sandbox.FileChange{}, err
	}
	if err := s.ex.upload(ctx, abs, data, fileMode); err != nil {
		return sandbox.FileChange{}, mapErr(op, p, err)
	}
	return sandbox.FileChange{Path: rel, Before: before, After: sandbox.Hash(data)}, nil
}

// Remove deletes one file or symlink.
func (s *Sandbox) Remove(ctx context.Context, p string) (sandbox.FileChange, error) {
	const op = "remove"
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return sandbox.FileChange{}, err
	}
	defer leave()
	rel, abs, err := s.resolve(op, p)
	if err != nil {
		return sandbox.FileChange{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	ri, before, err := s.existing(ctx, op, p, abs)
	if err != nil {
		return sandbox.FileChange{}, err
	}
	if ri.Type == "" {
		return sandbox.FileChange{}, sandbox.PathErr(op, p, sandbox.ErrNotFound)
	}
	if err := s.ex.removeFile(ctx, abs); err != nil {
		return sandbox.FileChange{}, mapErr(op, p, err)
	}
	return sandbox.FileChange{Path: rel, Before: before}, nil
}

func (s *Sandbox) info(rel string, ri remoteInfo) sandbox.FileInfo {
	return sandbox.FileInfo{Path: rel, Size: ri.Size, Mode: ri.fileMode(), ModTime: ri.ModifiedAt}
}

// Stat describes one path (without following a final symlink).
func (s *Sandbox) Stat(ctx context.Context, p string) (sandbox.FileInfo, error) {
	const op = "stat"
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return sandbox.FileInfo{}, err
	}
	defer leave()
	rel, abs, err := s.resolve(op, p)
	if err != nil {
		return sandbox.FileInfo{}, err
	}
	ri, err := s.ex.info(ctx, abs)
	if err != nil {
		return sandbox.FileInfo{}, mapErr(op, p, err)
	}
	return s.info(rel, ri), nil
}

// List lists a directory through execd.
func (s *Sandbox) List(ctx context.Context, p string, recursive bool) ([]sandbox.FileInfo, error) {
	const op = "list"
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	_, abs, err := s.resolve(op, p)
	if err != nil {
		return nil, err
	}
	ri, err := s.ex.info(ctx, abs)
	if err != nil {
		return nil, mapErr(op, p, err)
	}
	if ri.Type != "directory" {
		return nil, sandbox.PathErr(op, p, sandbox.ErrNotDir)
	}
	depth := 1
	if recursive {
		depth = listDepthAll
	}
	entries, err := s.ex.list(ctx, abs, depth)
	if err != nil {
		return nil, mapErr(op, p, err)
	}
	out := make([]sandbox.FileInfo, 0, len(entries))
	for _, e := range entries {
		rel, err := sandbox.CleanPath(s.workdir, e.Path)
		if err != nil || rel == "." {
			continue // not below the workspace: nothing a caller asked for
		}
		out = append(out, s.info(rel, e))
	}
	slices.SortFunc(out, func(a, b sandbox.FileInfo) int { return cmp.Compare(a.Path, b.Path) })
	return out, nil
}

// Close interrupts running calls and, when Open created the sandbox,
// deletes it on the server. An attached sandbox (spec id=...) is left
// running.
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
	if !s.owned {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err := s.lc.delete(ctx, s.id)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return nil // expired or deleted already
	}
	return err
}
