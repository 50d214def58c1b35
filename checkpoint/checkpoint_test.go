package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/gorath/rath"
	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/signkey"
)

var (
	server *pgtest.Server
	// stores are copies of one migrated database (and so share its store
	// id, as the fork tests make them do anyway).
	stores *pgtest.Template
)

func TestMain(m *testing.M) {
	// Durability is not under test here.
	pgtest.MainWith(m, pgtest.Unsynced(), func(s *pgtest.Server) {
		server, stores = s, s.Template("cptemplate", rath.Migrate)
	}, bin.Remove)
}

// backend makes empty, migrated stores of one kind; exec runs SQL on the
// store's database as its operator would, past rath.
type backend struct {
	name string
	new  func(t *testing.T) target
}

type target struct {
	path, dsn string
	exec      func(t *testing.T, q string)
}

var backends = []backend{
	{"sqlite", func(t *testing.T) target {
		path := filepath.Join(t.TempDir(), rath.DBFile)
		return target{path: path, exec: func(t *testing.T, q string) {
			t.Helper()
			s := open(t, target{path: path}, eventlog.Options{})
			if err := s.Exclusive(t.Context(), func(_ context.Context, tx *eventlog.Tx) error {
				_, err := tx.Exec(q)
				return err
			}); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}}
	}},
	{"postgres", func(t *testing.T) target {
		name, dsn := stores.New(t)
		return target{dsn: dsn, exec: func(t *testing.T, q string) {
			t.Helper()
			if err := server.Exec(t.Context(), name, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}}
	}},
}

// open migrates and opens the store of tg with opts.
func open(t *testing.T, tg target, opts eventlog.Options) *eventlog.Store {
	t.Helper()
	where := tg.path
	if tg.dsn != "" {
		where = tg.dsn
	}
	if err := rath.Migrate(t.Context(), where); err != nil {
		t.Fatal(err)
	}
	opts.Path, opts.DSN = tg.path, tg.dsn
	s, err := eventlog.Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newKey(t *testing.T, name string) *signkey.Key {
	t.Helper()
	f, err := signkey.Generate(filepath.Join(t.TempDir(), name), name)
	if err != nil {
		t.Fatal(err)
	}
	k, err := signkey.Load(f.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// appendN appends n events, one commit each, to stream.
func appendN(t *testing.T, s *eventlog.Store, stream string, n int) {
	t.Helper()
	for i := range n {
		p := &events.SessionPlaced{Session: stream, Backend: "local", Spec: fmt.Sprintf("/w/%s/%d", stream, i)}
		if _, err := s.Append(t.Context(), stream, eventlog.AnyVersion, p); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond (no wall-clock assertion: a generous bound only).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func sizes(t *testing.T, s *eventlog.Store) []int64 {
	t.Helper()
	cps, err := checkpoint.List(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, cp := range cps {
		out = append(out, cp.Size)
	}
	return out
}

func forEach(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// The signer signs every K events, at the end of a run and when closed;
// Verify checks what it signed against the tree and says so.
func TestSigner_SignsEveryKAtRunEndAndClose(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		tg := b.new(t)
		key := newKey(t, "log.example")
		sg := checkpoint.NewSigner(key, checkpoint.SignerOptions{Every: 5, Interval: time.Hour, OnError: func(err error) { t.Logf("signer: %v", err) }})
		s := open(t, tg, eventlog.Options{AfterCommit: sg.Committed})
		if err := sg.Start(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		if rep, err := checkpoint.Verify(t.Context(), s, checkpoint.VerifyOptions{}); err != nil || rep.Summary() != "locally consistent, not attested" {
			t.Fatalf("empty store: %v %v", rep, err)
		}
		appendN(t, s, "s1", 12)
		// Every K=5: at most 4 of the 12 events are left unsigned. Which
		// heads are signed depends on how commits and the signer
		// interleave (5 and 10, or 6 and 9, or 8 alone).
		waitFor(t, "a checkpoint at 8 events or more", func() bool { return sg.Signed() >= 8 })
		// A run's end is signed at once, though K events have not passed.
		if _, err := s.Append(t.Context(), "r1", eventlog.NoStream, &events.RunStarted{Run: "r1", Workflow: "w"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(t.Context(), "r1", 1, &events.RunFinished{Run: "r1", Status: "ok"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the run's end signed", func() bool { return sg.Signed() == 14 })
		appendN(t, s, "s2", 2)
		if err := sg.Close(); err != nil {
			t.Fatal(err)
		}
		got := sizes(t, s)
		if len(got) < 3 || got[len(got)-1] != 16 || got[len(got)-2] != 14 {
			t.Fatalf("checkpoint sizes %v: want ..., 14, 16", got)
		}
		for _, n := range got[:len(got)-2] {
			// 13 when the signer, poked by the 12 events, read the head
			// after the run's start.
			if n < 5 || n > 13 {
				t.Fatalf("checkpoint sizes %v: the first ones should be at 5 to 13 events", got)
			}
		}
		rep, err := checkpoint.Verify(t.Context(), s, checkpoint.VerifyOptions{Keys: []string{key.VerifierKey()}})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("attested: %d checkpoints signed by log.example, latest size 16, witnessed by no witness; no witness pinned (--witness-key): the witness keys are the store's own word", len(got))
		if rep.Summary() != want {
			t.Fatalf("summary %q, want %q", rep.Summary(), want)
		}
		// The latest checkpoint is a C2SP checkpoint of this store.
		cp, err := checkpoint.Latest(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		origin, _ := checkpoint.Origin(t.Context(), s)
		head, _ := s.TreeHead(t.Context())
		v, _, _ := signkey.ParseVerifierKey(key.VerifierKey())
		n, err := note.Open(cp.Note, note.VerifierList(v))
		if err != nil {
			t.Fatal(err)
		}
		if n.Text != origin+"\n16\n"+head.Root.String()+"\n" || !strings.HasPrefix(origin, checkpoint.OriginPrefix) {
			t.Fatalf("checkpoint text %q (origin %q, head %v)", n.Text, origin, head)
		}
		// Covering finds the smallest checkpoint at or past a size: 14,
		// the run's end, or 13 when the signer read the head just after
		// the run's start (above).
		wantSize := int64(14)
		if slices.Contains(got, 13) {
			wantSize = 13
		}
		c, err := checkpoint.Covering(t.Context(), s, 13)
		if err != nil || c.Size != wantSize {
			t.Fatalf("Covering(13) = %v, %v; want size %d (checkpoints %v)", c, err, wantSize, got)
		}
		if _, err := checkpoint.Covering(t.Context(), s, 17); !errors.Is(err, checkpoint.ErrNone) {
			t.Fatalf("Covering(17) = %v, want ErrNone", err)
		}
	})
}

// A checkpoint whose root is not the tree's at its size is tampering,
// reported at its size, even when it carries a good signature: the
// operator holds the key and signed a head the log never had.
func TestVerify_CatchesCheckpointsTheLogContradicts(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		key := newKey(t, "log.example")
		other := newKey(t, "other.example")
		tg := b.new(t)
		s := open(t, tg, eventlog.Options{})
		appendN(t, s, "s", 6)
		if _, err := checkpoint.Sign(t.Context(), s, key); err != nil {
			t.Fatal(err)
		}
		origin, _ := checkpoint.Origin(t.Context(), s)
		cases := []struct {
			name, text string
			signer     *signkey.Key
			trust      []string
			want       string
		}{
			{"wrong root", origin + "\n4\n" + tlog.Hash{1}.String() + "\n", key, nil, "at size 4 (id 2) signed root"},
			{"past the end", origin + "\n9\n" + tlog.Hash{1}.String() + "\n", key, nil, "at size 9 (id 2) is past the end of the log (6 events)"},
			{"another store", checkpoint.OriginPrefix + "x\n3\n" + tlog.Hash{1}.String() + "\n", key, nil, "names origin"},
			{"untrusted key", "", other, []string{key.VerifierKey()}, "is not signed by a trusted key"},
		}
		for _, c := range cases {
			t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
				tg := b.new(t)
				s := open(t, tg, eventlog.Options{})
				appendN(t, s, "s", 6)
				if _, err := checkpoint.Sign(t.Context(), s, key); err != nil {
					t.Fatal(err)
				}
				if c.text == "" {
					if _, err := checkpoint.Sign(t.Context(), s, c.signer); err != nil {
						t.Fatal(err)
					}
				} else {
					signed, err := note.Sign(&note.Note{Text: strings.Replace(c.text, origin, mustOrigin(t, s), 1)}, c.signer.NoteSigner())
					if err != nil {
						t.Fatal(err)
					}
					_, h, _ := checkpoint.ParseBody(string(signed[:strings.Index(string(signed), "\n\n")+1]))
					if err := s.Exclusive(t.Context(), func(_ context.Context, tx *eventlog.Tx) error {
						_, err := tx.Exec(`INSERT INTO checkpoints (size, root, key_name, verifier_key, note, signed_at) VALUES (?, ?, ?, ?, ?, 0)`, h.Size, h.Root[:], c.signer.Name(), c.signer.VerifierKey(), signed)
						return err
					}); err != nil {
						t.Fatal(err)
					}
				}
				rep, err := checkpoint.Verify(t.Context(), s, checkpoint.VerifyOptions{Keys: c.trust})
				if err != nil {
					t.Fatal(err)
				}
				if rep.OK() || !errors.Is(rep.Failure, checkpoint.ErrTampered) || !strings.Contains(rep.Failure.Error(), c.want) {
					t.Fatalf("failure %v, want one with %q", rep.Failure, c.want)
				}
				if !strings.HasPrefix(rep.Summary(), "NOT attested: ") {
					t.Fatalf("summary %q", rep.Summary())
				}
			})
		}
		// A stored checkpoint is append-only.
		for _, q := range []string{`UPDATE checkpoints SET size = 5`, `DELETE FROM checkpoints`} {
			err := s.Exclusive(t.Context(), func(_ context.Context, tx *eventlog.Tx) error {
				_, err := tx.Exec(q)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Fatalf("%s: %v, want it refused", q, err)
			}
		}
	})
}

func mustOrigin(t *testing.T, s *eventlog.Store) string {
	t.Helper()
	o, err := checkpoint.Origin(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A witness that cosigned an earlier checkpoint catches a rewritten
// history even when the operator re-signs it with the log's own key: a
// fork (the new tree does not extend the old) and a rollback (the newest
// checkpoint is older than the one cosigned).
func TestWitness_CatchesRewrittenHistorySignedWithTheLogKey(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		logKey := newKey(t, "log.example")
		w := &checkpoint.Witness{Key: newKey(t, "witness.example"), LogKey: logKey.VerifierKey(), StatePath: filepath.Join(t.TempDir(), "state.json")}
		honest := open(t, b.new(t), eventlog.Options{})
		appendN(t, honest, "s", 10)
		sign(t, honest, logKey)
		res, err := w.Step(t.Context(), honest)
		if err != nil || len(res.Cosigned) != 1 || res.Head.Size != 10 {
			t.Fatalf("first step: %+v %v", res, err)
		}
		appendN(t, honest, "s", 5)
		sign(t, honest, logKey)
		if res, err = w.Step(t.Context(), honest); err != nil || len(res.Cosigned) != 1 || res.Head.Size != 15 {
			t.Fatalf("second step: %+v %v", res, err)
		}
		if res, err = w.Step(t.Context(), honest); err != nil || len(res.Cosigned) != 0 {
			t.Fatalf("a step with nothing new: %+v %v", res, err)
		}
		rep, err := checkpoint.Verify(t.Context(), honest, checkpoint.VerifyOptions{})
		wid := w.Key.KeyID()
		if err != nil || !rep.OK() || rep.Summary() != "attested: 2 checkpoints signed by log.example, latest size 15, witnessed by witness.example (key "+wid+
			", up to size 15, NOT pinned); no witness pinned (--witness-key): the witness keys are the store's own word" {
			t.Fatalf("verify: %v %v", rep.Summary(), err)
		}
		// Pinned, the witness's key counts; another key of the same name
		// does not, and the summary names the key ids it saw.
		rep, err = checkpoint.Verify(t.Context(), honest, checkpoint.VerifyOptions{Witnesses: []string{w.Key.VerifierKey()}})
		if err != nil || !rep.OK() || rep.PinnedSize != 15 || !strings.HasSuffix(rep.Summary(), "(key "+wid+", up to size 15, pinned); pinned witnesses cosigned up to size 15 of 15") {
			t.Fatalf("verify with the witness pinned: %v %v", rep.Summary(), err)
		}
		impostor := newKey(t, "witness.example")
		rep, err = checkpoint.Verify(t.Context(), honest, checkpoint.VerifyOptions{Witnesses: []string{impostor.VerifierKey()}})
		if err != nil || rep.OK() || !errors.Is(rep.Unwitnessed, checkpoint.ErrUnwitnessed) ||
			rep.Summary() != "NOT witnessed: checkpoint: no pinned witness cosigned a checkpoint of 2; cosigned by: witness.example (key "+wid+", up to size 15, NOT pinned)" {
			t.Fatalf("verify with another key pinned: %v %v", rep.Summary(), err)
		}
		cp, _ := checkpoint.Latest(t.Context(), honest)
		wv, _, _ := signkey.ParseVerifierKey(w.Key.VerifierKey())
		lv, _, _ := signkey.ParseVerifierKey(logKey.VerifierKey())
		if n, err := note.Open(cp.Signed(), note.VerifierList(wv, lv)); err != nil || len(n.Sigs) != 2 {
			t.Fatalf("the cosigned note does not open with both keys: %v", err)
		}
		origin := mustOrigin(t, honest)
		id := strings.TrimPrefix(origin, checkpoint.OriginPrefix)

		// The operator rewrites the log: another history under the same
		// origin, longer, signed with the log's own key.
		forked := b.new(t)
		fs := open(t, forked, eventlog.Options{})
		forked.exec(t, `UPDATE store_meta SET value = '`+id+`' WHERE key = 'store_id'`)
		appendN(t, fs, "other", 20)
		sign(t, fs, logKey)
		_, err = w.Step(t.Context(), fs)
		var fork *checkpoint.ForkError
		if !errors.As(err, &fork) || !errors.Is(err, checkpoint.ErrRefused) || fork.Cosigned.Size != 15 || fork.Offered.Size != 20 {
			t.Fatalf("rewritten history: %v, want a fork from 15 to 20", err)
		}
		for _, want := range []string{"size 20", "size 15", fork.Cosigned.Root.String()} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%q does not name %q", err, want)
			}
		}
		// Same size, another root.
		same := b.new(t)
		ss := open(t, same, eventlog.Options{})
		same.exec(t, `UPDATE store_meta SET value = '`+id+`' WHERE key = 'store_id'`)
		appendN(t, ss, "other", 15)
		sign(t, ss, logKey)
		if _, err = w.Step(t.Context(), ss); !errors.As(err, &fork) || !strings.Contains(err.Error(), "same size") {
			t.Fatalf("same size, other root: %v", err)
		}
		// A shorter history: a rollback.
		short := b.new(t)
		rs := open(t, short, eventlog.Options{})
		short.exec(t, `UPDATE store_meta SET value = '`+id+`' WHERE key = 'store_id'`)
		appendN(t, rs, "s", 8)
		sign(t, rs, logKey)
		_, err = w.Step(t.Context(), rs)
		var rb *checkpoint.RollbackError
		if !errors.As(err, &rb) || rb.Cosigned.Size != 15 || rb.Latest.Size != 8 {
			t.Fatalf("rolled back: %v, want a rollback from 15 to 8", err)
		}
		// The witness's state still holds the honest head; the honest log
		// goes on being cosigned.
		appendN(t, honest, "s", 1)
		sign(t, honest, logKey)
		if res, err = w.Step(t.Context(), honest); err != nil || res.Head.Size != 16 {
			t.Fatalf("honest step after the refusals: %+v %v", res, err)
		}
	})
}

func sign(t *testing.T, s *eventlog.Store, key *signkey.Key) {
	t.Helper()
	if _, err := checkpoint.Sign(t.Context(), s, key); err != nil {
		t.Fatal(err)
	}
}
