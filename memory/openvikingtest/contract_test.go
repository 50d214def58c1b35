package openvikingtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorath/rath/memory/openviking"
	"github.com/gorath/rath/memory/openvikingtest"
)

const testKey = "ov-contract-5ecret-key"

// target is the server a contract case runs against: the double, or the
// real server RATH_OPENVIKING_URL names (with RATH_OPENVIKING_API_KEY).
type target struct {
	url, key string
	double   *openvikingtest.Server // nil for a real server
}

func newTarget(t *testing.T, opts openvikingtest.Options) target {
	t.Helper()
	if u := os.Getenv("RATH_OPENVIKING_URL"); u != "" {
		return target{url: u, key: os.Getenv("RATH_OPENVIKING_API_KEY")}
	}
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	s := openvikingtest.New(opts)
	t.Cleanup(s.Close)
	return target{url: s.URL, key: opts.APIKey, double: s}
}

func (tg target) client(t *testing.T, user string, mod func(*openviking.Options)) *openviking.Client {
	t.Helper()
	o := openviking.Options{URL: tg.url, APIKey: tg.key, User: user, Timeout: 20 * time.Second}
	if mod != nil {
		mod(&o)
	}
	c, err := openviking.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// unique names files and users so cases against a shared real server do
// not meet.
func unique(prefix string) string { return fmt.Sprintf("%s%08x", prefix, rand.Uint32()) }

// raw sends a request the client would not send (malformed JSON).
func raw(t *testing.T, tg target, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, tg.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if tg.key != "" {
		req.Header.Set("Authorization", "Bearer "+tg.key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env map[string]any
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, b)
	}
	return res.StatusCode, env
}

// The contract: what rath relies on from an OpenViking server, as its API
// documentation states it. Every case runs against the double and, when
// RATH_OPENVIKING_URL is set, against that server.
func TestContract(t *testing.T) {
	for _, tt := range []struct {
		name string
		fn   func(t *testing.T, tg target)
	}{
		{"malformed JSON is 400 INVALID_ARGUMENT", func(t *testing.T, tg target) {
			status, env := raw(t, tg, "POST", "/api/v1/search/find", `{"query": `)
			e, _ := env["error"].(map[string]any)
			if status != 400 || env["status"] != "error" || e["code"] != "INVALID_ARGUMENT" {
				t.Fatalf("%d %v", status, env)
			}
		}},
		{"a missing key is 401", func(t *testing.T, tg target) {
			if tg.key == "" {
				t.Skip("the server has no key configured")
			}
			c := tg.client(t, "", func(o *openviking.Options) { o.APIKey = "" })
			if _, err := c.Find(t.Context(), openviking.FindRequest{Query: "x"}); !errors.Is(err, openviking.ErrUnauthenticated) {
				t.Fatalf("err = %v", err)
			}
			c = tg.client(t, "", func(o *openviking.Options) { o.APIKey = "wrong-key-0000"; o.KeyHeader = "x-api-key" })
			if _, err := c.Find(t.Context(), openviking.FindRequest{Query: "x"}); !errors.Is(err, openviking.ErrUnauthenticated) {
				t.Fatalf("wrong key: %v", err)
			}
			if err := c.Health(t.Context()); err != nil {
				t.Fatalf("health needs no key: %v", err)
			}
		}},
		{"health and system status", func(t *testing.T, tg target) {
			c := tg.client(t, "", nil)
			if err := c.Health(t.Context()); err != nil {
				t.Fatal(err)
			}
			if st, err := c.SystemStatus(t.Context()); err != nil || len(st) == 0 {
				t.Fatalf("status: %v %v", st, err)
			}
		}},
		{"the key works in either header", func(t *testing.T, tg target) {
			for _, h := range []string{"bearer", "x-api-key"} {
				c := tg.client(t, "", func(o *openviking.Options) { o.KeyHeader = h })
				if _, err := c.Find(t.Context(), openviking.FindRequest{Query: "x"}); err != nil {
					t.Fatalf("%s: %v", h, err)
				}
			}
		}},
		{"write create, 409 when it exists, read, tiers with their limits", func(t *testing.T, tg target) {
			user := unique("u")
			c := tg.client(t, user, nil)
			uri := openviking.UserMemoriesURI(user).Join("rath", unique("f")+".md").String()
			long := strings.Repeat("deploys go out on mondays. ", 300)
			if _, err := c.Write(t.Context(), openviking.WriteRequest{URI: uri, Content: long, Mode: openviking.WriteCreate, Wait: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(t.Context(), openviking.WriteRequest{URI: uri, Content: "again", Mode: openviking.WriteCreate}); !errors.Is(err, openviking.ErrConflict) {
				t.Fatalf("create twice: %v", err)
			}
			if got, err := c.Read(t.Context(), uri); err != nil || got != long {
				t.Fatalf("read: %d bytes, %v", len(got), err)
			}
			if tg.double != nil {
				abs, err := c.Abstract(t.Context(), uri)
				if err != nil || utf8.RuneCountInString(abs) > openvikingtest.AbstractMax || abs == "" {
					t.Fatalf("abstract: %d runes, %v", utf8.RuneCountInString(abs), err)
				}
				ov, err := c.Overview(t.Context(), uri)
				if err != nil || utf8.RuneCountInString(ov) > openvikingtest.OverviewMax || len(ov) <= len(abs) {
					t.Fatalf("overview: %d runes, %v", utf8.RuneCountInString(ov), err)
				}
			}
			if _, err := c.Write(t.Context(), openviking.WriteRequest{URI: uri + ".abstract.md/x.md", Content: "x", Mode: openviking.WriteReplace}); !errors.Is(err, openviking.ErrNotFound) && !errors.Is(err, openviking.ErrInvalidArgument) {
				t.Fatalf("replace of a missing file: %v", err)
			}
			if err := c.Delete(t.Context(), uri, false); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(t.Context(), uri); !errors.Is(err, openviking.ErrNotFound) {
				t.Fatalf("read after delete: %v", err)
			}
		}},
		{"an unknown file is 404; a non-public scope is 400", func(t *testing.T, tg target) {
			c := tg.client(t, "", nil)
			if _, err := c.Read(t.Context(), "viking://resources/"+unique("none")+".md"); !errors.Is(err, openviking.ErrNotFound) {
				t.Fatalf("read: %v", err)
			}
			status, _ := raw(t, tg, "GET", "/api/v1/content/read?uri=viking://temp/x.md", "")
			if status != 400 {
				t.Fatalf("temp scope: %d", status)
			}
		}},
		{"users are isolated", func(t *testing.T, tg target) {
			if tg.double == nil {
				t.Skip("needs per-user keys on a real server")
			}
			alice, bob := tg.client(t, "alice", nil), tg.client(t, "bob", nil)
			uri := openviking.UserMemoriesURI("alice").Join("secret.md").String()
			if _, err := alice.Write(t.Context(), openviking.WriteRequest{URI: uri, Content: "alice keeps the launch codes", Mode: openviking.WriteCreate}); err != nil {
				t.Fatal(err)
			}
			if _, err := bob.Read(t.Context(), uri); !errors.Is(err, openviking.ErrPermissionDenied) {
				t.Fatalf("bob reads alice's file: %v", err)
			}
			res, err := bob.Find(t.Context(), openviking.FindRequest{Query: "launch codes"})
			if err != nil || res.Total != 0 {
				t.Fatalf("bob finds alice's memory: %+v %v", res, err)
			}
			if res, err := alice.Find(t.Context(), openviking.FindRequest{Query: "launch codes"}); err != nil || res.Total != 1 {
				t.Fatalf("alice: %+v %v", res, err)
			}
		}},
		{"viking://~ is the caller's own user root", func(t *testing.T, tg target) {
			user := unique("u")
			c := tg.client(t, user, nil)
			name := unique("f") + ".md"
			home := openviking.HomeURI().Join("memories", "rath", name).String()
			canon := openviking.UserMemoriesURI(user).Join("rath", name).String()
			if _, err := c.Write(t.Context(), openviking.WriteRequest{URI: home, Content: "the standup moved to ten", Mode: openviking.WriteCreate, Wait: true}); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Read(t.Context(), canon); err != nil || got != "the standup moved to ten" {
				t.Fatalf("read %s: %q %v", canon, got, err)
			}
			if got, err := c.Read(t.Context(), home); err != nil || got != "the standup moved to ten" {
				t.Fatalf("read %s: %q %v", home, got, err)
			}
			res, err := c.Find(t.Context(), openviking.FindRequest{Query: "standup moved", TargetURI: "viking://~/memories/"})
			if err != nil || res.Total == 0 || res.Memories[0].URI != canon {
				t.Fatalf("find under ~: %+v %v (want %s)", res, err, canon)
			}
			if tg.double == nil {
				return // other users need other keys on a real server
			}
			other := tg.client(t, unique("u"), nil)
			if _, err := other.Read(t.Context(), home); !errors.Is(err, openviking.ErrNotFound) {
				t.Fatalf("another user's ~ holds the file: %v", err)
			}
			if res, err := other.Find(t.Context(), openviking.FindRequest{Query: "standup moved", TargetURI: "viking://~/memories/"}); err != nil || res.Total != 0 {
				t.Fatalf("another user finds it under ~: %+v %v", res, err)
			}
		}},
		{"find scores are in [0,1], sorted, limited", func(t *testing.T, tg target) {
			user := unique("u")
			c := tg.client(t, user, nil)
			dir := openviking.UserMemoriesURI(user).Join("rath", unique("d"))
			for i, text := range []string{"the deploy runs on monday", "deploy checklist: tests, deploy, monday standup", "lunch is at noon", "the deploy script lives in ops"} {
				if _, err := c.Write(t.Context(), openviking.WriteRequest{URI: dir.Join(fmt.Sprintf("m%d.md", i)).String(), Content: text, Mode: openviking.WriteCreate, Wait: true}); err != nil {
					t.Fatal(err)
				}
			}
			dir.Dir = true
			res, err := c.Find(t.Context(), openviking.FindRequest{Query: "deploy monday", TargetURI: dir.String(), Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			all := append(append(res.Memories, res.Resources...), res.Skills...)
			if len(all) == 0 || len(all) > 2 {
				t.Fatalf("hits = %+v", all)
			}
			for i, h := range all {
				if h.Score < 0 || h.Score > 1 || !strings.HasPrefix(h.URI, dir.String()) || h.Abstract == "" {
					t.Errorf("hit %+v", h)
				}
				if i > 0 && h.Score > all[i-1].Score {
					t.Errorf("not sorted: %+v", all)
				}
			}
			if _, err := c.Search(t.Context(), openviking.SearchRequest{Query: "deploy", TargetURI: dir.String(), SessionID: unique("nosuch")}); !errors.Is(err, openviking.ErrNotFound) {
				t.Fatalf("search with an unknown session: %v", err)
			}
		}},
		{"resources by temp_upload", func(t *testing.T, tg target) {
			c := tg.client(t, "", nil)
			id, err := c.TempUpload(t.Context(), "guide.md", []byte("# Guide\nrun make deploy"))
			if err != nil {
				t.Fatal(err)
			}
			to := "viking://resources/" + unique("g") + "/guide.md"
			res, err := c.AddResource(t.Context(), openviking.ResourceRequest{TempFileID: id, To: to, Wait: true})
			if err != nil || res.RootURI == "" {
				t.Fatalf("add: %+v %v", res, err)
			}
			if got, err := c.Read(t.Context(), res.RootURI); err != nil || !strings.Contains(got, "make deploy") {
				t.Fatalf("read %s: %q %v", res.RootURI, got, err)
			}
			if _, err := c.AddResource(t.Context(), openviking.ResourceRequest{}); !errors.Is(err, openviking.ErrInvalidArgument) {
				t.Fatalf("neither path nor file: %v", err)
			}
		}},
		{"two-phase commit: numbered archives, tasks complete after polls", func(t *testing.T, tg target) {
			c := tg.client(t, unique("u"), nil)
			ctx := t.Context()
			id, err := c.CreateSession(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cm, err := c.CommitSession(ctx, id)
			if err != nil || cm.Status != "skipped" || cm.TaskID != "" || cm.Archived {
				t.Fatalf("empty commit: %+v %v", cm, err)
			}
			var tasks []string
			for i := 1; i <= 2; i++ {
				if err := c.AddMessages(ctx, id, []openviking.Message{{Role: "user", Content: fmt.Sprintf("remember fact %d: deploys on mondays", i)}, {Role: "assistant", Content: "noted"}}); err != nil {
					t.Fatal(err)
				}
				cm, err := c.CommitSession(ctx, id)
				if err != nil || cm.Status != "accepted" || cm.TaskID == "" || !strings.HasSuffix(cm.ArchiveURI, fmt.Sprintf("archive_%03d", i)) {
					t.Fatalf("commit %d: %+v %v", i, cm, err)
				}
				tasks = append(tasks, cm.TaskID)
			}
			for _, id := range tasks {
				wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				task, err := c.WaitTask(wctx, id, 20*time.Millisecond)
				cancel()
				if err != nil || task.Status != openviking.TaskCompleted || !bytes.Contains(task.Result, []byte("memories_extracted")) {
					t.Fatalf("task %s: %+v %v", id, task, err)
				}
			}
			if _, err := c.GetTask(ctx, unique("t-none")); !errors.Is(err, openviking.ErrNotFound) {
				t.Fatalf("unknown task: %v", err)
			}
			if err := c.AddMessage(ctx, unique("nosuch"), "user", "x"); !errors.Is(err, openviking.ErrNotFound) {
				t.Fatalf("unknown session: %v", err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newTarget(t, openvikingtest.Options{}))
		})
	}
}

// Behaviours only the double can be made to show: a failed extraction,
// a task that never ends, and the fault statuses.
func TestDouble_Faults(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t.Run("412 after a failed commit", func(t *testing.T) {
		s := openvikingtest.New(openvikingtest.Options{FailTasks: true, Polls: 1})
		defer s.Close()
		c, _ := openviking.New(openviking.Options{URL: s.URL})
		id, _ := c.CreateSession(ctx)
		c.AddMessage(ctx, id, "user", "hello")
		cm, err := c.CommitSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if task, err := c.WaitTask(ctx, cm.TaskID, time.Millisecond); err != nil || task.Status != openviking.TaskFailed || task.Error == "" {
			t.Fatalf("task: %+v %v", task, err)
		}
		c.AddMessage(ctx, id, "user", "again")
		if _, err := c.CommitSession(ctx, id); !errors.Is(err, openviking.ErrFailedPrecondition) {
			t.Fatalf("commit after a failure: %v", err)
		}
	})
	t.Run("a task that never finishes", func(t *testing.T) {
		s := openvikingtest.New(openvikingtest.Options{Polls: -1})
		defer s.Close()
		c, _ := openviking.New(openviking.Options{URL: s.URL})
		id, _ := c.CreateSession(ctx)
		c.AddMessage(ctx, id, "user", "hello")
		cm, _ := c.CommitSession(ctx, id)
		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if task, err := c.WaitTask(wctx, cm.TaskID, 5*time.Millisecond); !errors.Is(err, openviking.ErrTaskTimeout) || task.Status != openviking.TaskRunning {
			t.Fatalf("%+v %v", task, err)
		}
	})
	t.Run("injected statuses, slow and malformed answers", func(t *testing.T) {
		s := openvikingtest.New(openvikingtest.Options{})
		defer s.Close()
		c, _ := openviking.New(openviking.Options{URL: s.URL, Timeout: 200 * time.Millisecond})
		for _, f := range []struct {
			status int
			code   string
			want   error
		}{{429, "RESOURCE_EXHAUSTED", openviking.ErrRateLimited}, {503, "UNAVAILABLE", openviking.ErrUnavailable}, {409, "CONFLICT", openviking.ErrConflict}} {
			s.FailNext(f.status, f.code)
			if _, err := c.Find(ctx, openviking.FindRequest{Query: "x"}); !errors.Is(err, f.want) {
				t.Errorf("%d: %v", f.status, err)
			}
		}
		s.SetMalformed(true)
		if _, err := c.Find(ctx, openviking.FindRequest{Query: "x"}); !errors.Is(err, openviking.ErrMalformed) {
			t.Errorf("malformed: %v", err)
		}
		s.SetMalformed(false)
		s.SetDelay(time.Minute)
		if _, err := c.Find(ctx, openviking.FindRequest{Query: "x"}); !errors.Is(err, openviking.ErrUnavailable) {
			t.Errorf("slow: %v", err)
		}
	})
}
