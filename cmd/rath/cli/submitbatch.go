package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gorath/rath"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/internal/console"
	"github.com/spf13/cobra"
)

// maxBatchLine bounds one line of a batch (a prompt can be long; a line
// past this is refused with its number, not read into memory whole).
const maxBatchLine = 4 << 20

// submitLine is one run of "rath submit --batch" and of POST /api/runs:
// the prompt and the flags of "rath submit", by their names with "_" for
// "-". A field left out takes the value of the command's flag (its
// default, or what the command line gave); an unknown field is an error.
type submitLine struct {
	Prompt    string    `json:"prompt"`
	Workflow  *string   `json:"workflow"`
	Model     *string   `json:"model"`
	Provider  *string   `json:"provider"`
	Cassette  *string   `json:"cassette"`
	Workspace *string   `json:"workspace"`
	Backend   *string   `json:"backend"`
	Tools     *string   `json:"tools"`
	MCP       *[]string `json:"mcp"`
	System    *string   `json:"system"`
	NoStream  *bool     `json:"no_stream"`
	MaxRounds *int      `json:"max_rounds"`
	Memory    *[]string `json:"memory"`
	Approve   *[]string `json:"approve"`
}

// SubmitLineError is a batch line (or a run of POST /api/runs) that was
// refused; nothing of its batch was submitted. Line counts from 1.
type SubmitLineError struct {
	Line int
	Err  error
}

func (e *SubmitLineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *SubmitLineError) Unwrap() error { return e.Err }

// lineError is a *SubmitLineError for line n. A flag's usage error
// becomes a plain one: the command was called right, its input is bad,
// and the line number must not be lost to the usage message.
func lineError(n int, err error) error {
	var ue *usageError
	if errors.As(err, &ue) {
		err = ue.err
	}
	return &SubmitLineError{Line: n, Err: err}
}

// decodeSubmitLine parses one run, refusing unknown fields and trailing
// data.
func decodeSubmitLine(raw []byte) (submitLine, error) {
	var l submitLine
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return l, fmt.Errorf("not a run object: %w", err)
	}
	if dec.More() {
		return l, errors.New("not a run object: more than one JSON value")
	}
	if strings.TrimSpace(l.Prompt) == "" {
		return l, errors.New("prompt is required")
	}
	return l, nil
}

// apply overrides base with the fields the line sets.
func (l submitLine) apply(base runFlags, workflow string) (runFlags, string) {
	f := base
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&workflow, l.Workflow)
	set(&f.model, l.Model)
	set(&f.provider, l.Provider)
	set(&f.cassette, l.Cassette)
	set(&f.workspace, l.Workspace)
	set(&f.backend, l.Backend)
	set(&f.tools, l.Tools)
	set(&f.system, l.System)
	if l.MCP != nil {
		f.mcp = *l.MCP
	}
	if l.Memory != nil {
		f.memory = *l.Memory
	}
	if l.Approve != nil {
		f.approve = *l.Approve
	}
	if l.NoStream != nil {
		f.noStream = *l.NoStream
	}
	if l.MaxRounds != nil {
		f.maxRounds = *l.MaxRounds
	}
	return f, workflow
}

// remoteCheck refuses what a run submitted over HTTP may not ask of the
// serving host: "rath serve" would start its MCP servers and open its
// sandboxes, so such a run brings no MCP server and selects built-in
// tools only, and its paths are absolute (the server's working
// directory means nothing to the client).
func remoteCheck(f runFlags) error {
	if len(f.mcp) > 0 {
		return errors.New("mcp: a run submitted over HTTP brings no MCP server (submit it with rath submit)")
	}
	if f.tools != "" {
		sel, err := parseTools(f.tools)
		if err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		if f.tools == "all" || len(sel.MCP) > 0 {
			return errors.New("tools: a run submitted over HTTP selects built-in tools by name, no MCP tools")
		}
	}
	for name, p := range map[string]string{"workspace": f.workspace, "cassette": f.cassette} {
		if p != "" && !filepath.IsAbs(p) {
			return fmt.Errorf("%s: %q is not an absolute path", name, p)
		}
	}
	return nil
}

// checkedRun is one run whose flags checked out, before the store is
// touched: a bad line leaves nothing behind.
type checkedRun struct {
	line     int
	flags    runFlags
	workflow string
	prompt   string
	agent    *rath.AgentSpec // nil for a registered workflow
}

// checkRun checks one run's flags as "rath submit" checks its own.
// remote is a run from POST /api/runs.
func checkRun(cmd *cobra.Command, f runFlags, workflow, prompt string, remote bool) (checkedRun, error) {
	c := checkedRun{flags: f, workflow: workflow, prompt: prompt}
	if remote {
		if err := remoteCheck(f); err != nil {
			return c, err
		}
	}
	if workflow != "" {
		return c, nil
	}
	spec, err := agentSpec(cmd, f)
	c.agent = &spec
	return c, err
}

// prepareSubmission builds a checked run, writing nothing: its input
// session and run are written with the rest of the batch.
func (a *app) prepareSubmission(cmd *cobra.Command, rt *rath.Runtime, c checkedRun, remote bool) (fleet.Submission, error) {
	ctx := cmd.Context()
	if c.workflow != "" {
		input, err := rt.PrepareUserSession(ctx, c.prompt, "", "")
		if err != nil {
			return fleet.Submission{}, err
		}
		return fleet.Submission{Workflow: c.workflow, Input: input, Subject: c.flags.subject}, nil
	}
	spec, f := *c.agent, c.flags
	ws := ""
	var err error
	if remote {
		ws = f.workspace // absolute; the workers check it
	} else if ws, err = a.checkWorkspace(cmd, rt, f); err != nil {
		return fleet.Submission{}, err
	}
	backend := ""
	if ws != "" {
		spec.Workspace, backend = ws, f.backend
	}
	if !remote {
		// The MCP tools are listed now, so that the record has their
		// specs (a replay needs them) and a server that cannot start
		// fails here, not on a worker.
		if _, err := rt.AgentTools(ctx, &spec, rath.LiveMode); err != nil {
			return fleet.Submission{}, err
		}
	}
	input, err := rt.PrepareUserSession(ctx, c.prompt, backend, ws)
	if err != nil {
		return fleet.Submission{}, err
	}
	return fleet.Submission{Workflow: runWorkflow, Input: input, Params: spec.Params(), Subject: c.flags.subject}, nil
}

// readBatch reads the runs of a batch, one JSON object a line; blank
// lines are skipped. It returns the runs with their line numbers.
func readBatch(r io.Reader) ([]submitLine, []int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxBatchLine)
	var lines []submitLine
	var nums []int
	n := 0
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		l, err := decodeSubmitLine(raw)
		if err != nil {
			return nil, nil, &SubmitLineError{Line: n, Err: err}
		}
		lines, nums = append(lines, l), append(nums, n)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, nil, &SubmitLineError{Line: n + 1, Err: fmt.Errorf("longer than %d bytes", maxBatchLine)}
		}
		return nil, nil, fmt.Errorf("read batch: %w", err)
	}
	if len(lines) == 0 {
		return nil, nil, errors.New("the batch has no run")
	}
	return lines, nums, nil
}

// checkBatch checks every run of a batch, before the store is opened.
func checkBatch(cmd *cobra.Command, base runFlags, workflow string, lines []submitLine, nums []int, remote bool) ([]checkedRun, error) {
	out := make([]checkedRun, len(lines))
	for i, l := range lines {
		f, wf := l.apply(base, workflow)
		c, err := checkRun(cmd, f, wf, l.Prompt, remote)
		if err != nil {
			return nil, lineError(nums[i], err)
		}
		c.line = nums[i]
		out[i] = c
	}
	return out, nil
}

// submitRuns submits checked runs in one transaction (fl may be opened
// to submit only) and returns their ids and input sessions; a run that
// cannot be built is a *SubmitLineError and nothing is submitted.
func (a *app) submitRuns(cmd *cobra.Command, rt *rath.Runtime, fl *fleet.Fleet, runs []checkedRun, remote bool) ([]submittedRun, error) {
	subs := make([]fleet.Submission, len(runs))
	for i, c := range runs {
		s, err := a.prepareSubmission(cmd, rt, c, remote)
		if err != nil {
			if c.line == 0 {
				return nil, err // a single submit: no line to name
			}
			return nil, lineError(c.line, err)
		}
		subs[i] = s
	}
	ids, err := fl.SubmitBatch(cmd.Context(), subs)
	if err != nil {
		return nil, err
	}
	out := make([]submittedRun, len(ids))
	for i, id := range ids {
		out[i] = submittedRun{Run: id, InputSession: subs[i].Input.ID}
	}
	return out, nil
}

// submittedRun is what submit prints (--json) for each run, and what
// POST /api/runs answers.
type submittedRun struct {
	Run          string `json:"run"`
	InputSession string `json:"input_session"`
}

// openBatch opens FILE, or stdin for "-".
func (a *app) openBatch(name string) (io.Reader, func() error, error) {
	if name == "-" {
		return a.stdin, func() error { return nil }, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("--batch: %w", err)
	}
	return f, f.Close, nil
}

// defaultSubmitCommand is a submit command with its flags at their
// defaults: the base of runs submitted over HTTP.
func (a *app) defaultSubmitCommand(ctx context.Context) (*cobra.Command, runFlags) {
	var f runFlags
	cmd := &cobra.Command{Use: "submit"}
	addRunFlags(cmd, &f)
	cmd.SetContext(ctx)
	return cmd, f
}

// httpSubmitter serves POST /api/runs for "rath serve": runs checked as
// a batch's lines (remote: see remoteCheck), on the default queue of the
// submitting identity's tenant, in one transaction, through an
// insert-only fleet per tenant opened on first use.
type httpSubmitter struct {
	a   *app
	rt  *rath.Runtime
	mu  sync.Mutex
	fls map[string]*fleet.Fleet // by tenant
}

func (h *httpSubmitter) fleet(ctx context.Context, tenant string) (*fleet.Fleet, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if fl, ok := h.fls[tenant]; ok {
		return fl, nil
	}
	fl, err := fleet.Open(ctx, h.rt, fleet.Options{SubmitOnly: true, Tenants: []string{tenant}})
	if err != nil {
		return nil, err
	}
	if h.fls == nil {
		h.fls = map[string]*fleet.Fleet{}
	}
	h.fls[tenant] = fl
	return fl, nil
}

func (h *httpSubmitter) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, fl := range h.fls {
		fl.Close()
	}
}

func (h *httpSubmitter) submit(ctx context.Context, tenant string, raw []json.RawMessage) ([]console.SubmittedRun, error) {
	cmd, base := h.a.defaultSubmitCommand(ctx)
	lines := make([]submitLine, len(raw))
	nums := make([]int, len(raw))
	for i, r := range raw {
		l, err := decodeSubmitLine(r)
		if err != nil {
			return nil, fmt.Errorf("%w: run %d: %v", console.ErrBadSubmission, i+1, err)
		}
		lines[i], nums[i] = l, i+1
	}
	runs, err := checkBatch(cmd, base, "", lines, nums, true)
	if err != nil {
		return nil, badSubmission(err)
	}
	fl, err := h.fleet(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out, err := h.a.submitRuns(cmd, h.rt, fl, runs, true)
	if err != nil {
		return nil, badSubmission(err)
	}
	res := make([]console.SubmittedRun, len(out))
	for i, r := range out {
		res[i] = console.SubmittedRun(r)
	}
	return res, nil
}

// badSubmission makes a refused run the request's fault (400), naming
// it by its place in the request; other errors stay the server's.
func badSubmission(err error) error {
	var le *SubmitLineError
	if errors.As(err, &le) {
		return fmt.Errorf("%w: run %d: %v", console.ErrBadSubmission, le.Line, le.Err)
	}
	return err
}
