package openviking_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorath/rath/memory/openviking"
)

const key = "ov-5ecret-key-0123"

// envelopeError answers as the API documents its failures.
func envelopeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"status": "error", "error": map[string]any{"code": code, "message": msg}})
}

func ok(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"status": "ok", "result": result, "time": 0.01})
}

func newClient(t *testing.T, url string, opts openviking.Options) *openviking.Client {
	t.Helper()
	opts.URL = url
	c, err := openviking.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClient_ErrorsAreTyped(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		code   string
		body   string // raw body instead of an envelope
		want   error
	}{
		{"invalid argument", 400, "INVALID_ARGUMENT", "", openviking.ErrInvalidArgument},
		{"unauthenticated", 401, "UNAUTHENTICATED", "", openviking.ErrUnauthenticated},
		{"permission", 403, "PERMISSION_DENIED", "", openviking.ErrPermissionDenied},
		{"not found", 404, "NOT_FOUND", "", openviking.ErrNotFound},
		{"conflict", 409, "ALREADY_EXISTS", "", openviking.ErrConflict},
		{"failed precondition", 412, "FAILED_PRECONDITION", "", openviking.ErrFailedPrecondition},
		{"rate limited", 429, "RESOURCE_EXHAUSTED", "", openviking.ErrRateLimited},
		{"unavailable", 503, "UNAVAILABLE", "", openviking.ErrUnavailable},
		{"processing error", 500, "PROCESSING_ERROR", "", openviking.ErrServer},
		{"unknown code, by status", 429, "SLOW_DOWN", "", openviking.ErrRateLimited},
		{"proxy page", 502, "", "<html>bad gateway</html>", openviking.ErrServer},
		{"malformed JSON", 200, "", `{"status": "ok", "result": `, openviking.ErrMalformed},
		{"not an envelope", 200, "", `{"hits": []}`, openviking.ErrMalformed},
		{"result of another shape", 200, "", `{"status": "ok", "result": {"memories": "none"}}`, openviking.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.body != "" {
					w.WriteHeader(tt.status)
					io.WriteString(w, tt.body)
					return
				}
				envelopeError(w, tt.status, tt.code, "no "+tt.name)
			}))
			defer srv.Close()
			c := newClient(t, srv.URL, openviking.Options{APIKey: key})
			_, err := c.Find(t.Context(), openviking.FindRequest{Query: "q"})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatalf("the key is in the error: %v", err)
			}
		})
	}
}

func TestClient_ServerDownOrSlowIsUnavailable(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	c := newClient(t, srv.URL, openviking.Options{APIKey: key, Timeout: 100 * time.Millisecond})
	if _, err := c.Find(t.Context(), openviking.FindRequest{Query: "q"}); !errors.Is(err, openviking.ErrUnavailable) || strings.Contains(err.Error(), key) {
		t.Fatalf("slow server: %v", err)
	}
	close(release)
	srv.Close()
	if err := c.Health(t.Context()); !errors.Is(err, openviking.ErrUnavailable) {
		t.Fatalf("stopped server: %v", err)
	}
}

func TestClient_AuthHeaders(t *testing.T) {
	for _, tt := range []struct{ header, name, want string }{
		{"", "Authorization", "Bearer " + key},
		{"x-api-key", "X-API-Key", key},
	} {
		var got, agent atomic.Value
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.Store(r.Header.Get(tt.name))
			agent.Store(r.Header.Get("X-OpenViking-Agent"))
			ok(w, map[string]any{"memories": []any{}, "resources": []any{}, "skills": []any{}, "total": 0})
		}))
		c := newClient(t, srv.URL, openviking.Options{APIKey: key, KeyHeader: tt.header, Agent: "rath"})
		if _, err := c.Find(t.Context(), openviking.FindRequest{Query: "q"}); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		if got.Load() != tt.want || agent.Load() != "rath" {
			t.Errorf("%s = %v, agent %v", tt.name, got.Load(), agent.Load())
		}
	}
	if _, err := openviking.New(openviking.Options{URL: "ftp://x"}); !errors.Is(err, openviking.ErrInvalidArgument) {
		t.Errorf("bad URL: %v", err)
	}
}

// A session's round trip as the API documents it: create, add messages,
// commit (accepted with a task and an archive), poll the task.
func TestClient_SessionCommitAndTask(t *testing.T) {
	var polls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		ok(w, map[string]any{"session_id": "s1", "user": map[string]any{"user_id": "alice"}})
	})
	var msgs atomic.Int32
	mux.HandleFunc("POST /api/v1/sessions/{id}/messages", func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Role, Content string }
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || r.PathValue("id") != "s1" || m.Content == "" {
			envelopeError(w, 400, "INVALID_ARGUMENT", "bad message")
			return
		}
		ok(w, map[string]any{"session_id": "s1", "message_count": msgs.Add(1)})
	})
	mux.HandleFunc("POST /api/v1/sessions/{id}/commit", func(w http.ResponseWriter, r *http.Request) {
		ok(w, map[string]any{"task_id": "t1", "status": "accepted", "archive_uri": "viking://session/alice/s1/history/archive_001", "archived": true})
	})
	mux.HandleFunc("GET /api/v1/tasks/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "t1" {
			envelopeError(w, 404, "NOT_FOUND", "no task")
			return
		}
		if polls.Add(1) < 3 {
			ok(w, map[string]any{"task_id": "t1", "task_type": "session_commit", "status": "running"})
			return
		}
		ok(w, map[string]any{"task_id": "t1", "task_type": "session_commit", "status": "completed", "result": map[string]any{"memories_extracted": 2}})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := newClient(t, srv.URL, openviking.Options{})
	ctx := t.Context()
	id, err := c.CreateSession(ctx)
	if err != nil || id != "s1" {
		t.Fatalf("create: %q %v", id, err)
	}
	for _, m := range [][2]string{{"user", "how do I deploy"}, {"assistant", "with make deploy"}} {
		if err := c.AddMessage(ctx, id, m[0], m[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AddMessage(ctx, id, "system", "x"); !errors.Is(err, openviking.ErrInvalidArgument) {
		t.Fatalf("system role: %v", err)
	}
	cm, err := c.CommitSession(ctx, id)
	if err != nil || cm.TaskID != "t1" || !cm.Archived || !strings.HasPrefix(cm.ArchiveURI, "viking://") {
		t.Fatalf("commit: %+v %v", cm, err)
	}
	task, err := c.WaitTask(ctx, cm.TaskID, time.Millisecond)
	if err != nil || task.Status != openviking.TaskCompleted || !strings.Contains(string(task.Result), "memories_extracted") {
		t.Fatalf("task: %+v %v", task, err)
	}
	if _, err := c.GetTask(ctx, "t-none"); !errors.Is(err, openviking.ErrNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestClient_TaskThatNeverFinishes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok(w, map[string]any{"task_id": "t1", "task_type": "session_commit", "status": "pending"})
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, openviking.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	task, err := c.WaitTask(ctx, "t1", 5*time.Millisecond)
	if !errors.Is(err, openviking.ErrTaskTimeout) || task.Status != openviking.TaskPending {
		t.Fatalf("WaitTask: %+v %v", task, err)
	}
}

func TestClient_FindDecodesHits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		if r.URL.Path != "/api/v1/search/find" || req["query"] != "deploy" || req["target_uri"] != "viking://user/alice/memories/" || req["limit"] != float64(3) {
			envelopeError(w, 400, "INVALID_ARGUMENT", fmt.Sprintf("unexpected %s %v", r.URL.Path, req))
			return
		}
		ok(w, map[string]any{"memories": []any{map[string]any{"uri": "viking://user/alice/memories/events/deploy.md", "context_type": "memory", "is_leaf": true, "level": 2, "abstract": "deploys run on mondays", "score": 0.82}}, "resources": []any{}, "skills": []any{}, "total": 1})
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, openviking.Options{})
	res, err := c.Find(t.Context(), openviking.FindRequest{Query: "deploy", TargetURI: "viking://user/alice/memories/", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Memories) != 1 || res.Memories[0].Score != 0.82 || res.Memories[0].Level != 2 || res.Memories[0].Abstract == "" {
		t.Fatalf("find: %+v", res)
	}
	if _, err := c.Find(t.Context(), openviking.FindRequest{Query: " "}); !errors.Is(err, openviking.ErrInvalidArgument) {
		t.Fatalf("empty query: %v", err)
	}
}
