package openvikingtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"
)

// Sessions of the double and the tasks their commits start.

func (s *Server) createSession(r *http.Request, c caller) (any, *apiError) {
	var req struct {
		SessionID string `json:"session_id"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.SessionID == "" {
		s.next++
		req.SessionID = fmt.Sprintf("s%06d", s.next)
	} else if strings.ContainsAny(req.SessionID, "/\\") {
		return nil, errorf(400, "INVALID_ARGUMENT", "bad session id")
	}
	k := c.account + "/" + c.user + "/" + req.SessionID
	if _, ok := s.sessions[k]; ok {
		return nil, errorf(409, "ALREADY_EXISTS", "session %s exists", req.SessionID)
	}
	s.sessions[k] = &sess{id: req.SessionID, account: c.account, user: c.user}
	return map[string]any{"session_id": req.SessionID, "uri": "viking://user/" + c.user + "/sessions/" + req.SessionID,
		"user": map[string]any{"account_id": c.account, "user_id": c.user}}, nil
}

func (s *Server) session(c caller, id string) (*sess, *apiError) {
	se, ok := s.sessions[c.account+"/"+c.user+"/"+id]
	if !ok {
		return nil, errorf(404, "NOT_FOUND", "session %s not found", id)
	}
	return se, nil
}

func (s *Server) getSession(c caller, id string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, err := s.session(c, id)
	if err != nil {
		return nil, err
	}
	return map[string]any{"session_id": se.id, "message_count": len(se.messages), "commit_count": se.archives}, nil
}

func (s *Server) addMessages(r *http.Request, c caller, id string, batch bool) (any, *apiError) {
	var msgs []message
	if batch {
		var req struct {
			Messages []message `json:"messages"`
		}
		if err := decode(r, &req); err != nil {
			return nil, err
		}
		if len(req.Messages) == 0 || len(req.Messages) > 100 {
			return nil, errorf(400, "INVALID_ARGUMENT", "want 1 to 100 messages")
		}
		msgs = req.Messages
	} else {
		var m message
		if err := decode(r, &m); err != nil {
			return nil, err
		}
		msgs = []message{m}
	}
	for _, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, errorf(400, "INVALID_ARGUMENT", "role %q: want user or assistant", m.Role)
		}
		if m.Content == "" {
			return nil, errorf(400, "INVALID_ARGUMENT", "content or parts is required")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se, err := s.session(c, id)
	if err != nil {
		return nil, err
	}
	se.messages = append(se.messages, msgs...)
	return map[string]any{"session_id": id, "message_count": len(se.messages), "added": len(msgs)}, nil
}

func (s *Server) commit(c caller, id string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, err := s.session(c, id)
	if err != nil {
		return nil, err
	}
	if se.failed {
		return nil, errorf(412, "FAILED_PRECONDITION", "an earlier archive of session %s failed", id)
	}
	if len(se.messages) == 0 {
		return map[string]any{"session_id": id, "status": "skipped", "task_id": nil, "archive_uri": nil, "archived": false, "reason": "no_messages"}, nil
	}
	se.archives++
	archive := fmt.Sprintf("viking://user/%s/sessions/%s/history/archive_%03d", c.user, id, se.archives)
	var jl strings.Builder
	for _, m := range se.messages {
		b, _ := json.Marshal(m)
		jl.Write(b)
		jl.WriteByte('\n')
	}
	s.account(c.account)[archive+"/messages.jsonl"] = &file{content: jl.String()}
	s.next++
	t := &task{id: fmt.Sprintf("task-%06d", s.next), account: c.account, user: c.user, sess: se, archive: archive, msgs: se.messages, status: "pending"}
	s.tasks[t.id] = t
	se.messages = nil
	return map[string]any{"session_id": id, "status": "accepted", "task_id": t.id, "archive_uri": archive, "archived": true}, nil
}

func (s *Server) task(c caller, id string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.account != c.account || t.user != c.user {
		return nil, errorf(404, "NOT_FOUND", "task %s not found", id)
	}
	if t.status == "pending" || t.status == "running" {
		t.polls++
		polls := s.opts.Polls
		if polls == 0 {
			polls = DefaultPolls
		}
		switch {
		case polls > 0 && t.polls >= polls:
			s.finish(t)
		default:
			t.status = "running"
		}
	}
	out := map[string]any{"task_id": t.id, "task_type": "session_commit", "status": t.status, "resource_id": t.sess.id}
	if t.result != nil {
		out["result"] = t.result
	}
	if t.err != "" {
		out["error"] = t.err
	}
	return out, nil
}

// finish runs the task's phase 2. Caller holds s.mu.
func (s *Server) finish(t *task) {
	fs := s.account(t.account)
	if s.opts.FailTasks {
		t.status, t.err = "failed", "memory extraction failed"
		t.sess.failed = true
		fs[t.archive+"/.failed.json"] = &file{content: `{"error": "memory extraction failed"}`}
		return
	}
	n := 0
	for i, m := range t.msgs {
		if m.Role != "user" {
			continue
		}
		fs[fmt.Sprintf("viking://user/%s/memories/events/%s_%s_%d.md", t.user, t.sess.id, path.Base(t.archive), i)] = &file{content: m.Content}
		n++
	}
	fs[t.archive+"/.done"] = &file{}
	t.status = "completed"
	t.result = map[string]any{"session_id": t.sess.id, "archive_uri": t.archive, "memories_extracted": map[string]int{"events": n, "total": n}}
}
