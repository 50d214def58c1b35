package opensandboxtest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gorath/rath/sandbox/internal/proc"
)

// running is one command in progress.
type running struct {
	pgid int
}

func (b *box) interrupt(id string) {
	b.mu.Lock()
	r := b.execs[id]
	b.mu.Unlock()
	if r != nil {
		syscall.Kill(-r.pgid, syscall.SIGKILL)
	}
}

func (b *box) killAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.execs {
		syscall.Kill(-r.pgid, syscall.SIGKILL)
	}
}

// streamWriter writes events as execd does: one JSON object per frame,
// frames separated by a blank line, flushed at once. Writes after the
// client went away are dropped, like execd's (the command keeps running).
//
// An http.ResponseWriter must not be used after its handler returned, so
// the handler waits for every goroutine that emits and then closes the
// writer; a late emit is dropped instead of racing with the server's own
// final flush.
type streamWriter struct {
	mu     sync.Mutex
	w      http.ResponseWriter
	prefix string
	closed bool
}

// close makes later emits no-ops; the handler defers it.
func (sw *streamWriter) close() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.closed = true
}

// frame is execd's event, fields in execd's order (type first).
type frame struct {
	Type          string      `json:"type"`
	Text          string      `json:"text,omitempty"`
	ExecutionTime int64       `json:"execution_time,omitempty"`
	Timestamp     int64       `json:"timestamp,omitempty"`
	Error         *frameError `json:"error,omitempty"`
}

type frameError struct {
	Name      string   `json:"ename"`
	Value     string   `json:"evalue"`
	Traceback []string `json:"traceback"`
}

func (sw *streamWriter) emit(ev frame) {
	data, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.closed {
		return
	}
	io.WriteString(sw.w, sw.prefix)
	sw.w.Write(data)
	io.WriteString(sw.w, "\n\n")
	http.NewResponseController(sw.w).Flush()
}

// command runs POST /command in the foreground.
func (s *Server) command(w http.ResponseWriter, r *http.Request, b *box) {
	var req struct {
		Command string            `json:"command"`
		Cwd     string            `json:"cwd"`
		Timeout int64             `json:"timeout"` // ms
		Envs    map[string]string `json:"envs"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Command == "" {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("invalid request body: %v", err))
		return
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = s.opts.Root
	}
	if hp, err := s.hostPath(cwd); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", err.Error())
		return
	} else if fi, err := os.Stat(hp); err != nil || !fi.IsDir() {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("working directory %s does not exist", cwd))
		return
	}
	shell, err := exec.LookPath("bash")
	if err != nil {
		shell = "/bin/sh"
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"}
	for k, v := range req.Envs {
		env = append(env, k+"="+v)
	}
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	cmd := &exec.Cmd{Path: shell, Args: []string{shell, "-c", req.Command}, Dir: cwd, Env: env, Stdout: outW, Stderr: errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	sw := &streamWriter{w: w}
	defer sw.close()
	if s.opts.DataPrefix {
		sw.prefix = "data: "
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	id := newID()
	sw.emit(frame{Type: "init", Text: id, Timestamp: time.Now().UnixMilli()})

	start := time.Now()
	// Like execd in its container, the command gets no descriptor of the
	// server's (this test process's) beyond its pipes.
	err = proc.CloseOnExec()
	if err == nil {
		err = cmd.Start()
	}
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		sw.emit(frame{Type: "error", Error: &frameError{Name: "CommandExecError", Value: err.Error(), Traceback: []string{err.Error()}}})
		s.linger(r)
		return
	}
	pgid := cmd.Process.Pid
	b.mu.Lock()
	b.execs[id] = &running{pgid: pgid}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.execs, id)
		b.mu.Unlock()
	}()

	var readers sync.WaitGroup
	readers.Go(func() { s.lines(sw, "stdout", outR) })
	readers.Go(func() { s.lines(sw, "stderr", errR) })
	stopPings := make(chan struct{})
	var pinger sync.WaitGroup
	pinger.Go(func() {
		t := time.NewTicker(s.opts.PingInterval)
		defer t.Stop()
		for {
			select {
			case <-stopPings:
				return
			case <-t.C:
				sw.emit(frame{Type: "ping", Text: "pong"})
			}
		}
	})
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		timer := time.NewTimer(time.Duration(req.Timeout) * time.Millisecond)
		defer timer.Stop()
		timeout = timer.C
	}
	var werr error
	select {
	case werr = <-waited:
	case <-timeout:
		syscall.Kill(-pgid, syscall.SIGKILL)
		werr = <-waited
	case <-s.quit:
		syscall.Kill(-pgid, syscall.SIGKILL)
		werr = <-waited
	}
	// Leftover background jobs would hold the pipes open; end them so the
	// stream ends (a deviation from execd, which polls files instead).
	syscall.Kill(-pgid, syscall.SIGKILL)
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(500 * time.Millisecond):
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	// The pinger may be in the middle of an emit: wait for it, so no ping
	// follows the terminal event or outlives the handler.
	close(stopPings)
	pinger.Wait()

	var exitErr *exec.ExitError
	switch {
	case werr == nil:
		sw.emit(frame{Type: "execution_complete", ExecutionTime: time.Since(start).Milliseconds()})
	case errors.As(werr, &exitErr) && exitErr.ExitCode() >= 0:
		code := strconv.Itoa(exitErr.ExitCode())
		sw.emit(frame{Type: "error", Error: &frameError{Name: "CommandExecError", Value: code, Traceback: []string{"exit status " + code}}})
	default:
		sw.emit(frame{Type: "error", Error: &frameError{Name: "CommandExecError", Value: "-1", Traceback: []string{"signal: killed"}}})
	}
	s.linger(r)
}

// linger keeps the connection open after the terminal event for
// Options.Linger, as execd does for about a second (negative: until the
// client hangs up).
func (s *Server) linger(r *http.Request) {
	var end <-chan time.Time
	if s.opts.Linger > 0 {
		t := time.NewTimer(s.opts.Linger)
		defer t.Stop()
		end = t.C
	}
	select {
	case <-r.Context().Done():
	case <-s.quit:
	case <-end:
	}
}

// lines sends one event per output line, without its terminator; an
// empty line is sent as "\n", as execd does. A line longer than MaxLine
// is sent in pieces.
func (s *Server) lines(sw *streamWriter, typ string, r io.Reader) {
	br := bufio.NewReaderSize(r, s.opts.MaxLine)
	for {
		line, err := br.ReadSlice('\n')
		text := string(line)
		if len(text) > 0 && text[len(text)-1] == '\n' {
			text = text[:len(text)-1]
			if len(text) > 0 && text[len(text)-1] == '\r' {
				text = text[:len(text)-1]
			}
			if text == "" {
				text = "\n"
			}
		}
		if text != "" {
			sw.emit(frame{Type: typ, Text: text, Timestamp: time.Now().UnixMilli()})
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
