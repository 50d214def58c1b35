package vikingmem_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/memory/memorytest"
	"github.com/gorath/rath/memory/openviking"
	"github.com/gorath/rath/memory/openvikingtest"
	"github.com/gorath/rath/memory/vikingmem"
)

const key = "ov-vikingmem-5ecret-key-77"

type fixture struct {
	rt  *rath.Runtime
	srv *openvikingtest.Server
	m   *vikingmem.Memory
}

func setup(t *testing.T, sopts openvikingtest.Options, wait time.Duration) fixture {
	t.Helper()
	sopts.APIKey = key
	srv := openvikingtest.New(sopts)
	t.Cleanup(srv.Close)
	rt, err := rath.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	rt.Secrets().Add("OPENVIKING_API_KEY", key)
	c, err := openviking.New(openviking.Options{URL: srv.URL, APIKey: key, User: "alice", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	m, err := vikingmem.New(rt.Store(), vikingmem.Options{Client: c, User: "alice", CommitWait: wait, PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{rt: rt, srv: srv, m: m}
}

func TestConformance(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memorytest.Harness {
		f := setup(t, openvikingtest.Options{Polls: 1}, 0)
		return memorytest.Harness{Memory: f.m, Sessions: f.rt.Sessions(), RemoteCommit: true}
	})
}

// A namespace is a directory of the user's memories; a viking:// URI
// namespace is used as it is; hits carry URIs and levels.
func TestRecallFor_RecordsURIsLevelsAndScores(t *testing.T) {
	f := setup(t, openvikingtest.Options{}, 0)
	ctx := t.Context()
	id, err := f.m.Remember(ctx, "user/ana", "ana prefers answers in French", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "viking://user/alice/memories/rath/user%2Fana/") {
		t.Fatalf("id = %s", id)
	}
	s, err := f.rt.NewUserSession(ctx, "how should I answer?")
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"user/ana", "viking://user/alice/memories/"} {
		next, hits, err := f.m.RecallFor(ctx, s, ns, "answers French", 3)
		if err != nil {
			t.Fatal(err)
		}
		s = next
		if len(hits) != 1 || hits[0].URI != id || hits[0].Level == nil || *hits[0].Level != 2 || hits[0].Score <= 0 || hits[0].Score > 1 {
			t.Fatalf("%s: hits = %+v", ns, hits)
		}
	}
	evs, err := f.rt.Store().Read(ctx, eventlog.Query{Stream: s.ID(), Types: []string{events.TypeMemoryRecalled}})
	if err != nil || len(evs) != 2 {
		t.Fatalf("recalled events: %d %v", len(evs), err)
	}
	p, _ := evs[0].Decode()
	r := p.(*events.MemoryRecalled)
	if r.Backend != vikingmem.Name || len(r.Hits) != 1 || r.Hits[0].URI != id || r.Hits[0].Text != "ana prefers answers in French" {
		t.Fatalf("recorded %+v", r)
	}
}

// A namespace under the home alias (viking://~/memories/) is this
// backend's user's space: what is remembered there gets the URI the
// server answers with, and a recall under the alias finds it with the
// metadata rath recorded.
func TestHomeAliasNamespace(t *testing.T) {
	f := setup(t, openvikingtest.Options{}, 0)
	ctx := t.Context()
	const ns = "viking://~/memories/notes/"
	id, err := f.m.Remember(ctx, ns, "the standup moved to ten", map[string]string{"source": "calendar"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "viking://user/alice/memories/notes/") || !strings.Contains(strings.Join(f.srv.Files("default"), " "), id) {
		t.Fatalf("id %s, server files %v", id, f.srv.Files("default"))
	}
	for _, q := range []string{ns, "viking://~/memories/", "viking://user/alice/memories/notes/"} {
		hits, err := f.m.Recall(ctx, q, "standup moved", 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].URI != id {
			t.Fatalf("%s: hits = %+v", q, hits)
		}
		if q == ns && hits[0].Meta["source"] != "calendar" {
			t.Fatalf("%s: the recorded metadata is lost: %+v", q, hits[0])
		}
	}
}

// The server down, slow, answering nonsense, a task that never ends:
// each a *memory.BackendError wrapping the client's typed error, the
// commit recorded with its failure, and the key in none of it.
func TestFailures_AreTypedAndRecorded(t *testing.T) {
	ctx := t.Context()
	for _, tt := range []struct {
		name    string
		opts    openvikingtest.Options
		breakIt func(*openvikingtest.Server)
		want    error
	}{
		{"down", openvikingtest.Options{}, func(s *openvikingtest.Server) { s.Close() }, openviking.ErrUnavailable},
		{"slow", openvikingtest.Options{}, func(s *openvikingtest.Server) { s.SetDelay(time.Minute) }, openviking.ErrUnavailable},
		{"malformed", openvikingtest.Options{}, func(s *openvikingtest.Server) { s.SetMalformed(true) }, openviking.ErrMalformed},
		{"rate limited", openvikingtest.Options{}, func(s *openvikingtest.Server) { s.FailNext(429, "RESOURCE_EXHAUSTED") }, openviking.ErrRateLimited},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, tt.opts, 0)
			tt.breakIt(f.srv)
			if _, err := f.m.Recall(ctx, "team", "anything", 3); !errors.Is(err, memory.ErrBackend) || !errors.Is(err, tt.want) || strings.Contains(err.Error(), key) {
				t.Fatalf("recall: %v", err)
			}
		})
	}
	t.Run("commit task never finishes", func(t *testing.T) {
		f := setup(t, openvikingtest.Options{Polls: -1}, 50*time.Millisecond)
		s, err := f.rt.NewUserSession(ctx, "remember that deploys run on mondays")
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.m.Commit(ctx, "team", s)
		if !errors.Is(err, memory.ErrBackend) || !errors.Is(err, openviking.ErrTaskTimeout) {
			t.Fatalf("commit: %v", err)
		}
		c := lastCommit(t, f.rt, "team")
		if c.Remote == nil || c.Remote.Status != "accepted" || c.Remote.Task == "" || c.Remote.TaskStatus != openviking.TaskRunning || c.Remote.Error == "" {
			t.Fatalf("recorded %+v", c.Remote)
		}
	})
	t.Run("commit to a stopped server", func(t *testing.T) {
		f := setup(t, openvikingtest.Options{}, 0)
		s, _ := f.rt.NewUserSession(ctx, "hello")
		f.srv.Close()
		if _, err := f.m.Commit(ctx, "team", s); !errors.Is(err, openviking.ErrUnavailable) {
			t.Fatalf("commit: %v", err)
		}
		if c := lastCommit(t, f.rt, "team"); c.Remote == nil || c.Remote.Error == "" || strings.Contains(c.Remote.Error, key) {
			t.Fatalf("recorded %+v", c.Remote)
		}
		db, err := os.ReadFile(filepath.Join(f.rt.Dir(), rath.DBFile))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(db, []byte(key)) {
			t.Fatal("the key is in the store file")
		}
	})
}

func lastCommit(t *testing.T, rt *rath.Runtime, ns string) *events.MemoryCommitted {
	t.Helper()
	evs, err := rt.Store().Read(t.Context(), eventlog.Query{Stream: events.MemoryStream(ns), Types: []string{events.TypeMemoryCommitted}})
	if err != nil || len(evs) == 0 {
		t.Fatalf("no commit recorded: %v", err)
	}
	p, err := evs[len(evs)-1].Decode()
	if err != nil {
		t.Fatal(err)
	}
	return p.(*events.MemoryCommitted)
}

// Local memories and OpenViking ones share a store without meeting: the
// local index skips what another backend keeps.
func TestLocalIgnoresOpenVikingMemories(t *testing.T) {
	f := setup(t, openvikingtest.Options{}, 0)
	ctx := t.Context()
	if _, err := f.m.Remember(ctx, "team", "the staging cluster deploys nightly", nil); err != nil {
		t.Fatal(err)
	}
	local, err := f.rt.Memory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := local.Recall(ctx, "team", "staging deploys", 5); err != nil || len(hits) != 0 {
		t.Fatalf("local recall: %+v %v", hits, err)
	}
	if items, err := local.List(ctx, "team"); err != nil || len(items) != 0 {
		t.Fatalf("local list: %+v %v", items, err)
	}
	if items, err := f.m.List(ctx, "team"); err != nil || len(items) != 1 {
		t.Fatalf("openviking list: %+v %v", items, err)
	}
}
