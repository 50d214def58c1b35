package memorytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/session"
)

// Harness is one fresh memory under test and the session manager of the
// runtime it records into.
type Harness struct {
	Memory   memory.Memory
	Sessions *session.Manager
	// RemoteCommit says the backend commits sessions to a server that
	// extracts the memories itself (OpenViking): the commit cases then
	// check the recorded commit instead of the archived memos.
	RemoteCommit bool
}

// Setup returns a fresh, empty Harness; it registers its own cleanup.
type Setup func(t *testing.T) Harness

// Run runs the conformance suite, one subtest per behaviour.
func Run(t *testing.T, setup Setup) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"ReadYourWrites", testReadYourWrites},
		{"Ranking", testRanking},
		{"NamespaceIsolation", testNamespaceIsolation},
		{"K", testK},
		{"Forget", testForget},
		{"List", testList},
		{"RecallForRecordsHits", testRecallFor},
		{"RecallForStaleSession", testRecallForStale},
		{"CommitArchives", testCommitArchives},
		{"CommitWithExtractor", testCommitWithExtractor},
		{"InvalidArguments", testInvalid},
		{"ConcurrentRemember", testConcurrentRemember},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, setup(t)) })
	}
}

func remember(t *testing.T, m memory.Memory, ns, text string, meta map[string]string) string {
	t.Helper()
	id, err := m.Remember(t.Context(), ns, text, meta)
	if err != nil {
		t.Fatalf("Remember(%q, %q): %v", ns, text, err)
	}
	return id
}

func recall(t *testing.T, m memory.Memory, ns, q string, k int) []memory.Hit {
	t.Helper()
	hits, err := m.Recall(t.Context(), ns, q, k)
	if err != nil {
		t.Fatalf("Recall(%q, %q): %v", ns, q, err)
	}
	return hits
}

func ids(hits []memory.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func testReadYourWrites(t *testing.T, h Harness) {
	// Each recall comes right after the write, with no pause for indexing.
	for i := range 20 {
		text := fmt.Sprintf("fact number %d about zebra%d", i, i)
		id := remember(t, h.Memory, "user/ann", text, nil)
		hits := recall(t, h.Memory, "user/ann", fmt.Sprintf("zebra%d", i), 5)
		if len(hits) != 1 || hits[0].ID != id || hits[0].Text != text || hits[0].Namespace != "user/ann" {
			t.Fatalf("recall right after remember %d = %+v, want only %s", i, hits, id)
		}
	}
}

func testRanking(t *testing.T, h Harness) {
	ns := "resources"
	weak := remember(t, h.Memory, ns, "The garden needs water on Mondays and the roses need pruning in spring.", nil)
	strong := remember(t, h.Memory, ns, "Deploys go through the staging cluster; the staging cluster runs nightly deploys.", nil)
	remember(t, h.Memory, ns, "Lunch is at noon.", nil)
	hits := recall(t, h.Memory, ns, "staging deploys", 5)
	if got, want := ids(hits), []string{strong}; !slices.Equal(got, want) {
		t.Fatalf("hits = %v, want %v", got, want)
	}
	hits = recall(t, h.Memory, ns, "water the staging garden", 5)
	if len(hits) != 2 || hits[0].Score < hits[1].Score {
		t.Fatalf("hits = %+v, want two, best first", hits)
	}
	if hits[0].ID != weak {
		t.Fatalf("best hit %s, want the garden memory %s (two query terms match it)", hits[0].ID, weak)
	}
}

func testNamespaceIsolation(t *testing.T, h Harness) {
	a := remember(t, h.Memory, "user/a", "prefers tabs over spaces", nil)
	b := remember(t, h.Memory, "user/b", "prefers spaces over tabs", nil)
	for _, tt := range []struct {
		ns   string
		want []string
	}{
		{"user/a", []string{a}},
		{"user/b", []string{b}},
		{"user/c", []string{}},
	} {
		if got := ids(recall(t, h.Memory, tt.ns, "tabs spaces", 5)); !slices.Equal(got, tt.want) {
			t.Errorf("recall in %s = %v, want %v", tt.ns, got, tt.want)
		}
	}
}

func testK(t *testing.T, h Harness) {
	for i := range 12 {
		remember(t, h.Memory, "agent/root.a", fmt.Sprintf("note %d mentions kiwi", i), nil)
	}
	for _, tt := range []struct{ k, want int }{{1, 1}, {3, 3}, {0, memory.DefaultK}, {-1, memory.DefaultK}, {50, 12}} {
		if got := len(recall(t, h.Memory, "agent/root.a", "kiwi", tt.k)); got != tt.want {
			t.Errorf("k=%d: %d hits, want %d", tt.k, got, tt.want)
		}
	}
}

func testForget(t *testing.T, h Harness) {
	ctx := t.Context()
	ns := "user/ann"
	keep := remember(t, h.Memory, ns, "ann likes green tea", nil)
	drop := remember(t, h.Memory, ns, "ann likes black tea", nil)
	if err := h.Memory.Forget(ctx, ns, drop); err != nil {
		t.Fatal(err)
	}
	if got := ids(recall(t, h.Memory, ns, "black tea", 5)); !slices.Equal(got, []string{keep}) {
		t.Fatalf("after forget: hits %v, want only %s", got, keep)
	}
	for _, tt := range []struct{ name, ns, id string }{
		{"twice", ns, drop},
		{"unknown", ns, "m-unknown"},
		{"other namespace", "user/bob", keep},
	} {
		if err := h.Memory.Forget(ctx, tt.ns, tt.id); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("forget %s: err = %v, want ErrNotFound", tt.name, err)
		}
	}
	items, err := h.Memory.List(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].ID != keep {
		t.Fatalf("list after forget = %+v, want only %s", items, keep)
	}
}

func testList(t *testing.T, h Harness) {
	ctx := t.Context()
	want := []memory.Item{
		{Namespace: "resources", Text: "first", Meta: map[string]string{"src": "a"}},
		{Namespace: "resources", Text: "second"},
		{Namespace: "resources", Text: "third", Meta: map[string]string{"src": "c"}},
	}
	for i := range want {
		want[i].ID = remember(t, h.Memory, want[i].Namespace, want[i].Text, want[i].Meta)
	}
	remember(t, h.Memory, "elsewhere", "not listed", nil)
	got, err := h.Memory.List(ctx, "resources")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("list = %+v, want %d items", got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Text != w.Text || g.Namespace != w.Namespace || fmt.Sprint(g.Meta) != fmt.Sprint(w.Meta) {
			t.Errorf("item %d = %+v, want %+v", i, g, w)
		}
		if i > 0 && g.Seq <= got[i-1].Seq {
			t.Errorf("item %d seq %d not after %d", i, g.Seq, got[i-1].Seq)
		}
	}
	empty, err := h.Memory.List(ctx, "nothing/here")
	if err != nil || len(empty) != 0 {
		t.Fatalf("list of empty namespace = %v, %v", empty, err)
	}
}

func testRecallFor(t *testing.T, h Harness) {
	ctx := t.Context()
	ns := memory.UserNamespace("ann")
	id := remember(t, h.Memory, ns, "ann's build uses bazel", map[string]string{"k": "v"})
	s, err := h.Sessions.New(ctx, session.OriginUser, session.Chunk{Role: events.RoleUser, Content: "how do I build?"})
	if err != nil {
		t.Fatal(err)
	}
	next, hits, err := h.Memory.RecallFor(ctx, s, ns, "bazel build", 3, memory.WithAgent("root.helper"))
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].ID != id || hits[0].Meta["k"] != "v" {
		t.Fatalf("hits = %+v", hits)
	}
	if next.ID() != s.ID() || next.Version() != s.Version()+1 {
		t.Fatalf("new handle %s v%d, want %s v%d", next.ID(), next.Version(), s.ID(), s.Version()+1)
	}
	evs, err := h.Sessions.Store().ReadStream(ctx, s.ID(), next.Version())
	if err != nil || len(evs) != 1 {
		t.Fatalf("session stream at v%d: %v, %v", next.Version(), evs, err)
	}
	p, err := evs[0].Decode()
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := p.(*events.MemoryRecalled)
	if !ok {
		t.Fatalf("recorded %T, want memory.recalled", p)
	}
	want := events.MemoryRecalled{Namespace: ns, Query: "bazel build", K: 3, Session: s.ID(), Agent: "root.helper",
		Hits: []events.MemoryHit{memory.EventHit(hits[0])}, Backend: memory.BackendOf(h.Memory)}
	if got, want := mustJSON(t, *rec), mustJSON(t, want); got != want {
		t.Fatalf("recorded %s\nwant     %s", got, want)
	}
	// A recall with no hits is recorded too.
	next2, hits, err := h.Memory.RecallFor(ctx, next, ns, "kubernetes", 3)
	if err != nil || len(hits) != 0 || next2.Version() != next.Version()+1 {
		t.Fatalf("empty recall: %v hits, v%d, %v", hits, next2.Version(), err)
	}
}

func testRecallForStale(t *testing.T, h Harness) {
	ctx := t.Context()
	remember(t, h.Memory, "user/ann", "ann uses vim", nil)
	s, err := h.Sessions.New(ctx, session.OriginEmpty)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Memory.RecallFor(ctx, s, "user/ann", "vim", 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Memory.RecallFor(ctx, s, "user/ann", "vim", 1); !errors.Is(err, session.ErrStale) {
		t.Fatalf("recall through a stale handle: err = %v, want session.ErrStale", err)
	}
}

func newTranscript(t *testing.T, h Harness) *session.Session {
	t.Helper()
	ctx := t.Context()
	s, err := h.Sessions.New(ctx, session.OriginAgentPrompt, session.Chunk{Role: events.RoleSystem, Content: "You are terse."})
	if err != nil {
		t.Fatal(err)
	}
	s, err = s.Append(ctx,
		session.Chunk{Role: events.RoleUser, Content: "My cat is called Miso."},
		session.Chunk{Role: events.RoleAssistant, ToolCalls: []events.ToolCall{{ID: "c1", Name: "note", Arguments: "{}"}}},
		session.Chunk{Role: events.RoleToolResult, ToolCallID: "c1", Content: "noted"},
		session.Chunk{Role: events.RoleAssistant, Content: "Miso is a fine name for a cat.", Author: "root.pet"},
	)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// committed returns the last memory.committed event of ns.
func committed(t *testing.T, h Harness, ns string) *events.MemoryCommitted {
	t.Helper()
	evs, err := h.Sessions.Store().Read(t.Context(), eventlog.Query{Stream: events.MemoryStream(ns), Types: []string{events.TypeMemoryCommitted}})
	if err != nil || len(evs) == 0 {
		t.Fatalf("no memory.committed in %s: %v", ns, err)
	}
	p, err := evs[len(evs)-1].Decode()
	if err != nil {
		t.Fatal(err)
	}
	return p.(*events.MemoryCommitted)
}

func testCommitArchives(t *testing.T, h Harness) {
	if h.RemoteCommit {
		testRemoteCommit(t, h)
		return
	}
	ctx := t.Context()
	s := newTranscript(t, h)
	ns := memory.SessionNamespace(s.ID())
	got, err := h.Memory.Commit(ctx, ns, s)
	if err != nil {
		t.Fatal(err)
	}
	items, err := h.Memory.List(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	want := []memory.Item{
		{Text: "My cat is called Miso.", Meta: map[string]string{"session": s.ID(), "chunk": "1", "role": "user"}},
		{Text: "Miso is a fine name for a cat.", Meta: map[string]string{"session": s.ID(), "chunk": "4", "role": "assistant", "author": "root.pet"}},
	}
	if len(items) != len(want) || len(got) != len(want) {
		t.Fatalf("commit stored %+v (ids %v), want %d items", items, got, len(want))
	}
	for i := range want {
		if items[i].ID != got[i] || items[i].Text != want[i].Text || fmt.Sprint(items[i].Meta) != fmt.Sprint(want[i].Meta) || items[i].Session != s.ID() {
			t.Errorf("item %d = %+v, want %+v", i, items[i], want[i])
		}
	}
	c := committed(t, h, ns)
	if c.Session != s.ID() || !slices.Equal(c.IDs, got) || c.Model != "" {
		t.Fatalf("committed event = %+v", c)
	}
	if hits := recall(t, h.Memory, ns, "cat name", 5); len(hits) != 2 {
		t.Fatalf("recall after commit = %+v", hits)
	}
}

// testRemoteCommit: a commit to a server records what was sent and what
// the server answered, task polled to its end.
func testRemoteCommit(t *testing.T, h Harness) {
	s := newTranscript(t, h)
	ns := memory.SessionNamespace(s.ID())
	if _, err := h.Memory.Commit(t.Context(), ns, s); err != nil {
		t.Fatal(err)
	}
	c := committed(t, h, ns)
	if c.Session != s.ID() || c.Backend == "" || c.Remote == nil {
		t.Fatalf("committed event = %+v", c)
	}
	r := c.Remote
	if r.Messages == 0 || r.Digest == "" || r.Status != "accepted" || r.Task == "" || r.Archive == "" || r.Error != "" {
		t.Fatalf("remote commit = %+v", r)
	}
}

func testCommitWithExtractor(t *testing.T, h Harness) {
	if h.RemoteCommit {
		t.Skip("the server extracts the memories itself; see CommitArchives")
	}
	ctx := t.Context()
	s := newTranscript(t, h)
	ns := memory.UserNamespace("ann")
	var saw string
	ex := memory.ExtractorFunc(func(ctx context.Context, s *session.Session) (memory.Extraction, error) {
		saw = s.ID()
		return memory.Extraction{Model: "fake-1", Memos: []string{"The user has a cat named Miso.", " "}}, nil
	})
	got, err := h.Memory.Commit(ctx, ns, s, memory.WithExtractor(ex))
	if err != nil {
		t.Fatal(err)
	}
	if saw != s.ID() || len(got) != 1 {
		t.Fatalf("extractor saw %q, ids %v", saw, got)
	}
	hits := recall(t, h.Memory, ns, "cat", 5)
	if len(hits) != 1 || hits[0].ID != got[0] || hits[0].Text != "The user has a cat named Miso." || hits[0].Meta["model"] != "fake-1" {
		t.Fatalf("hits = %+v", hits)
	}
	if c := committed(t, h, ns); c.Model != "fake-1" || !slices.Equal(c.IDs, got) {
		t.Fatalf("committed event = %+v", c)
	}
	failing := memory.ExtractorFunc(func(context.Context, *session.Session) (memory.Extraction, error) {
		return memory.Extraction{}, errors.New("model down")
	})
	if _, err := h.Memory.Commit(ctx, ns, s, memory.WithExtractor(failing)); err == nil {
		t.Fatal("commit with a failing extractor succeeded")
	}
	if items, _ := h.Memory.List(ctx, ns); len(items) != 1 {
		t.Fatalf("failed commit stored something: %+v", items)
	}
}

func testInvalid(t *testing.T, h Harness) {
	ctx := t.Context()
	m := h.Memory
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"remember empty namespace", func() error { _, err := m.Remember(ctx, "", "x", nil); return err }},
		{"remember padded namespace", func() error { _, err := m.Remember(ctx, " a", "x", nil); return err }},
		{"remember empty text", func() error { _, err := m.Remember(ctx, "a", "  ", nil); return err }},
		{"recall empty query", func() error { _, err := m.Recall(ctx, "a", "", 1); return err }},
		{"recall empty namespace", func() error { _, err := m.Recall(ctx, "", "x", 1); return err }},
		{"recallfor nil session", func() error { _, _, err := m.RecallFor(ctx, nil, "a", "x", 1); return err }},
		{"commit nil session", func() error { _, err := m.Commit(ctx, "a", nil); return err }},
		{"forget empty id", func() error { return m.Forget(ctx, "a", "") }},
		{"list empty namespace", func() error { _, err := m.List(ctx, ""); return err }},
	} {
		if err := tt.call(); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tt.name, err)
		}
	}
}

func testConcurrentRemember(t *testing.T, h Harness) {
	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := h.Memory.Remember(t.Context(), "shared", fmt.Sprintf("writer %d item %d plum", w, i), nil); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	items, err := h.Memory.List(t.Context(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, it := range items {
		seen[it.ID] = true
	}
	if len(items) != writers*each || len(seen) != writers*each {
		t.Fatalf("%d items, %d distinct ids, want %d", len(items), len(seen), writers*each)
	}
	if got := len(recall(t, h.Memory, "shared", "plum", 100)); got != writers*each {
		t.Fatalf("recall found %d, want %d", got, writers*each)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
