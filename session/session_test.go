package session_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

func MustOpen(tb testing.TB) *rath.Runtime {
	tb.Helper()
	rt, err := rath.Open(context.Background(), tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

func user(text string) session.Chunk { return session.Chunk{Role: events.RoleUser, Content: text} }
func assistant(text string) session.Chunk {
	return session.Chunk{Role: events.RoleAssistant, Content: text}
}

func contents(s *session.Session) []string {
	var out []string
	for _, c := range s.Chunks() {
		out = append(out, c.Content)
	}
	return out
}

func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func TestSession_AppendIsImmutable(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	s0, err := rt.NewUserSession(ctx, "hi")
	if err != nil {
		t.Fatal(err)
	}
	s1, err := s0.Append(ctx, assistant("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(s0); !equal(got, []string{"hi"}) {
		t.Fatalf("old handle changed: %v", got)
	}
	if got := contents(s1); !equal(got, []string{"hi", "hello"}) {
		t.Fatalf("new handle = %v", got)
	}
	if s0.ID() != s1.ID() || s1.Version() != s0.Version()+1 {
		t.Fatalf("ids %s/%s versions %d/%d", s0.ID(), s1.ID(), s0.Version(), s1.Version())
	}
	// Appending through the old handle is a stale write.
	_, err = s0.Append(ctx, assistant("again"))
	var se *session.StaleError
	if !errors.As(err, &se) || !errors.Is(err, session.ErrStale) {
		t.Fatalf("err = %v, want StaleError", err)
	}
	if se.Have != 1 || se.Head != 2 || se.ID != s0.ID() {
		t.Fatalf("stale = %+v", se)
	}
	loaded, err := rt.Session(ctx, s0.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !equal(contents(loaded), []string{"hi", "hello"}) || loaded.Version() != 2 {
		t.Fatalf("loaded = %v v%d", contents(loaded), loaded.Version())
	}
}

func TestSession_ForkSharesAndDiverges(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	root, _ := rt.NewUserSession(ctx, "task")
	root, _ = root.To(ctx, "local", "./work")
	a, err := root.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := root.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() == b.ID() || a.ID() == root.ID() {
		t.Fatalf("fork ids not distinct: %s %s %s", root.ID(), a.ID(), b.ID())
	}
	a, _ = a.Append(ctx, assistant("plan A"))
	b, _ = b.Append(ctx, assistant("plan B"))
	root, err = root.Append(ctx, user("more"))
	if err != nil {
		t.Fatalf("source stays writable after forks: %v", err)
	}
	for _, tc := range []struct {
		s    *session.Session
		want []string
	}{{a, []string{"task", "plan A"}}, {b, []string{"task", "plan B"}}, {root, []string{"task", "more"}}} {
		if !equal(contents(tc.s), tc.want) {
			t.Fatalf("%s in memory = %v, want %v", tc.s.ID(), contents(tc.s), tc.want)
		}
		loaded, err := rt.Session(ctx, tc.s.ID())
		if err != nil {
			t.Fatal(err)
		}
		if !equal(contents(loaded), tc.want) {
			t.Fatalf("%s loaded = %v, want %v", tc.s.ID(), contents(loaded), tc.want)
		}
	}
	if got := a.Parents(); len(got) != 1 || got[0] != root.ID() {
		t.Fatalf("parents = %v", got)
	}
	if a.Placement().Backend != "local" || a.Lineage().Kind != session.KindFork {
		t.Fatalf("fork placement %v lineage %v", a.Placement(), a.Lineage())
	}
	// A fork of a fork of a stale handle still reads right.
	aa, _ := a.Fork(ctx)
	aa, _ = aa.Append(ctx, assistant("deeper"))
	loaded, _ := rt.Session(ctx, aa.ID())
	if !equal(contents(loaded), []string{"task", "plan A", "deeper"}) {
		t.Fatalf("fork of fork = %v", contents(loaded))
	}
}

func TestSession_DetachKeepsProvenanceButNoEdge(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	root, _ := rt.NewUserSession(ctx, "x")
	d, err := root.Detach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Parents()) != 0 || d.Lineage().Source != root.ID() || d.Lineage().Kind != session.KindDetach {
		t.Fatalf("detached lineage = %+v", d.Lineage())
	}
	edges, _ := rt.Reader().Edges(ctx)
	if len(edges) != 0 {
		t.Fatalf("edges = %v, want none", edges)
	}
	evs, _ := rt.Store().ReadStream(ctx, d.ID(), 1)
	if len(evs) != 1 || evs[0].Type != events.TypeSessionDetached {
		t.Fatalf("provenance event = %+v", evs)
	}
	p, _ := evs[0].Decode()
	if p.(*events.SessionDetached).Source != root.ID() {
		t.Fatal("the log lost the detach source")
	}
	if !equal(contents(d), []string{"x"}) {
		t.Fatalf("detached chunks = %v", contents(d))
	}
}

func TestSession_Merge(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	root, _ := rt.NewUserSession(ctx, "q")
	a, _ := root.Fork(ctx)
	b, _ := root.Fork(ctx)
	a, _ = a.Append(ctx, assistant("a1"))
	b, _ = b.Append(ctx, assistant("b1"), assistant("b2"))
	m, err := a.Merge(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"q", "a1", "b1", "b2"}
	if !equal(contents(m), want) {
		t.Fatalf("merged = %v, want %v", contents(m), want)
	}
	loaded, _ := rt.Session(ctx, m.ID())
	if !equal(contents(loaded), want) {
		t.Fatalf("merged loaded = %v", contents(loaded))
	}
	if got := loaded.Parents(); !equal(got, []string{a.ID(), b.ID()}) {
		t.Fatalf("merge parents = %v", got)
	}
	if _, err := a.Merge(ctx); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("empty merge err = %v", err)
	}
	m2, _ := m.Append(ctx, user("next"))
	if !equal(contents(m2), append(want, "next")) {
		t.Fatalf("append after merge = %v", contents(m2))
	}
}

// TestSession_MergeSharedPrefixes: an other session adds only what no
// session before it in the merge already holds, whichever one it extends.
func TestSession_MergeSharedPrefixes(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	root, _ := rt.NewUserSession(ctx, "q")
	extend := func(from *session.Session, text string) *session.Session {
		t.Helper()
		f, err := from.Fork(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if f, err = f.Append(ctx, assistant(text)); err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b, d := extend(root, "a1"), extend(root, "b1"), extend(root, "d1")
	c := extend(b, "c1")  // C extends B
	e := extend(c, "e1")  // E extends C
	a2 := extend(a, "a2") // A2 extends A
	cases := []struct {
		name   string
		first  *session.Session
		others []*session.Session
		want   []string
	}{
		{"siblings", a, []*session.Session{b, d}, []string{"q", "a1", "b1", "d1"}},
		{"other extends the first", a, []*session.Session{a2}, []string{"q", "a1", "a2"}},
		{"later other extends an earlier other", a, []*session.Session{b, c}, []string{"q", "a1", "b1", "c1"}},
		{"chain of extensions", a, []*session.Session{b, c, e}, []string{"q", "a1", "b1", "c1", "e1"}},
		{"later other is a prefix of an earlier other", a, []*session.Session{c, b}, []string{"q", "a1", "b1", "c1"}},
		{"extension of the first after a sibling", b, []*session.Session{a, a2}, []string{"q", "b1", "a1", "a2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.first.Merge(ctx, tc.others...)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(contents(m), tc.want) {
				t.Fatalf("merged = %v, want %v", contents(m), tc.want)
			}
			loaded, err := rt.Session(ctx, m.ID())
			if err != nil {
				t.Fatal(err)
			}
			if !equal(contents(loaded), tc.want) {
				t.Fatalf("merged, loaded = %v, want %v", contents(loaded), tc.want)
			}
		})
	}
}

func TestSession_IDsAreDeterministic(t *testing.T) {
	ids := func() []string {
		ctx := t.Context()
		rt := MustOpen(t)
		root, _ := rt.Sessions().In(eventlog.Scope{Run: events.RunRef{ID: "run-1", Seed: "seed-42"}}).New(ctx, session.OriginUser, user("x"))
		f1, _ := root.Fork(ctx)
		f2, _ := root.Fork(ctx)
		d, _ := f1.Detach(ctx)
		m, _ := f1.Merge(ctx, f2)
		return []string{root.ID(), f1.ID(), f2.ID(), d.ID(), m.ID()}
	}
	first, second := ids(), ids()
	if !equal(first, second) {
		t.Fatalf("ids differ between identical runs:\n%v\n%v", first, second)
	}
	other := func() string {
		ctx := t.Context()
		rt := MustOpen(t)
		root, _ := rt.Sessions().In(eventlog.Scope{Run: events.RunRef{ID: "run-2", Seed: "seed-43"}}).New(ctx, session.OriginUser, user("x"))
		return root.ID()
	}()
	if other == first[0] {
		t.Fatal("a different seed gave the same id")
	}
}

// TestSession_IDsOutsideARunAreUnique: outside a run ids derive from each
// Manager's own seed, so stores and processes do not share ids; a fixed
// local seed makes them reproducible.
func TestSession_IDsOutsideARunAreUnique(t *testing.T) {
	ctx := t.Context()
	first := func(rt *rath.Runtime, opts ...session.ManagerOption) string {
		t.Helper()
		m := session.NewManager(rt.Store(), rt.Reader(), opts...)
		s, err := m.New(ctx, session.OriginUser, user("x"))
		if err != nil {
			t.Fatal(err)
		}
		return s.ID()
	}
	a, b := MustOpen(t), MustOpen(t)
	ra, _ := a.NewUserSession(ctx, "x")
	rb, _ := b.NewUserSession(ctx, "x")
	cases := []struct {
		name  string
		x, y  string
		equal bool
	}{
		{"first sessions of two runtimes", ra.ID(), rb.ID(), false},
		{"two managers on one store", first(a), first(a), false},
		{"one local seed in two stores", first(a, session.WithLocalSeed("fixed")), first(b, session.WithLocalSeed("fixed")), true},
	}
	for _, c := range cases {
		if (c.x == c.y) != c.equal {
			t.Errorf("%s: %s and %s, want equal=%v", c.name, c.x, c.y, c.equal)
		}
	}
}

func TestSession_TimeTravel(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	s, _ := rt.NewUserSession(ctx, "one")
	s, _ = s.Append(ctx, assistant("two"))
	mid, _ := rt.Store().Head(ctx)
	s, _ = s.To(ctx, "bwrap", "/w")
	s, _ = s.Append(ctx, user("three"))
	past, err := rt.SessionAt(ctx, s.ID(), mid.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(contents(past), []string{"one", "two"}) || past.Version() != 2 || past.Placement().Backend != "" {
		t.Fatalf("past = %v v%d %v", contents(past), past.Version(), past.Placement())
	}
	if _, err := past.Append(ctx, user("x")); !errors.Is(err, session.ErrStale) {
		t.Fatalf("append to the past = %v, want stale", err)
	}
	branch, err := past.Fork(ctx)
	if err != nil {
		t.Fatal(err)
	}
	branch, _ = branch.Append(ctx, user("alt"))
	loaded, _ := rt.Session(ctx, branch.ID())
	if !equal(contents(loaded), []string{"one", "two", "alt"}) {
		t.Fatalf("branch from the past = %v", contents(loaded))
	}
	if _, err := rt.SessionAt(ctx, branch.ID(), mid.Seq); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("session before it existed: err = %v", err)
	}
}

func TestSession_UsageIsCumulativeAlongLineage(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	s, _ := rt.NewUserSession(ctx, "q")
	call := events.ProviderCalled{Session: s.ID(), Model: "m", Usage: events.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}
	s, err := s.Emit(ctx, nil, call)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := s.Fork(ctx)
	call.Session = f.ID()
	f, _ = f.Emit(ctx, nil, call)
	if got := f.Usage(); got.TotalTokens != 30 || got.Calls != 2 {
		t.Fatalf("fork usage = %+v, want 30 tokens over 2 calls", got)
	}
	loaded, _ := rt.Session(ctx, f.ID())
	if loaded.Usage() != f.Usage() {
		t.Fatalf("loaded usage %+v != handle usage %+v", loaded.Usage(), f.Usage())
	}
	if s.Usage().TotalTokens != 15 {
		t.Fatalf("parent usage changed: %+v", s.Usage())
	}
	d, _ := f.Detach(ctx)
	if d.Usage() != (events.Usage{}) {
		t.Fatalf("detached usage = %+v, want zero", d.Usage())
	}
}

// TestSession_MergeCountsEachCallOnce merges sessions that share an
// ancestor: the ancestor's calls were made once and count once.
func TestSession_MergeCountsEachCallOnce(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	call := func(s *session.Session, tokens int64) *session.Session {
		t.Helper()
		next, err := s.Emit(ctx, nil, events.ProviderCalled{Session: s.ID(), Model: "m", Usage: events.Usage{PromptTokens: tokens, TotalTokens: tokens}})
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	must := func(s *session.Session, err error) *session.Session {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := func(name string, s *session.Session, tokens, calls int64) {
		t.Helper()
		if u := s.Usage(); u.TotalTokens != tokens || u.PromptTokens != tokens || u.Calls != calls {
			t.Fatalf("%s: usage %+v, want %d tokens in %d calls", name, u, tokens, calls)
		}
		loaded := must(rt.Session(ctx, s.ID()))
		if loaded.Usage() != s.Usage() {
			t.Fatalf("%s: loaded usage %+v != handle usage %+v", name, loaded.Usage(), s.Usage())
		}
	}
	root := call(must(rt.NewUserSession(ctx, "q")), 1000)
	a := call(must(root.Fork(ctx)), 15)
	b := call(must(root.Fork(ctx)), 15)
	ab := must(a.Merge(ctx, b))
	want("two forks merged", ab, 1030, 3)

	// The root went on after the forks: its later call counts once too,
	// and its earlier one still once.
	later := call(root, 7)
	want("root merged with a fork of its past", must(later.Merge(ctx, a)), 1022, 3)

	// A merge of a merge and a fork of it.
	c := call(must(ab.Fork(ctx)), 5)
	want("merge with its own fork", must(ab.Merge(ctx, c)), 1035, 4)

	// A compression carries the lineage; a detached session starts afresh.
	comp := must(b.Compress(ctx, session.Chunk{Role: "summary", Content: "s"}))
	want("merge with a compression", must(a.Merge(ctx, comp)), 1030, 3)
	det := call(must(b.Detach(ctx)), 1)
	want("merge with a detached copy", must(a.Merge(ctx, det)), 1016, 3)

	// Disjoint lineages still add up.
	other := call(must(rt.NewUserSession(ctx, "other")), 40)
	want("disjoint", must(a.Merge(ctx, other)), 1055, 3)
}

func TestSession_BadInput(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	s, _ := rt.NewUserSession(ctx, "q")
	if _, err := s.Append(ctx, session.Chunk{Role: "wizard"}); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("bad role err = %v", err)
	}
	if _, err := rt.Session(ctx, "s-nope"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("unknown session err = %v", err)
	}
	if _, err := s.To(ctx, "", ""); !errors.Is(err, session.ErrInvalid) {
		t.Fatalf("empty backend err = %v", err)
	}
	if h, _ := rt.Session(ctx, s.ID()); h.Len() != 1 {
		t.Fatal("bad input changed the session")
	}
}

// Pending gives the write Emit would make and the handle it would return;
// written by the caller, the write lands where Emit's would, and chunks
// or nothing at all are refused.
func TestSession_Pending(t *testing.T) {
	ctx := t.Context()
	rt := MustOpen(t)
	s, err := rt.NewUserSession(ctx, "hi")
	if err != nil {
		t.Fatal(err)
	}
	ev := events.WorkflowExited{Session: s.ID(), Path: "root", InputSession: s.ID()}
	w, next, err := s.Pending(ev)
	if err != nil {
		t.Fatal(err)
	}
	if w.Stream != s.ID() || w.Expected != s.Version() || len(w.Events) != 1 || next.Version() != s.Version()+1 {
		t.Fatalf("write %+v, next version %d; want one event on %s at %d, next %d", w, next.Version(), s.ID(), s.Version(), s.Version()+1)
	}
	stored, err := rt.Store().AppendWrites(ctx, w)
	if err != nil || stored[0].Version != next.Version() {
		t.Fatalf("stored %v, %v; want version %d", stored, err, next.Version())
	}
	if _, err := next.Append(ctx, user("more")); err != nil {
		t.Fatalf("the pending handle after its write landed: %v", err)
	}
	for name, evs := range map[string][]events.Payload{
		"chunk": {events.ChunkAppended{Session: s.ID(), Index: 1, Chunk: events.Chunk{Role: "user", Content: "x"}}},
		"none":  nil,
	} {
		if _, _, err := s.Pending(evs...); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}
