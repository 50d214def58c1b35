package rath_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/projections"
	"github.com/gorath/rath/session"
)

// Sessions two subjects wrote to keep, after one subject's erasure,
// exactly what a rebuild makes of them: the other subject's model calls
// (usage rows and token counts) and sandbox, and none of the erased
// subject's. alice starts a session that bob goes on with (past a
// snapshot); alice calls a model in a session bob started, again under
// her new key after the erasure, and is erased a second time. Verify,
// which compares the read models with a rebuild, passes on both stores
// after each erasure.
func TestErase_SessionsSharedWithAnotherSubject(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			ctx := t.Context()
			rt, _ := openSealed(t, backend)
			alice := events.ContextWithSubject(ctx, "user:alice")
			bob := events.ContextWithSubject(ctx, "user:bob")
			call := func(ctx context.Context, s *session.Session, prompt int64) *session.Session {
				t.Helper()
				req := []byte("a request")
				s, err := s.Emit(ctx, [][]byte{req}, events.ProviderCalled{Session: s.ID(), Model: "m", RequestRef: eventlog.BlobHash(req),
					Usage: events.Usage{PromptTokens: prompt, CompletionTokens: 1, TotalTokens: prompt + 1}})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			// alice's session, which bob goes on with.
			a, err := rt.NewUserSession(alice, "alice's question")
			if err != nil {
				t.Fatal(err)
			}
			if a, err = a.To(alice, "local", "/w/alice"); err != nil {
				t.Fatal(err)
			}
			a = call(alice, a, 100)
			// Enough of bob's chunks for snapshots of the session (time
			// travel's), which an erasure recounts too.
			for i := range projections.SnapshotEvery + 2 {
				if a, err = a.Append(bob, session.Chunk{Role: "user", Content: fmt.Sprint("bob says ", i)}); err != nil {
					t.Fatal(err)
				}
			}
			a = call(bob, a, 20)
			if a, err = a.To(bob, "local", "/w/bob"); err != nil {
				t.Fatal(err)
			}
			a = call(bob, a, 3)
			// bob's session, in which alice calls a model.
			b, err := rt.NewUserSession(bob, "bob's question")
			if err != nil {
				t.Fatal(err)
			}
			b = call(bob, b, 40)
			b = call(alice, b, 500)
			if b, err = b.Append(bob, session.Chunk{Role: "assistant", Content: "an answer"}); err != nil {
				t.Fatal(err)
			}
			if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "test", Reason: "asked"}); err != nil {
				t.Fatal(err)
			}
			verify := func(when string) {
				t.Helper()
				rep, err := rt.Verify(ctx, eventlog.VerifyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Failure != nil {
					t.Fatalf("verify after the %s erasure: %v", when, rep.Failure)
				}
			}
			verify("first")
			check := func(wants []sessionWant) {
				t.Helper()
				for _, want := range wants {
					var prompt, calls int64
					var backend, spec string
					if err := rt.Store().DB().QueryRowContext(ctx, rt.Store().DB().Rebind(`SELECT prompt_tokens, calls, backend, spec FROM sessions WHERE id = ?`), want.id).Scan(&prompt, &calls, &backend, &spec); err != nil {
						t.Fatal(err)
					}
					if prompt != want.prompt || calls != want.calls || backend != want.backend || spec != want.spec {
						t.Errorf("session %s: %d prompt tokens in %d calls on %q %q; want %d in %d on %q %q", want.id, prompt, calls, backend, spec, want.prompt, want.calls, want.backend, want.spec)
					}
				}
			}
			check([]sessionWant{{a.ID(), 23, 2, "local", "/w/bob"}, {b.ID(), 40, 1, "", ""}})
			// alice goes on in bob's session under her new key, and is
			// erased again: what she wrote since goes too, bob's stays.
			b = call(alice, b, 600)
			b = call(bob, b, 2)
			if _, err := rt.Erase(ctx, rath.EraseOptions{Subject: "user:alice", By: "test", Reason: "asked again"}); err != nil {
				t.Fatal(err)
			}
			verify("second")
			check([]sessionWant{{a.ID(), 23, 2, "local", "/w/bob"}, {b.ID(), 42, 2, "", ""}})
		})
	}
}

// sessionWant is a session's usage and sandbox as a test expects them.
type sessionWant struct {
	id            string
	prompt, calls int64
	backend, spec string
}
