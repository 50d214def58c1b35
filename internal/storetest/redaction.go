package storetest

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// redactedLog is appendTen plus three tool results on stream "t": seq 11
// and 12 with outputs of their own, seq 13 sharing seq 12's output.
type redactedLog struct {
	s           *eventlog.Store
	own, shared string // the blob only seq 11 names, the one 12 and 13 name
	before      eventlog.TreeHead
}

func newRedactedLog(t *testing.T, tg Target) *redactedLog {
	t.Helper()
	ctx := t.Context()
	s := OpenStore(t, tg)
	appendTen(t, s)
	l := &redactedLog{s: s}
	var err error
	if l.own, err = s.PutBlob(ctx, []byte("the output only seq 11 names")); err != nil {
		t.Fatal(err)
	}
	if l.shared, err = s.PutBlob(ctx, []byte("an output seqs 12 and 13 share")); err != nil {
		t.Fatal(err)
	}
	for i, ref := range []string{l.own, l.shared, l.shared} {
		p := &events.ToolReturned{Session: "t", CallID: string(rune('a' + i)), Tool: "shell", OutputRef: ref, OutputSize: 30}
		if _, err := s.Append(ctx, "t", eventlog.AnyVersion, p); err != nil {
			t.Fatal(err)
		}
	}
	l.before = MustVerify(t, s).Tree
	return l
}

// Redaction deletes payloads and the blobs only they named, keeps every
// leaf, and verify lists it instead of calling it tampering; the
// tampering a redaction could hide is still found.
func testRedaction(t *testing.T, b Backend) {
	ctx := t.Context()
	t.Run("payloads go, leaves stay", func(t *testing.T) {
		tg := b.New(t)
		l := newRedactedLog(t, tg)
		s := l.s
		res, err := s.Redact(ctx, eventlog.RedactRequest{Seqs: []int64{12, 5, 11}, By: "alice", Reason: "erasure request 7", Scope: "event"})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Redacted; len(got) != 3 || got[0] != 5 || got[2] != 12 || res.Blobs != 1 || res.Record.Seq != 14 {
			t.Fatalf("redact = %+v, want seqs 5, 11, 12, one blob deleted, the record at seq 14", res)
		}
		if _, err := s.GetBlob(ctx, l.own); !errors.Is(err, eventlog.ErrBlobNotFound) {
			t.Fatalf("the blob only seq 11 named: %v, want it deleted", err)
		}
		if _, err := s.GetBlob(ctx, l.shared); err != nil {
			t.Fatalf("the blob seq 13 still names: %v", err)
		}
		ev, err := s.Get(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		if _, derr := ev.Decode(); !ev.Redacted || !errors.Is(derr, events.ErrRedacted) || strings.Contains(string(ev.Payload), "/w/4") {
			t.Fatalf("seq 5 reads as %+v (decode: %v), want a redacted placeholder", ev, derr)
		}
		var payload string
		var salt []byte
		if err := s.DB().QueryRowContext(ctx, `SELECT payload, salt FROM events WHERE seq = 5`).Scan(&payload, &salt); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(payload, "/w/4") || salt != nil {
			t.Fatalf("seq 5's row still holds payload %q salt %x", payload, salt)
		}
		rep := MustVerify(t, s)
		if len(rep.Redactions) != 3 || rep.Redactions[0].String() != "seq 5: redacted at seq 14 by alice: erasure request 7" {
			t.Fatalf("verify lists %v", rep.Redactions)
		}
		at, err := s.TreeHeadAt(ctx, l.before.Size)
		if err != nil || at != l.before {
			t.Fatalf("the tree at size %d is %v (%v), want %v as before the redaction", l.before.Size, at, err, l.before)
		}
		if r, err := s.Verify(ctx, eventlog.VerifyOptions{Tree: &l.before}); err != nil || !r.OK() {
			t.Fatalf("verify against the head from before: %v %v", r.Failure, err)
		}
		info, ok, err := s.Redacted(ctx, 11)
		if err != nil || !ok || info.RecordSeq != 14 || info.By != "alice" {
			t.Fatalf("Redacted(11) = %+v %v %v", info, ok, err)
		}
		if _, ok, err := s.Redacted(ctx, 13); ok || err != nil {
			t.Fatalf("Redacted(13) = %v %v, want not redacted", ok, err)
		}
		again, err := s.Redact(ctx, eventlog.RedactRequest{Seqs: []int64{5}, By: "bob", Reason: "twice"})
		if err != nil || len(again.Already) != 1 || again.Record.Seq != 0 {
			t.Fatalf("redacting seq 5 again = %+v, %v; want it reported as already redacted", again, err)
		}
		// The guard allows exactly a recorded redaction's UPDATE.
		for _, q := range []string{
			`UPDATE events SET payload = '{"$redacted":true}', salt = NULL WHERE seq = 7`,
			`UPDATE events SET payload = '{}' WHERE seq = 5`,
			`UPDATE events SET run_id = 'x', payload = '{"$redacted":true}', salt = NULL WHERE seq = 5`,
			`DELETE FROM redactions WHERE seq = 5`,
			`UPDATE redactions SET commitment = 'x' WHERE seq = 5`,
		} {
			if err := tg.Exec(t, q); err == nil {
				t.Errorf("%s: allowed, want the trigger to refuse it", q)
			}
		}
		MustVerify(t, s)
	})
	t.Run("refused", func(t *testing.T) {
		l := newRedactedLog(t, b.New(t))
		for _, tc := range []struct {
			req  eventlog.RedactRequest
			want error
		}{
			{eventlog.RedactRequest{Seqs: []int64{99}, By: "a", Reason: "r"}, eventlog.ErrNotRedactable},
			{eventlog.RedactRequest{Seqs: []int64{3}, By: "a"}, events.ErrInvalid},
			{eventlog.RedactRequest{Seqs: []int64{3}, By: "a", Reason: "line\x1b[2Jbreak"}, events.ErrInvalid},
		} {
			if _, err := l.s.Redact(ctx, tc.req); !errors.Is(err, tc.want) {
				t.Errorf("redact %+v: %v, want %v", tc.req, err, tc.want)
			}
		}
		res, err := l.s.Redact(ctx, eventlog.RedactRequest{Seqs: []int64{3}, By: "a", Reason: "r"})
		if err != nil {
			t.Fatal(err)
		}
		var re *eventlog.RedactError
		if _, err := l.s.Redact(ctx, eventlog.RedactRequest{Seqs: []int64{res.Record.Seq}, By: "a", Reason: "r"}); !errors.As(err, &re) {
			t.Fatalf("redacting the record: %v, want a *RedactError", err)
		}
		MustVerify(t, l.s)
	})
	cases := []struct {
		name   string
		sql    func(l *redactedLog) []string
		seq    int64
		reason string
	}{
		{"payload cleared without a redaction", func(*redactedLog) []string {
			return []string{`UPDATE events SET payload = '{"$redacted":true}', salt = NULL WHERE seq = 7`}
		}, 7, "without a recorded redaction"},
		{"commitment altered", func(*redactedLog) []string {
			return []string{`UPDATE redactions SET commitment = '` + strings.Repeat("0", 64) + `' WHERE seq = 5`}
		}, 5, "altered"},
		{"an edit elsewhere", func(*redactedLog) []string {
			return []string{`UPDATE events SET payload = replace(payload, '/w/7', '/w/70') WHERE seq = 8`}
		}, 8, "altered"},
		{"a redaction no record names", func(l *redactedLog) []string {
			// Whoever holds the database computes seq 7's commitment from
			// its salt and payload and clears it, pointing at the real record.
			return []string{`INSERT INTO redactions (seq, record_seq, commitment) VALUES (7, 14, '` + l.commitment(t, 7) + `')`,
				`UPDATE events SET payload = '{"$redacted":true}', salt = NULL WHERE seq = 7`}
		}, 7, "forged"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := b.New(t)
			l := newRedactedLog(t, tg)
			if _, err := l.s.Redact(ctx, eventlog.RedactRequest{Seqs: []int64{5}, By: "alice", Reason: "r"}); err != nil {
				t.Fatal(err)
			}
			qs := tc.sql(l)
			tg.DropGuards(t)
			for _, q := range qs {
				if err := tg.Exec(t, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			rep, err := l.s.Verify(ctx, eventlog.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Failure.Seq != tc.seq || !strings.Contains(rep.Failure.Reason, tc.reason) {
				t.Fatalf("verify = %v, want a failure at seq %d saying %q", rep.Failure, tc.seq, tc.reason)
			}
		})
	}
}

// commitment computes the payload commitment of seq from its row, as
// someone reading the database can.
func (l *redactedLog) commitment(t *testing.T, seq int64) string {
	t.Helper()
	ev, err := l.s.Get(t.Context(), seq)
	if err != nil {
		t.Fatal(err)
	}
	var salt []byte
	if err := l.s.DB().QueryRowContext(t.Context(), l.s.DB().Rebind(`SELECT salt FROM events WHERE seq = ?`), seq).Scan(&salt); err != nil {
		t.Fatal(err)
	}
	c := eventlog.PayloadCommitment(salt, ev.Payload)
	return hex.EncodeToString(c[:])
}
