package demo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/replay"
)

//go:embed cassette.json
var cassette []byte

// Cassette returns the scripted model the offline demo runs on.
func Cassette() (*scripted.Client, error) { return scripted.Parse(cassette) }

// Request is the user's message that starts the demo.
const Request = "Please fix issue 17 (ISSUE.md): add slugify to textkit."

// Options configure Run.
type Options struct {
	// Backend is the sandbox backend: "local" (default) or "bwrap".
	Backend string
	// Provider, if set, is a live model; nil means the scripted cassette.
	Provider *flow.Provider
}

// Summary is what a demo run did.
type Summary struct {
	Run       string         `json:"run"`
	Output    string         `json:"output_session"`
	Workspace string         `json:"workspace"`
	Scripted  bool           `json:"scripted"`
	Sessions  int            `json:"sessions"`
	Forks     int            `json:"forks"`
	ToolCalls int            `json:"tool_calls"`
	Rejected  int            `json:"rejected_patches"`
	Recalled  int            `json:"memories_recalled"`
	Committed int            `json:"memories_committed"`
	Decisions int            `json:"selector_decisions"`
	Tokens    int64          `json:"tokens"`
	Events    int            `json:"events"`
	Verified  bool           `json:"verified"`
	Head      eventlog.Head  `json:"head"`
	Replay    *replay.Report `json:"replay"`
	Usage     events.Usage   `json:"usage"`
	Err       string         `json:"error,omitempty"`
	Dossier   string         `json:"dossier"`
	Final     string         `json:"final_answer"`
}

// Build returns the demo workflow for rt: on the cassette unless p is set.
func Build(ctx context.Context, rt *rath.Runtime, p *flow.Provider) (*Workflow, error) {
	if p == nil {
		c, err := Cassette()
		if err != nil {
			return nil, err
		}
		if p, err = flow.ResolveProvider(flow.Provider{Vendor: flow.VendorScripted, Model: "scripted-demo", Client: c},
			flow.ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "-"}); err != nil {
			return nil, err
		}
	}
	mem, err := rt.Memory(ctx)
	if err != nil {
		return nil, err
	}
	return New(p, rt.Sandboxes(), mem)
}

// Run sets up the workspace beside rt's directory (DIR-work), runs the demo as a recorded
// run, replays it and verifies the log, and sums up what happened.
func Run(ctx context.Context, rt *rath.Runtime, opts Options) (*Summary, error) {
	backend := opts.Backend
	if backend == "" {
		backend = "local"
	}
	// The workspace sits beside the store, never in it: the runtime
	// refuses a sandbox that could write its log.
	ws, err := filepath.Abs(filepath.Clean(rt.Dir()) + "-work")
	if err != nil {
		return nil, err
	}
	if err := SetupWorkspace(ws); err != nil {
		return nil, err
	}
	wf, err := Build(ctx, rt, opts.Provider)
	if err != nil {
		return nil, err
	}
	input, err := rt.NewUserSession(ctx, Request)
	if err != nil {
		return nil, err
	}
	if input, err = input.To(ctx, backend, ws); err != nil {
		return nil, err
	}
	sum := &Summary{Workspace: ws, Scripted: opts.Provider == nil}
	params := map[string]string{"backend": backend, "scripted": fmt.Sprint(opts.Provider == nil)}
	if opts.Provider != nil {
		// A live model's run says which one, so a replay can rebuild it
		// anywhere (never the key).
		b, err := json.Marshal(opts.Provider.Recordable())
		if err != nil {
			return nil, err
		}
		params[flow.ProviderParam] = string(b)
	}
	run, runErr := rt.Start(ctx, Name, wf, input, rath.WithParams(params))
	if run == nil {
		return nil, runErr
	}
	sum.Run = run.ID
	if runErr != nil {
		sum.Err = runErr.Error()
	}
	if run.Output != nil {
		sum.Output = run.Output.ID()
		sum.Usage = run.Output.Usage()
		sum.Final = lastAnswer(run.Output)
	}
	if err := sum.count(ctx, rt, run.ID); err != nil {
		return sum, err
	}
	rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil {
		return sum, err
	}
	sum.Verified, sum.Head = rep.OK(), rep.Head
	// The replay re-executes the same code with every answer from the log.
	if sum.Replay, err = replay.Run(ctx, rt, run.ID, wf); err != nil {
		return sum, err
	}
	if sum.Dossier, err = writeDossier(ctx, rt, run.ID, sum.Replay); err != nil {
		return sum, err
	}
	return sum, runErr
}

// count sums up the run's events.
func (sum *Summary) count(ctx context.Context, rt *rath.Runtime, runID string) error {
	evs, err := rt.Store().ReadRun(ctx, runID)
	if err != nil {
		return err
	}
	sum.Events = len(evs)
	sessions := map[string]bool{}
	for _, ev := range evs {
		p, err := ev.Decode()
		if err != nil {
			return err
		}
		switch e := p.(type) {
		case *events.SessionForked:
			sum.Forks++
			sessions[e.Session] = true
		case *events.SessionMerged, *events.SessionCompressed, *events.SessionDetached:
			sessions[ev.Stream] = true
		case *events.ToolReturned:
			sum.ToolCalls++
		case *events.ProviderCalled:
			sum.Tokens += e.Usage.TotalTokens
		case *events.MemoryRecalled:
			sum.Recalled += len(e.Hits)
		case *events.MemoryCommitted:
			sum.Committed += len(e.IDs)
		case *events.SelectorDecided:
			sum.Decisions++
		case *events.ChunkAppended:
			sessions[e.Session] = true
			if e.Chunk.Role == events.RoleAssistant && len(e.Chunk.Content) >= len(Rejected) && e.Chunk.Content[:len(Rejected)] == Rejected {
				sum.Rejected++
			}
		case *events.WorkflowEntered:
			sessions[e.Session] = true
		}
	}
	sum.Sessions = len(sessions)
	return nil
}

// Register makes the demo workflow replayable by name on rt (rath replay
// and rath resume rebuild it), answering from the cassette.
func Register(ctx context.Context, rt *rath.Runtime) error {
	wf, err := Build(ctx, rt, nil)
	if err != nil {
		return err
	}
	rt.Register(Name, wf)
	return nil
}

// writeDossier writes the run's HTML dossier beside the database.
func writeDossier(ctx context.Context, rt *rath.Runtime, runID string, rep *replay.Report) (string, error) {
	d, err := dossier.Build(ctx, rt, runID, dossier.Options{Replay: rep})
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := d.HTML(&buf); err != nil {
		return "", err
	}
	path, err := filepath.Abs(filepath.Join(rt.Dir(), "dossier-"+runID+".html"))
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, buf.Bytes(), 0o644)
}
