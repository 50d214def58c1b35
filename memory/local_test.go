package memory_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/memory/memorytest"
)

func TestLocal_Conformance(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memorytest.Harness {
		rt := MustOpenRuntime(t, t.TempDir())
		return memorytest.Harness{Memory: MustOpenLocal(t, rt, memory.LocalOptions{}), Sessions: rt.Sessions()}
	})
}

// seed remembers texts in ns and returns their ids.
func seed(t *testing.T, m memory.Memory, ns string, texts ...string) []string {
	t.Helper()
	ids := make([]string, len(texts))
	for i, text := range texts {
		id, err := m.Remember(t.Context(), ns, text, map[string]string{"i": fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

var corpus = []string{
	"The deploy pipeline runs integration tests before every release.",
	"Alice prefers dark mode and a large font in the editor.",
	"The staging database is reset every Sunday night.",
	"Release notes are written by the person who cuts the release.",
	"Bob is allergic to peanuts; order lunch without them.",
	"Integration tests need the docker daemon running.",
	"The office closes early on Fridays in summer.",
	"Use the staging cluster for load tests, never production.",
}

var queries = []string{"release", "integration tests", "staging", "lunch peanuts", "dark editor font", "summer friday office", "production load"}

func recallAll(t *testing.T, m memory.Memory, ns string) [][]memory.Hit {
	t.Helper()
	out := make([][]memory.Hit, len(queries))
	for i, q := range queries {
		hits, err := m.Recall(t.Context(), ns, q, 5)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = hits
	}
	return out
}

func sameHits(t *testing.T, got, want [][]memory.Hit) {
	t.Helper()
	for i := range want {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Errorf("query %q:\n got  %v\n want %v", queries[i], got[i], want[i])
		}
	}
}

func TestLocal_PersistsAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	var logs logBuffer
	run := func(fn func(*memory.Local)) {
		rt := MustOpenRuntime(t, dir)
		m := MustOpenLocal(t, rt, memory.LocalOptions{Logger: logs.logger()})
		fn(m)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	var first [][]memory.Hit
	run(func(m *memory.Local) {
		ids = seed(t, m, "user/ann", corpus...)
		first = recallAll(t, m, "user/ann")
	})
	run(func(m *memory.Local) {
		if got := m.Checkpoint(); got == 0 {
			t.Fatal("second run starts with an empty index")
		}
		sameHits(t, recallAll(t, m, "user/ann"), first)
		items, err := m.List(t.Context(), "user/ann")
		if err != nil || len(items) != len(ids) {
			t.Fatalf("list in second run: %d items, %v", len(items), err)
		}
	})
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("a healthy index was rebuilt:\n%s", logs.String())
	}
	// The checkpoint is mirrored into the database on close.
	rt := MustOpenRuntime(t, dir)
	var seq int64
	if err := rt.Store().DB().GetContext(t.Context(), &seq, `SELECT seq FROM projection_checkpoints WHERE name = ?`, memory.CheckpointName); err != nil {
		t.Fatal(err)
	}
	head, _ := rt.Store().Head(t.Context())
	if seq != head.Seq {
		t.Fatalf("mirrored checkpoint %d, head %d", seq, head.Seq)
	}
}

// damage describes a way to break the index directory.
type damage struct {
	name string
	fn   func(t *testing.T, dir string)
}

func garbage(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("\x00\xffnot an index\x13\x37"), 0o600); err != nil {
		t.Fatal(err)
	}
}

var damages = []damage{
	{"deleted", func(t *testing.T, dir string) {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}},
	{"emptied", func(t *testing.T, dir string) {
		os.RemoveAll(dir)
		os.Mkdir(dir, 0o755)
	}},
	{"garbage index_meta.json", func(t *testing.T, dir string) { garbage(t, filepath.Join(dir, "index_meta.json")) }},
	{"garbage root.bolt", func(t *testing.T, dir string) { garbage(t, filepath.Join(dir, "store", "root.bolt")) }},
	{"garbage segments", func(t *testing.T, dir string) {
		segs, _ := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
		if len(segs) == 0 {
			t.Fatal("no segment files to damage")
		}
		for _, s := range segs {
			garbage(t, s)
		}
	}},
	{"segments missing", func(t *testing.T, dir string) {
		segs, _ := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
		for _, s := range segs {
			os.Remove(s)
		}
	}},
	{"every file garbage", func(t *testing.T, dir string) {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				garbage(t, path)
			}
			return nil
		})
	}},
}

func TestLocal_RebuildsDamagedIndex(t *testing.T) {
	// An index an earlier build wrote (format 1: terms not prefixed by
	// their namespace) is rebuilt like a damaged one.
	cases := append(slices.Clone(damages), damage{"written by format 1", func(t *testing.T, dir string) {
		if err := memory.SetIndexFormat(dir, 1); err != nil {
			t.Fatal(err)
		}
	}})
	for _, d := range cases {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			rt := MustOpenRuntime(t, dir)
			m := MustOpenLocal(t, rt, memory.LocalOptions{})
			ids := seed(t, m, "user/ann", corpus...)
			if err := m.Forget(t.Context(), "user/ann", ids[0]); err != nil {
				t.Fatal(err)
			}
			want := recallAll(t, m, "user/ann")
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			d.fn(t, indexDir(rt))

			var logs logBuffer
			m2, err := memory.OpenLocal(t.Context(), rt.Store(), indexDir(rt), memory.LocalOptions{Logger: logs.logger()})
			if err != nil {
				t.Fatalf("reopen after damage: %v", err)
			}
			defer m2.Close()
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "rebuilding") {
				t.Errorf("no rebuild warning; log:\n%s", logs.String())
			}
			sameHits(t, recallAll(t, m2, "user/ann"), want)
		})
	}
}

func TestLocal_NewIndexOnEmptyLogDoesNotWarn(t *testing.T) {
	var logs logBuffer
	rt := MustOpenRuntime(t, t.TempDir())
	MustOpenLocal(t, rt, memory.LocalOptions{Logger: logs.logger()})
	if logs.String() != "" {
		t.Fatalf("log on first open: %s", logs.String())
	}
}

func TestLocal_IndexOfAnotherLogIsRebuilt(t *testing.T) {
	a := MustOpenRuntime(t, t.TempDir())
	ma := MustOpenLocal(t, a, memory.LocalOptions{})
	seed(t, ma, "ns", "apples are red", "pears are green")
	// Recall waits for the index to absorb both memories.
	if _, err := ma.Recall(t.Context(), "ns", "apples", 1); err != nil {
		t.Fatal(err)
	}
	ma.Close()

	b := MustOpenRuntime(t, t.TempDir())
	mb := MustOpenLocal(t, b, memory.LocalOptions{})
	seed(t, mb, "ns", "bananas are yellow", "plums are purple", "limes are green")
	mb.Close()
	// Put a's index beside b's database.
	os.RemoveAll(indexDir(b))
	if err := os.Rename(indexDir(a), indexDir(b)); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	m, err := memory.OpenLocal(t.Context(), b.Store(), indexDir(b), memory.LocalOptions{Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !strings.Contains(logs.String(), "rebuilding") {
		t.Errorf("no rebuild warning; log:\n%s", logs.String())
	}
	hits, err := m.Recall(t.Context(), "ns", "green", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Text != "limes are green" {
		t.Fatalf("hits = %v, want b's memory only", hits)
	}
}

func TestLocal_RefusesForeignDirectory(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	for _, tt := range []struct {
		name  string
		setup func(dir string) error
	}{
		{"directory with other files", func(dir string) error {
			os.Mkdir(dir, 0o755)
			return os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600)
		}},
		{"a file", func(dir string) error { return os.WriteFile(dir, []byte("mine"), 0o600) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "memory.bleve")
			if err := tt.setup(dir); err != nil {
				t.Fatal(err)
			}
			_, err := memory.OpenLocal(t.Context(), rt.Store(), dir, memory.LocalOptions{})
			if !errors.Is(err, memory.ErrNotIndex) {
				t.Fatalf("err = %v, want ErrNotIndex", err)
			}
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("the directory was touched: %v", err)
			}
		})
	}
}

func TestLocal_LockedIndex(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	// IdleClose < 0 keeps the index open until another process asks.
	m := MustOpenLocal(t, rt, memory.LocalOptions{IdleClose: -1})
	seed(t, m, "ns", "held open")
	release, err := m.Hold(t.Context()) // busy, as during a long rebuild
	if err != nil {
		t.Fatal(err)
	}
	_, err = memory.OpenLocal(t.Context(), rt.Store(), indexDir(rt), memory.LocalOptions{LockTimeout: 50e6})
	if !errors.Is(err, memory.ErrLocked) {
		t.Fatalf("second open: err = %v, want ErrLocked", err)
	}
	// The error names the holder, so a user knows which process to wait
	// for or stop.
	var le *memory.LockedError
	if !errors.As(err, &le) || le.Holder.PID != os.Getpid() || le.Holder.Command == "" {
		t.Fatalf("second open: err = %#v, want a *LockedError naming pid %d", err, os.Getpid())
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("message %q does not name the pid", err)
	}
	// Once unused, the index goes to whoever asks for it, although the
	// holder would keep it open for ever otherwise.
	release()
	m2, err := memory.OpenLocal(t.Context(), rt.Store(), indexDir(rt), memory.LocalOptions{LockTimeout: time.Minute, IdleClose: -1})
	if err != nil {
		t.Fatalf("open once the holder is idle: %v", err)
	}
	defer m2.Close()
	if m.IsOpen() {
		t.Error("the first still has the index open")
	}
	// The held index was not rebuilt or damaged.
	if hits, err := m.Recall(t.Context(), "ns", "held", 1); err != nil || len(hits) != 1 {
		t.Fatalf("recall on the first: %v, %v", hits, err)
	}
}

func TestLocal_Rebuild(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	m := MustOpenLocal(t, rt, memory.LocalOptions{BatchSize: 3})
	ids := seed(t, m, "user/ann", corpus...)
	for _, id := range []string{ids[2], ids[5]} {
		if err := m.Forget(t.Context(), "user/ann", id); err != nil {
			t.Fatal(err)
		}
	}
	seed(t, m, "user/ann", "Integration tests run nightly on staging.")
	want := recallAll(t, m, "user/ann")
	// Recalls keep working while the index is rebuilt.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := m.Recall(t.Context(), "user/ann", "release", 3); err != nil {
				t.Errorf("recall during rebuild: %v", err)
				return
			}
		}
	})
	var lastDone, lastTotal int64
	stats, err := m.RebuildWithProgress(t.Context(), func(done, total int64) { lastDone, lastTotal = done, total })
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	head, _ := rt.Store().Head(t.Context())
	if lastDone != head.Seq || lastTotal != head.Seq {
		t.Fatalf("progress ended at %d of %d, want the head %d", lastDone, lastTotal, head.Seq)
	}
	if stats.Seq != head.Seq || stats.Memories != int64(len(corpus)-1) {
		t.Fatalf("rebuild stats %+v, want seq %d and %d memories", stats, head.Seq, len(corpus)-1)
	}
	sameHits(t, recallAll(t, m, "user/ann"), want)
	// The indexer keeps going on the new index.
	id := seed(t, m, "user/ann", "Quokkas are marsupials.")[0]
	hits, err := m.Recall(t.Context(), "user/ann", "quokkas", 1)
	if err != nil || len(hits) != 1 || hits[0].ID != id {
		t.Fatalf("recall after rebuild: %v, %v", hits, err)
	}
}

func TestLocal_RemovesLeftoverRebuild(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	leftover := indexDir(rt) + ".rebuild"
	if err := os.MkdirAll(filepath.Join(leftover, "store"), 0o755); err != nil {
		t.Fatal(err)
	}
	MustOpenLocal(t, rt, memory.LocalOptions{})
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("scratch directory of a crashed rebuild still there: %v", err)
	}
}

func TestLocal_SeesOtherProcessAppends(t *testing.T) {
	dir := t.TempDir()
	rt := MustOpenRuntime(t, dir)
	m := MustOpenLocal(t, rt, memory.LocalOptions{PollInterval: 1 << 40}) // no polling: only the recall's kick finds it
	seed(t, m, "ns", "local fact")
	// A second store on the same database stands in for another process:
	// its commits do not wake this process's indexer.
	other, err := eventlog.Open(t.Context(), eventlog.Options{Path: filepath.Join(dir, rath.DBFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Append(t.Context(), events.MemoryStream("ns"), eventlog.AnyVersion,
		events.MemoryRemembered{Namespace: "ns", ID: "m-other", Text: "remote fact"}); err != nil {
		t.Fatal(err)
	}
	hits, err := m.Recall(t.Context(), "ns", "remote", 5)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Collect(func(yield func(string) bool) {
		for _, h := range hits {
			yield(h.ID)
		}
	}); !slices.Equal(got, []string{"m-other"}) {
		t.Fatalf("hits = %v", got)
	}
	// The writer cache notices the other process's write as a conflict.
	if _, err := m.Remember(t.Context(), "ns", "after the other", nil); err != nil {
		t.Fatal(err)
	}
}

func TestLocal_ClosedCalls(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	m, err := memory.OpenLocal(context.Background(), rt.Store(), indexDir(rt), memory.LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, m, "ns", "x marks the spot")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := m.Recall(t.Context(), "ns", "spot", 1); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("recall after close: %v, want ErrClosed", err)
	}
}

// TestLocal_SharedByTwoOpeners is two processes' memories on one index
// (two Locals on one directory lock each other out as two processes do):
// neither holds the index while idle, so both recall, forget and rebuild in
// turn, each seeing the other's writes.
func TestLocal_SharedByTwoOpeners(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	opts := memory.LocalOptions{IdleClose: 20 * time.Millisecond, LockTimeout: time.Minute}
	a := MustOpenLocal(t, rt, opts)
	b := MustOpenLocal(t, rt, opts)
	ctx := t.Context()
	for i := range 5 {
		writer, reader := a, b
		if i%2 == 1 {
			writer, reader = b, a
		}
		text := fmt.Sprintf("turn %d keeps a kumquat", i)
		id, err := writer.Remember(ctx, "ns", text, nil)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := reader.Recall(ctx, "ns", "kumquat", 10)
		if err != nil {
			t.Fatalf("turn %d: recall: %v", i, err)
		}
		if len(hits) != 1 || hits[0].ID != id {
			t.Fatalf("turn %d: hits = %v, want only %s", i, hits, id)
		}
		if err := reader.Forget(ctx, "ns", id); err != nil {
			t.Fatalf("turn %d: forget: %v", i, err)
		}
	}
	if _, err := a.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if hits, err := b.Recall(ctx, "ns", "kumquat", 10); err != nil || len(hits) != 0 {
		t.Fatalf("after rebuild: %v, %v; want nothing", hits, err)
	}
}

// TestLocal_ClosesWhenIdle checks that an idle Local lets go of the index.
func TestLocal_ClosesWhenIdle(t *testing.T) {
	rt := MustOpenRuntime(t, t.TempDir())
	m := MustOpenLocal(t, rt, memory.LocalOptions{IdleClose: 10 * time.Millisecond})
	seed(t, m, "ns", "an idle fact")
	if _, err := m.Recall(t.Context(), "ns", "fact", 1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); m.IsOpen(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the index is still open a minute after its last use")
		}
	}
}
