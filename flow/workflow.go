package flow

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unicode"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// Workflow is a layer: a session in, a session out.
type Workflow interface {
	Forward(ctx context.Context, s *session.Session) (*session.Session, error)
}

// Namer is implemented by workflows that choose their path segment.
type Namer interface {
	Name() string
}

// Func adapts a function to a Workflow.
type Func func(ctx context.Context, s *session.Session) (*session.Session, error)

// Forward calls f.
func (f Func) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return f(ctx, s)
}

type empty struct{}

func (empty) Forward(_ context.Context, s *session.Session) (*session.Session, error) { return s, nil }

// Empty is the workflow that returns its session unchanged. A Selector
// returns it when the model picks nothing, so loops end with
// `for next != flow.Empty`.
var Empty Workflow = empty{}

type named struct {
	name string
	wf   Workflow
}

func (n named) Name() string { return n.name }
func (n named) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return n.wf.Forward(ctx, s)
}

// Named gives a workflow a path segment.
func Named(name string, wf Workflow) Workflow { return named{name: name, wf: wf} }

type frameKey struct{}

// frame is the workflow running at a point of the call tree, and the
// appender its session writes with (for side effects).
type frame struct {
	path string
	wf   Workflow
	// rec appends in the run of the session the workflow entered with.
	rec eventlog.Appender
	// exitTo takes this workflow's exit record (the run's root, under
	// ContextDeferringExit).
	exitTo *DeferredExit
}

// recorderFrom returns the appender of the workflow running in ctx, false
// outside any.
func recorderFrom(ctx context.Context) (eventlog.Appender, bool) {
	f, ok := ctx.Value(frameKey{}).(frame)
	return f.rec, ok
}

// Path returns the module path of the workflow running in ctx ("" outside
// any).
func Path(ctx context.Context) string {
	if f, ok := ctx.Value(frameKey{}).(frame); ok {
		return f.path
	}
	return ""
}

// forcedKey carries the name given with Named to the next workflow entered.
type forcedKey struct{}

// childPath returns the path for wf entered from ctx: "root" at the top,
// else the parent's path plus wf's segment.
func childPath(ctx context.Context, wf Workflow, hint string) string {
	parent, ok := ctx.Value(frameKey{}).(frame)
	if !ok {
		return "root"
	}
	if forced, _ := ctx.Value(forcedKey{}).(string); forced != "" {
		return parent.path + "." + forced
	}
	return parent.path + "." + segment(parent.wf, wf, hint)
}

// segment names wf inside parent: its own name, the field of parent that
// holds it, the hint given by a container, or its type.
func segment(parent, wf Workflow, hint string) string {
	if n, ok := wf.(Namer); ok && n.Name() != "" {
		return n.Name()
	}
	if f := fieldName(parent, wf); f != "" {
		return f
	}
	if hint != "" {
		return hint
	}
	t := reflect.TypeOf(wf)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Name() == "" {
		return "step"
	}
	return lowerFirst(t.Name())
}

// NameTag is the struct tag that pins the path segment of a workflow held
// in a field: with `rath:"planner"` the field can be renamed without
// changing the recorded module path, so old runs still replay. (Module
// paths come from field and type names by default; a rename changes them,
// as renaming a Temporal workflow type does. Named and the Namer
// interface pin a name too.)
const NameTag = "rath"

// fieldName finds the exported field of parent (a struct or pointer to
// one) holding child, by identity.
func fieldName(parent, child Workflow) string {
	if parent == nil {
		return ""
	}
	v := reflect.ValueOf(parent)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	cv := reflect.ValueOf(child)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if sameValue(fv, cv) {
			if tag := f.Tag.Get(NameTag); tag != "" && tag != "-" {
				return tag // pinned: renaming the field keeps the path
			}
			return lowerFirst(f.Name)
		}
	}
	return ""
}

func sameValue(field, child reflect.Value) bool {
	if field.Kind() == reflect.Interface {
		if field.IsNil() {
			return false
		}
		field = field.Elem()
	}
	if field.Type() != child.Type() {
		return false
	}
	switch field.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return field.Pointer() == child.Pointer() && field.Kind() != reflect.Func
	}
	if field.Type().Comparable() {
		return field.Interface() == child.Interface()
	}
	return false
}

func lowerFirst(s string) string {
	r := []rune(s)
	if len(r) > 0 {
		r[0] = unicode.ToLower(r[0])
	}
	return string(r)
}

// enter records workflow.entered for wf on s and returns the context for
// its body.
func enter(ctx context.Context, s *session.Session, wf Workflow, hint string) (context.Context, *session.Session, string, error) {
	path := childPath(ctx, wf, hint)
	typ := reflect.TypeOf(wf).String()
	if n, ok := wf.(named); ok {
		typ = reflect.TypeOf(n.wf).String()
	}
	s, err := s.Emit(ctx, nil, events.WorkflowEntered{Session: s.ID(), Path: path, Workflow: typ})
	if err != nil {
		return ctx, nil, "", fmt.Errorf("flow: enter %s: %w", path, err)
	}
	ctx = context.WithValue(ctx, forcedKey{}, "")
	return context.WithValue(ctx, frameKey{}, frame{path: path, wf: wf, rec: s.Manager().Appender(), exitTo: claimFor(ctx)}), s, path, nil
}

type suspendKey struct{}

// ContextWithSuspend makes errors for which suspends returns true stop a
// run without ending it: the workflows they unwind record no
// workflow.exited and the run no run.finished, so the run continues later
// from its record (replay.Resume). A worker fleet suspends runs whose
// provider is down, to retry them as a whole.
func ContextWithSuspend(ctx context.Context, suspends func(error) bool) context.Context {
	return context.WithValue(ctx, suspendKey{}, suspends)
}

// Suspends reports whether err, met under ctx, suspends the run: a
// request waiting for a person (ErrWaiting) always does, other errors
// when ContextWithSuspend says so.
func Suspends(ctx context.Context, err error) bool {
	if errors.Is(err, ErrWaiting) {
		return true
	}
	f, _ := ctx.Value(suspendKey{}).(func(error) bool)
	return err != nil && f != nil && f(err)
}

// exit records workflow.exited on the output session (or on the input
// session when the body failed without one).
func exit(ctx context.Context, path string, in, out *session.Session, err error) (*session.Session, error) {
	if Suspends(ctx, err) {
		// Suspended, not finished: the record stops here, as after a
		// crash, and the continuation exits this workflow, not the
		// unwinding.
		return out, err
	}
	target := out
	if target == nil {
		target = in
	}
	ev := events.WorkflowExited{Session: target.ID(), Path: path, InputSession: in.ID()}
	if err != nil {
		ev.Error = err.Error()
	}
	if f, _ := ctx.Value(frameKey{}).(frame); f.exitTo != nil && f.path == path {
		// The caller writes it with the run's end (deferredexit.go).
		next, derr := f.exitTo.deferExit(path, target, out, ev, err)
		if derr != nil {
			if err != nil {
				return out, err
			}
			return out, fmt.Errorf("flow: exit %s: %w", path, derr)
		}
		return next, err
	}
	recorded, rerr := target.Emit(ctx, nil, ev)
	if rerr != nil {
		if err != nil {
			// The body's error is the one the caller needs; the record is
			// best effort once the session is already failing (it may be
			// stale, or the context canceled).
			return out, err
		}
		return out, fmt.Errorf("flow: exit %s: %w", path, rerr)
	}
	if out == nil {
		return nil, err
	}
	return recorded, err
}

// Forward runs wf as a child of the workflow running in ctx (or as "root"),
// recording workflow.entered and workflow.exited.
func Forward(ctx context.Context, wf Workflow, s *session.Session) (*session.Session, error) {
	return forward(ctx, wf, s, "")
}

func forward(ctx context.Context, wf Workflow, s *session.Session, hint string) (*session.Session, error) {
	if _, ok := wf.(empty); ok {
		return s, nil
	}
	if n, ok := wf.(named); ok {
		// The given name wins over the workflow's own; the wrapper itself
		// adds no level to the path.
		return forward(context.WithValue(ctx, forcedKey{}, n.name), n.wf, s, n.name)
	}
	if r, ok := wf.(recordsItself); ok && r.recordsItself() {
		return r.forwardAs(ctx, s, hint)
	}
	in := s
	ctx, s, path, err := enter(ctx, s, wf, hint)
	if err != nil {
		return nil, err
	}
	out, err := wf.Forward(ctx, s)
	return exit(ctx, path, in, out, err)
}

// recordsItself is implemented by the built-in workflows, which record
// their own entry and exit (so calling their Forward directly records too).
type recordsItself interface {
	recordsItself() bool
	forwardAs(ctx context.Context, s *session.Session, hint string) (*session.Session, error)
}

// Sequential runs workflows one after the other, each on the previous one's
// output.
type Sequential struct {
	name  string
	Steps []Workflow
}

// NewSequential returns a Sequential of steps.
func NewSequential(steps ...Workflow) *Sequential { return &Sequential{Steps: steps} }

// Name returns the given name (set with Named or SetName).
func (q *Sequential) Name() string { return q.name }

// SetName sets the path segment and returns q.
func (q *Sequential) SetName(name string) *Sequential { q.name = name; return q }

func (q *Sequential) recordsItself() bool { return true }

// Forward runs the steps in order.
func (q *Sequential) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return q.forwardAs(ctx, s, "")
}

func (q *Sequential) forwardAs(ctx context.Context, s *session.Session, hint string) (*session.Session, error) {
	in := s
	ctx, s, path, err := enter(ctx, s, q, hint)
	if err != nil {
		return nil, err
	}
	hints := stepHints(q.Steps, "step")
	for i, step := range q.Steps {
		next, err := forward(ctx, step, s, hints[i])
		if err != nil {
			return exit(ctx, path, in, next, fmt.Errorf("flow: %s step %d: %w", path, i, err))
		}
		s = next
	}
	return exit(ctx, path, in, s, nil)
}

// stepHints names positional children: their own name when they have one
// (made unique by appending the index, then a counter, on a collision),
// else prefix plus index. The names are a function of the list alone, so
// a replay gets the recorded ones.
func stepHints(ws []Workflow, prefix string) []string {
	out := make([]string, len(ws))
	used := map[string]bool{}
	for i, w := range ws {
		name := fmt.Sprintf("%s%d", prefix, i)
		if n, ok := w.(Namer); ok && n.Name() != "" {
			name = n.Name()
		}
		if used[name] {
			base := name
			name = fmt.Sprintf("%s%d", base, i)
			for k := i + 1; used[name]; k++ {
				name = fmt.Sprintf("%s%d", base, k)
			}
		}
		used[name] = true
		out[i] = name
	}
	return out
}

// ownName is the path segment wf would choose for itself ("" for none).
func ownName(wf Workflow) string {
	if n, ok := wf.(Namer); ok {
		return n.Name()
	}
	return ""
}

// Parallel forks the session once per branch, runs the branches
// concurrently and merges their outputs (first branch first). The first
// branch to fail cancels the others, and the call fails with a
// *BranchError naming it.
type Parallel struct {
	name     string
	Branches []Workflow
}

// NewParallel returns a Parallel of branches.
func NewParallel(branches ...Workflow) *Parallel { return &Parallel{Branches: branches} }

// Name returns the given name.
func (p *Parallel) Name() string { return p.name }

// SetName sets the path segment and returns p.
func (p *Parallel) SetName(name string) *Parallel { p.name = name; return p }

func (p *Parallel) recordsItself() bool { return true }

// Forward runs the branches.
func (p *Parallel) Forward(ctx context.Context, s *session.Session) (*session.Session, error) {
	return p.forwardAs(ctx, s, "")
}

func (p *Parallel) forwardAs(ctx context.Context, s *session.Session, hint string) (*session.Session, error) {
	if len(p.Branches) == 0 {
		return s, nil
	}
	in := s
	ctx, s, path, err := enter(ctx, s, p, hint)
	if err != nil {
		return nil, err
	}
	hints := stepHints(p.Branches, "branch")
	// Fork in order on this goroutine, so ids are deterministic.
	forks := make([]*session.Session, len(p.Branches))
	for i := range p.Branches {
		if forks[i], err = s.Fork(ctx); err != nil {
			return exit(ctx, path, in, s, err)
		}
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	outs := make([]*session.Session, len(p.Branches))
	errs := make([]error, len(p.Branches))
	var (
		wg        sync.WaitGroup
		firstMu   sync.Mutex
		firstFail = -1
	)
	for i, b := range p.Branches {
		if name := ownName(b); name != "" && name != hints[i] {
			// Branches of one name (NewParallel(critic, critic)) get
			// distinct paths: the oracle of a replay answers each path
			// from its own queue, so a shared path would hand one
			// branch's answers to the other. Distinct names keep their
			// recorded paths.
			if n, ok := b.(named); ok {
				b = n.wf
			}
			b = Named(hints[i], b)
		}
		wg.Go(func() {
			outs[i], errs[i] = forward(bctx, b, forks[i], hints[i])
			if errs[i] != nil {
				firstMu.Lock()
				if firstFail < 0 {
					firstFail = i
					cancel()
				}
				firstMu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstFail >= 0 {
		return exit(ctx, path, in, s, &BranchError{Index: firstFail, Name: hints[firstFail], Err: errs[firstFail]})
	}
	merged := outs[0]
	if len(outs) > 1 {
		merged, err = outs[0].Merge(ctx, outs[1:]...)
	}
	if err != nil {
		return exit(ctx, path, in, s, fmt.Errorf("flow: %s merge: %w", path, err))
	}
	return exit(ctx, path, in, merged, nil)
}
