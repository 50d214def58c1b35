package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/builtin"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/internal/jsonview"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/sandbox"
	"github.com/spf13/cobra"
)

// DefaultSystemPrompt is the agent's prompt when --system is not given.
const DefaultSystemPrompt = "You are a careful assistant. Use the tools you are given when they help; say what you did."

// cliBackends are the sandbox backends of the runtimes the CLI opens
// (rath.Options' defaults).
var cliBackends = []string{"local", "bwrap", "opensandbox"}

type runFlags struct {
	model, provider, cassette, workspace, backend, tools, system, agent string
	approve                                                             []string
	noStream                                                            bool
	maxRounds                                                           int
	mcp                                                                 []string
	memory                                                              []string
	// tenant is --tenant of run and submit: not a flag a batch line or
	// the console's submission sets (the console's is its user's).
	tenant string

	// subject names whose content the run is (rath.WithSubject).
	subject string
}

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT",
		Short: "Run one agent on a prompt, as a recorded run, streaming the transcript; prints the session id",
		Long: `run starts a recorded run of one agent on PROMPT and streams what happens:
the model's text as it arrives (or, with --no-stream, after each plain
request), each tool call and its result. It ends by printing the run id and
the output session id; "rath replay RUN" replays it.

The provider comes from --provider (a name in the config file), --model
and the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); --cassette
runs offline against a scripted cassette file. --workspace places the
session on a sandbox (--backend, default local) so tools run there;
--tools lists built-in tools by name (` + "`all`" + ` for every one). With --json it
prints the run's events as JSON Lines as they are recorded, then a summary
object {"summary": true, "run", "status", "output_session", "error"} whose
status is one word of "rath runs": done, failed or waiting.

Built-in tools need --workspace: without it, run refuses (exit 2) rather
than start a run whose every tool call would fail.`,
		Example: `rath run --cassette examples/cassettes/write_and_check.json --workspace work --tools all "Write hello.txt"
rath run --model gpt-4o-mini --workspace ./work --tools run_shell_command,read_workspace_file "List the files"`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if f.subject != "" {
				if err := keyring.ValidSubjectID(f.subject); err != nil {
					return usagef(cmd, "--subject: %v", err)
				}
			}
			return a.runAgent(cmd, f, strings.Join(argv, " "))
		},
	}
	addRunFlags(cmd, &f)
	tenantFlag(cmd, &f.tenant, "the tenant the run, its sessions and its approvals belong to")
	cmd.Flags().StringVar(&f.subject, "subject", "", "whose content the run is (a person's id): with a key-encryption key (RATH_KEK_FILE) it is sealed under subject user:ID's key, which rath erase --subject ID destroys")
	jsonFlag(cmd, a)
	return cmd
}

// addRunFlags declares the flags that choose the agent of a run (run and
// submit share them).
func addRunFlags(cmd *cobra.Command, f *runFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "model name (default: provider's, or OPENAI_DEFAULT_MODEL / ANTHROPIC_DEFAULT_MODEL)")
	fl.StringVar(&f.provider, "provider", "", "provider name from the config file ($RATH_HOME/config.json)")
	fl.StringVar(&f.cassette, "cassette", "", "answer from a scripted cassette file instead of a live model")
	fl.StringVar(&f.workspace, "workspace", "", "workspace directory: place the session there so tools can run")
	fl.StringVar(&f.backend, "backend", "local", "sandbox backend for --workspace: local, bwrap or opensandbox")
	fl.StringVar(&f.tools, "tools", "", "comma-separated tools: built-ins ("+strings.Join(builtin.Names(), ", ")+"), MCP tools as SERVER.TOOL or SERVER.*, or all; empty: every MCP tool, no built-in")
	fl.StringArrayVar(&f.mcp, "mcp", nil, "an MCP server: NAME=URL (streamable HTTP; sse+http://… for SSE) or NAME=COMMAND ARGS… (stdio); repeatable, beside the config file's mcp_servers")
	fl.StringVar(&f.system, "system", DefaultSystemPrompt, "the agent's system prompt")
	fl.StringVar(&f.agent, "agent", "", "a named agent of the config file's \"agents\": its system prompt (instead of --system); rath regress rebuilds its runs with the file as it is then")
	fl.BoolVar(&f.noStream, "no-stream", false, "make plain requests instead of streaming")
	fl.IntVar(&f.maxRounds, "max-rounds", flow.DefaultMaxRounds, "round cap of the agent loop")
	addMemoryFlag(cmd, &f.memory)
	fl.StringSliceVar(&f.approve, "approve", nil, "tools whose every call waits for a person's approval (comma-separated names or patterns like github__*); more rules in the config file's \"approvals\"")
}

func (a *app) runAgent(cmd *cobra.Command, f runFlags, prompt string) error {
	ctx := cmd.Context()
	spec, err := agentSpec(cmd, f)
	if err != nil {
		return err
	}
	rt, err := a.create(ctx)
	if err != nil {
		return err
	}
	return a.runAgentWith(cmd, rt, f, spec, prompt)
}

// agentSpec checks run's flags and turns them into the built-in agent
// they describe (rath.AgentSpec), whose Params the run records and a
// worker or a replay rebuilds the agent from. Flag values are checked
// before the store is touched: a bad one leaves no session behind.
func agentSpec(cmd *cobra.Command, f runFlags) (rath.AgentSpec, error) {
	spec := rath.AgentSpec{
		System:    f.system,
		Provider:  flow.Provider{Name: f.provider, Model: f.model},
		Backend:   f.backend,
		MaxRounds: f.maxRounds,
		Stream:    !f.noStream,
	}
	if !slices.Contains(cliBackends, f.backend) {
		return spec, usagef(cmd, "--backend %q: want %s", f.backend, strings.Join(cliBackends, ", "))
	}
	if f.agent != "" {
		if cmd.Flags().Changed("system") {
			return spec, usagef(cmd, "--agent %s and --system: the named agent has its own system prompt; give one or the other", f.agent)
		}
		system, err := namedAgentSystem(f.agent)
		if err != nil {
			return spec, usagef(cmd, "--agent: %v", err)
		}
		spec.Agent, spec.System = f.agent, system
	}
	if f.cassette != "" {
		abs, err := filepath.Abs(f.cassette)
		if err != nil {
			return spec, err
		}
		spec.Provider.Cassette, spec.Provider.Vendor = abs, flow.VendorScripted
	}
	if f.tools != "" {
		sel, err := parseTools(f.tools)
		if err != nil {
			return spec, usagef(cmd, "--tools: %v", err)
		}
		// Built-in tools act on the session's workspace; without one every
		// call would fail no_placement in a run that still ends done.
		if len(sel.Builtins) > 0 && f.workspace == "" {
			return spec, usagef(cmd, "--tools %s: built-in tools (%s) run in a workspace: pass --workspace DIR (created if missing), or name only MCP tools (SERVER.*)",
				f.tools, strings.Join(sel.Builtins, ", "))
		}
		// "all" stays as it is: it also means every MCP tool, which a
		// worker lists itself.
		for n := range strings.SplitSeq(f.tools, ",") {
			spec.Tools = append(spec.Tools, strings.TrimSpace(n))
		}
	}
	var err error
	if spec.MCP, err = mcpFlagServers(cmd, f.mcp); err != nil {
		return spec, err
	}
	if spec.Memory, spec.MemoryBackend, err = memoryUses(cmd, f.memory); err != nil {
		return spec, err
	}
	if spec.Approvals, err = approvalRules(cmd, f.approve); err != nil {
		return spec, err
	}
	if err := spec.Check(); err != nil {
		return spec, usagef(cmd, "%v", err)
	}
	return spec, nil
}

// approvalRules are --approve's tools (every call), then the config
// file's rules; they are checked here, before anything is recorded.
func approvalRules(cmd *cobra.Command, approve []string) ([]flow.ApprovalRule, error) {
	var rules []flow.ApprovalRule
	for _, t := range approve {
		if t = strings.TrimSpace(t); t != "" {
			rules = append(rules, flow.ApprovalRule{Tool: t})
		}
	}
	cf, err := flow.LoadConfig(flow.DefaultConfigPath(os.Getenv))
	if err != nil {
		return nil, err
	}
	rules = append(rules, cf.Approvals...)
	if _, err := flow.ApprovalOptions(rules); err != nil {
		return nil, usagef(cmd, "--approve or the config file's approvals: %v", err)
	}
	return rules, nil
}

func (a *app) runAgentWith(cmd *cobra.Command, rt *rath.Runtime, f runFlags, spec rath.AgentSpec, prompt string) error {
	ctx := cmd.Context()
	opts := []rath.RunOption{rath.WithTenant(f.tenant)}
	if f.subject != "" {
		// The input session is the subject's too, made before the run.
		sctx, err := rath.ContextWithSubject(ctx, f.subject)
		if err != nil {
			return usagef(cmd, "--subject: %v", err)
		}
		ctx = sctx
		opts = append(opts, rath.WithSubject(f.subject))
	}
	stopOtel, err := a.liveTelemetry(ctx, rt) // a no-op without OTEL_EXPORTER_OTLP_* endpoints
	if err != nil {
		return err
	}
	defer stopOtel()
	var mu sync.Mutex // one writer of stdout at a time
	// Model text and tool results are hostile: nothing reaches the
	// terminal unescaped.
	tw := &termWriter{w: a.stdout}
	out := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(tw, format, args...)
	}
	// Retry notices and caps are diagnostics: stderr, so stdout is only
	// the transcript.
	ew := &termWriter{w: a.stderr}
	diag := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(ew, format, args...)
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		tw.Flush()
		ew.Flush()
	}()
	// Streamed text waits until the events before it are printed (tool
	// results come before the answer that reads them). A delta that
	// follows a commit of this process's writer (the previous answer's
	// record, the tools' results) starts a new answer: it waits for the
	// follower to have printed the log up to its head. Whether the
	// follower had printed the previous answer's record by then is a race,
	// which a flag reset by that record lost when the tools were quick.
	progress := newPrinted()
	var commitsSeen atomic.Int64
	commitsSeen.Store(-1)
	caughtUp := func() {
		if h, err := rt.Store().Head(ctx); err == nil {
			progress.wait(ctx, h.Seq, time.Second)
		}
	}
	agent, err := rt.BuildAgent(ctx, &spec, rath.AgentOptions{Mode: rath.LiveMode, OnDelta: func(d model.Delta) {
		if d.Content == "" || a.json {
			return
		}
		if c := rt.Store().Stats().Commits; commitsSeen.Swap(c) != c {
			caughtUp()
		}
		out("%s", d.Content)
	}})
	if errors.Is(err, flow.ErrNoProviderKind) {
		return usagef(cmd, "no model to run: pass --provider NAME (from %s) or --cassette FILE, or set OPENAI_API_KEY or ANTHROPIC_API_KEY",
			flow.DefaultConfigPath(os.Getenv))
	}
	if err != nil {
		return err
	}
	// The sandbox is checked before anything is recorded: a workspace that
	// is not a directory, or a backend that cannot be reached, would
	// otherwise make every tool call fail on its own in a run that ends ok.
	ws, err := a.checkWorkspace(cmd, rt, f)
	if err != nil {
		return err
	}
	input, err := rt.NewUserSession(ctx, prompt)
	if err != nil {
		return err
	}
	if ws != "" {
		spec.Workspace = ws
		if input, err = input.To(ctx, f.backend, ws); err != nil {
			return err
		}
	}
	// What the build resolved (the provider, the MCP tools' specs) is
	// recorded with the run: a replay needs nothing else.
	opts = append(opts, rath.WithParams(spec.Params()))
	// Tool calls and results, and plain answers, are printed from the log
	// as they land: what you see is what was recorded.
	var run *rath.Run
	var runErr error
	// What the log held before the run is not the run's to print: the
	// first answer does not wait for it.
	if h, err := rt.Store().Head(ctx); err == nil {
		progress.done(h.Seq)
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	for ev, err := range rt.Stream(ctx, runWorkflow, agent, input, func(r *rath.Run) { run = r }, opts...) {
		if err != nil {
			runErr = err
			continue
		}
		if a.json {
			if err := enc.Encode(ev); err != nil {
				return err
			}
		} else {
			printEvent(ev, f.noStream, out, diag)
		}
		progress.done(ev.Seq)
	}
	if a.json {
		if err := enc.Encode(runSummary(run, runErr)); err != nil {
			return err
		}
		return runErr
	}
	if run != nil {
		out("\nrun: %s\n", run.ID)
		if run.Output != nil {
			out("session: %s\n", run.Output.ID())
		}
		if errors.Is(runErr, flow.ErrWaiting) {
			mu.Lock()
			tw.Flush()
			a.printWaiting(ctx, rt, run.ID, ew)
			mu.Unlock()
		}
	}
	return runErr
}

// runEnd is the last JSON line of `run --json` and `resume --json`.
type runEnd struct {
	Summary bool   `json:"summary"`
	Run     string `json:"run,omitempty"`
	Status  string `json:"status"`
	Output  string `json:"output_session,omitempty"`
	Error   string `json:"error,omitempty"`
}

func runSummary(run *rath.Run, err error) runEnd {
	s := runEnd{Summary: true, Status: jsonview.StatusWord(rath.RunOK)}
	if run != nil {
		s.Run = run.ID
		if run.Output != nil {
			s.Output = run.Output.ID()
		}
	}
	if err != nil {
		s.Status, s.Error = jsonview.StatusWord(rath.RunError), err.Error()
	}
	if errors.Is(err, flow.ErrWaiting) {
		s.Status = "waiting"
	}
	return s
}

// printed tracks the last seq the follower printed, for the streamed
// text that must wait for it; waiting blocks on a condition, not a sleep.
type printed struct {
	mu   sync.Mutex
	cond *sync.Cond
	seq  int64
}

func newPrinted() *printed {
	p := &printed{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *printed) done(seq int64) {
	p.mu.Lock()
	p.seq = seq
	p.mu.Unlock()
	p.cond.Broadcast()
}

// wait returns once seq is printed, ctx is done or max has passed.
func (p *printed) wait(ctx context.Context, seq int64, max time.Duration) {
	timer := time.AfterFunc(max, p.cond.Broadcast)
	defer timer.Stop()
	deadline := time.Now().Add(max)
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.seq < seq && time.Now().Before(deadline) && ctx.Err() == nil {
		p.cond.Wait()
	}
}

// checkWorkspace resolves --workspace and, when tools will use it, opens
// its sandbox (the pool keeps it for the run). It returns "" without
// --workspace.
func (a *app) checkWorkspace(cmd *cobra.Command, rt *rath.Runtime, f runFlags) (string, error) {
	if f.workspace == "" {
		return "", nil
	}
	ws, err := filepath.Abs(f.workspace)
	if err != nil {
		return "", err
	}
	if f.backend == "local" || f.backend == "bwrap" {
		// A missing directory is created by the backend; anything else
		// in its place is a mistake.
		if st, err := os.Stat(ws); err == nil && !st.IsDir() {
			return "", usagef(cmd, "--workspace: %w: %s is not a directory", sandbox.ErrInvalidSpec, ws)
		}
	}
	if f.tools == "" {
		return ws, nil
	}
	if _, err := rt.Sandboxes().Get(cmd.Context(), events.Placement{Backend: f.backend, Spec: ws}); err != nil {
		return "", fmt.Errorf("run: no run started, the %s sandbox for --workspace %s cannot be used: %w", f.backend, ws, err)
	}
	return ws, nil
}

// printEvent prints the transcript with out and diagnostics with diag.
func printEvent(ev events.Event, plain bool, out, diag func(string, ...any)) {
	p, err := ev.Decode()
	if err != nil {
		return
	}
	switch e := p.(type) {
	case *events.ChunkAppended:
		if e.Chunk.Role == events.RoleAssistant && plain && e.Chunk.Content != "" {
			out("%s\n", e.Chunk.Content)
		}
	case *events.ToolCalled:
		out("\n→ %s %s\n", e.Tool, clip(e.Arguments, 200))
	case *events.ToolReturned:
		status := "ok"
		if e.ErrorKind != "" {
			status = "error " + e.ErrorKind
		} else if e.ExitCode != nil {
			status = "exit " + strconv.Itoa(*e.ExitCode)
		}
		files := make([]string, 0, len(e.Files))
		for _, f := range e.Files {
			files = append(files, f.Path)
		}
		sort.Strings(files)
		line := fmt.Sprintf("← %s %s (%d bytes, %d ms)", e.Tool, status, e.OutputSize, e.DurationMS)
		if len(files) > 0 {
			line += " files: " + strings.Join(files, ", ")
		}
		if len(e.Attachments) > 0 {
			kinds := make([]string, 0, len(e.Attachments))
			for _, a := range e.Attachments {
				kinds = append(kinds, strings.TrimSpace(a.Kind+" "+a.MIME))
			}
			line += " attachments: " + strings.Join(kinds, ", ")
		}
		if t := e.Truncated; t != nil {
			line += fmt.Sprintf(" truncated to %d of %d bytes", t.KeptText, t.TextBytes)
		}
		out("%s\n", line)
	case *events.ProviderFailed:
		diag("rath: model call failed: %s, attempt %d, retry: %v\n", e.ErrorKind, e.Attempt, e.WillRetry)
	case *events.AgentCapped:
		diag("rath: round cap %d reached\n", e.Rounds)
	case *events.ApprovalRequested:
		what := e.Tool + " " + clip(e.Arguments, 120)
		if e.Kind == events.ApprovalQuestion {
			what = clip(e.Question, 120)
		}
		out("\n⏸ %s waits for a person: %s\n", e.ID, what)
	}
}
