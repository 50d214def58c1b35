package rath

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/session"
)

// Run statuses recorded by run.finished.
const (
	RunOK    = "ok"
	RunError = "error"
)

// ErrUnknownWorkflow is returned for a workflow name nobody registered.
var ErrUnknownWorkflow = errors.New("rath: unknown workflow")

// ErrRunLeftOpen is matched by the error of a run that stopped on an
// error its context suspends on (flow.ContextWithSuspend): no
// run.finished was written, and replay.Resume continues the run.
var ErrRunLeftOpen = errors.New("rath: run left open for a retry")

// Run is a started run.
type Run struct {
	ID     string
	Seed   string
	Output *session.Session // nil if the workflow returned none
}

// RunOption configures Start.
type RunOption func(*runConfig)

type runConfig struct {
	id, seed, parent, codeVersion, tenant string
	subject                               string
	params                                map[string]string
	record                                func(run string) eventlog.Write
	lease                                 *eventlog.Lease
}

// ContextWithSubject returns a context whose appends, in a run or not
// (the input session a run starts from, memory written beside it), are
// content of subject "user:ID", as WithSubject makes a run's. An invalid
// id is a keyring.ErrSubject.
func ContextWithSubject(ctx context.Context, id string) (context.Context, error) {
	subject, err := keyring.Subject(keyring.LevelUser, id)
	if err != nil {
		return nil, err
	}
	return events.ContextWithSubject(ctx, subject), nil
}

// WithSubject names whose content the run is: a person's id, so that
// with a key-encryption key (Options.KEK) everything the run stores is
// sealed under the key of subject "user:ID", and erasing that subject
// forgets it (package keyring). An id is printable ASCII without spaces,
// at most 200 bytes; Start refuses another (keyring.ErrSubject). Without
// it the run's content is its own ("run:RUNID").
func WithSubject(id string) RunOption { return func(c *runConfig) { c.subject = id } }

// WithParams records the workflow's parameters with the run, so a tool
// that rebuilds workflows by name (rath replay) can rebuild it. Never put
// a secret in them.
func WithParams(p map[string]string) RunOption { return func(c *runConfig) { c.params = p } }

// WithSeed fixes the run's seed (ids derive from it); by default a random
// one is drawn and recorded.
func WithSeed(seed string) RunOption { return func(c *runConfig) { c.seed = seed } }

// WithRunID fixes the run id.
func WithRunID(id string) RunOption { return func(c *runConfig) { c.id = id } }

// WithParentRun links the run to the run it was forked from.
func WithParentRun(id string) RunOption { return func(c *runConfig) { c.parent = id } }

// WithTenant makes the run, its sessions and its approvals the tenant's
// (events.CheckTenant says which names are valid). By default a run is
// the default tenant's (events.DefaultTenant).
func WithTenant(tenant string) RunOption { return func(c *runConfig) { c.tenant = tenant } }

// WithStartRecord records record(run id) in the run's first commit,
// after its run.started: a fact about the run that lands with it or not
// at all (a counterfactual's account of what it replaced, say). The
// write's stream must be new to the log or expect its version.
func WithStartRecord(record func(run string) eventlog.Write) RunOption {
	return func(c *runConfig) { c.record = record }
}

// WithLease fences the run's appends with a worker's lease on it (its
// run id must be the run's): once another worker takes the run, they
// fail with an *eventlog.FencedError and nothing more of the run lands.
func WithLease(l eventlog.Lease) RunOption { return func(c *runConfig) { c.lease = &l } }

// WithCodeVersion records the version of the code that ran; by default the
// module's VCS revision when the binary has one, else "dev".
func WithCodeVersion(v string) RunOption { return func(c *runConfig) { c.codeVersion = v } }

// workflows is the runtime's name -> workflow registry.
type workflows struct {
	mu sync.RWMutex // protects m and b
	m  map[string]flow.Workflow
	b  map[string]Builder
}

// Register makes a workflow known by name, so runs of it can be replayed
// and resumed by name (rath replay, rath resume). Registering a name twice
// panics, like sql.Register.
func (rt *Runtime) Register(name string, wf flow.Workflow) {
	rt.wfs.mu.Lock()
	defer rt.wfs.mu.Unlock()
	if wf == nil || name == "" {
		panic("rath: Register needs a name and a workflow")
	}
	if _, dup := rt.wfs.m[name]; dup {
		panic("rath: workflow " + name + " registered twice")
	}
	rt.wfs.m[name] = wf
}

// Workflow returns a registered workflow.
func (rt *Runtime) Workflow(name string) (flow.Workflow, error) {
	rt.wfs.mu.RLock()
	defer rt.wfs.mu.RUnlock()
	wf, ok := rt.wfs.m[name]
	if !ok {
		names := make([]string, 0, len(rt.wfs.m))
		for n := range rt.wfs.m {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w %q (registered: %v)", ErrUnknownWorkflow, name, names)
	}
	return wf, nil
}

func (rt *Runtime) random(n int) string {
	b := make([]byte, n)
	if _, err := rt.entropy.Read(b); err != nil {
		// crypto/rand does not fail on supported platforms; a custom
		// reader that does is a programming error.
		panic(fmt.Sprintf("rath: entropy: %v", err))
	}
	return hex.EncodeToString(b)
}

func codeVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value
			}
		}
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "dev"
}

// Start runs wf on input as a recorded run: run.started, the workflow's
// events (all carrying the run id, ids derived from the run's seed), then
// run.finished with the status and output. The name is recorded and, if
// no workflow is registered under it yet, wf is registered, so the run can
// be replayed by name (not under AgentWorkflow or a Builder's name: those
// are built from each run's parameters). The returned Run is set even when the workflow
// fails, with the workflow's error.
func (rt *Runtime) Start(ctx context.Context, name string, wf flow.Workflow, input *session.Session, opts ...RunOption) (*Run, error) {
	if name == "" || wf == nil || input == nil {
		return nil, errors.New("rath: Start needs a name, a workflow and an input session")
	}
	cfg := runConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.id == "" {
		cfg.id = "run-" + rt.random(8)
	}
	if cfg.seed == "" {
		cfg.seed = rt.random(16)
	}
	if cfg.codeVersion == "" {
		cfg.codeVersion = codeVersion()
	}
	if err := events.CheckTenant(cfg.tenant); err != nil {
		return nil, fmt.Errorf("rath: start run: %w", err)
	}
	// A workflow built from its parameters (the built-in agent, a
	// Builder's) is built again for each run: registering this one would
	// make RecordedWorkflow take it for every later run of the name.
	if !rt.built(name) {
		rt.wfs.mu.Lock()
		if _, ok := rt.wfs.m[name]; !ok {
			rt.wfs.m[name] = wf
		}
		rt.wfs.mu.Unlock()
	}
	params, err := withSpec(cfg.params, wf)
	if err != nil {
		return nil, err
	}
	var subject string
	if cfg.subject != "" {
		if subject, err = keyring.Subject(keyring.LevelUser, cfg.subject); err != nil {
			return nil, fmt.Errorf("rath: start run: %w", err)
		}
	}
	if cfg.lease != nil && cfg.lease.Run != cfg.id {
		return nil, fmt.Errorf("rath: start run %s under the lease of run %s", cfg.id, cfg.lease.Run)
	}
	run := &Run{ID: cfg.id, Seed: cfg.seed}
	rctx := ctx
	if subject != "" {
		rctx = events.ContextWithSubject(rctx, subject)
	}
	started := events.RunStarted{Run: cfg.id, Workflow: name, InputSession: input.ID(), Seed: cfg.seed, CodeVersion: cfg.codeVersion, ParentRun: cfg.parent, Params: params, Tenant: events.TenantField(cfg.tenant), Subject: subject}
	// run.started is carried by the run's first append (its workflow's
	// first event, or run.finished), in that append's commit: nothing
	// waits for it on its own. A run already started elsewhere refuses
	// that append, and every later one, with the conflict.
	carried, err := eventlog.NewCarried(eventlog.Write{Stream: cfg.id, Expected: eventlog.NoStream, Events: []events.Payload{started}}, nil)
	if err != nil {
		return nil, fmt.Errorf("rath: start run: %w", err)
	}
	// flush writes what is carried, should no append carry it.
	flush := carried
	if cfg.record != nil {
		// Nested inside run.started's, so written after it.
		if flush, err = eventlog.NewCarried(cfg.record(cfg.id), carried); err != nil {
			return nil, fmt.Errorf("rath: start run: %w", err)
		}
	}
	// Every append of the run is made in its scope: the workflow's through
	// the input session it adopts, the run's own through rec.
	rec := rt.store.In(eventlog.Scope{Run: events.RunRef{ID: cfg.id, Seed: cfg.seed}, Lease: cfg.lease, Carry: flush})
	// The root workflow's exit record is written with run.finished, in
	// one commit (finish).
	rctx, exit := flow.ContextDeferringExit(rctx)
	out, err := flow.Forward(rctx, wf, input.In(rec.Scope()))
	// The output goes back outside the run: appends to it are the caller's.
	out = out.In(eventlog.Scope{})
	if rerr := refused(carried, flush); rerr != nil {
		return nil, fmt.Errorf("rath: start run: %w", rerr)
	}
	if errors.Is(err, flow.ErrWaiting) {
		// Suspended for a person: no run.finished, the run stays open
		// (status waiting) until replay.Resume continues it.
		run.Output = out
		if ferr := flush.Flush(context.WithoutCancel(rctx), rec); ferr != nil {
			return run, errors.Join(err, fmt.Errorf("rath: start run: %w", ferr))
		}
		return run, err
	}
	err = rt.finish(rctx, rec, run, out, err, exit)
	if rerr := refused(carried, flush); rerr != nil {
		return nil, fmt.Errorf("rath: start run: %w", rerr)
	}
	if errors.Is(err, ErrRunLeftOpen) {
		// Left open for a retry, which resumes a started run.
		if ferr := flush.Flush(context.WithoutCancel(rctx), rec); ferr != nil {
			return run, errors.Join(err, fmt.Errorf("rath: start run: %w", ferr))
		}
	}
	return run, err
}

// refused is the conflict that refused run.started (carried) or the
// start record nested in it (flush), if one did.
func refused(carried, flush *eventlog.Carried) error {
	if err := carried.Refused(); err != nil || flush == carried {
		return err
	}
	return flush.Refused()
}

// withSpec returns params with flow.SpecParam: the workflow as data
// (flow.Describe), so that a replay rebuilds it from the log alone (rath
// replay does, for a workflow of built-in layers). params given by the
// caller are not modified; a spec the caller recorded is kept.
func withSpec(params map[string]string, wf flow.Workflow) (map[string]string, error) {
	if _, ok := params[flow.SpecParam]; ok {
		return params, nil
	}
	b, err := json.Marshal(flow.Describe(wf))
	if err != nil {
		return nil, fmt.Errorf("rath: describe the workflow: %w", err)
	}
	out := maps.Clone(params)
	if out == nil {
		out = map[string]string{}
	}
	out[flow.SpecParam] = string(b)
	return out, nil
}

// finish records run.finished through rec, the run's appender, with the
// root workflow's exit record when exit holds it, and returns the
// workflow's error, or leaves the run open if its context retries err.
func (rt *Runtime) finish(ctx context.Context, rec eventlog.Appender, run *Run, out *session.Session, err error, exit *flow.DeferredExit) error {
	run.Output = out
	if flow.Suspends(ctx, err) {
		return fmt.Errorf("%w: %w", ErrRunLeftOpen, err)
	}
	// The run record must land even if the caller's context was canceled.
	ctx = context.WithoutCancel(ctx)
	if w, ok := exit.Write(); ok {
		_, ferr := rec.AppendWrites(ctx, w, eventlog.Write{Stream: run.ID, Expected: 1, Events: []events.Payload{finished(run.ID, out, err)}})
		if ferr == nil {
			return err
		}
		// Not written: the output is the handle without the exit
		// record, and a refused record (a stale output handle) fails
		// the run, as the record written on its own would have.
		var conflict *eventlog.ConflictError
		if !errors.As(ferr, &conflict) || conflict.Stream != w.Stream {
			before, _ := exit.Refused(ferr)
			run.Output = before.In(eventlog.Scope{})
			return errors.Join(err, fmt.Errorf("rath: finish run %s: %w", run.ID, ferr))
		}
		out, err = exit.Refused(ferr)
		out = out.In(eventlog.Scope{})
		run.Output = out
	}
	if _, ferr := rec.Append(ctx, run.ID, 1, finished(run.ID, out, err)); ferr != nil {
		return errors.Join(err, fmt.Errorf("rath: finish run %s: %w", run.ID, ferr))
	}
	return err
}

// finished is the run.finished record of a run whose workflow returned
// out and err.
func finished(id string, out *session.Session, err error) events.RunFinished {
	fin := events.RunFinished{Run: id, Status: RunOK}
	if out != nil {
		fin.OutputSession = out.ID()
	}
	if err != nil {
		fin.Status, fin.Error = RunError, err.Error()
	}
	return fin
}
