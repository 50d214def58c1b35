package eventlog_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
)

// A keyed chain refuses writers with no key or another key, and an
// unkeyed chain with events refuses a key, each with a *KeyError that
// names RATH_HMAC_KEY and never the key; the chain still verifies with
// the right key afterwards.
func TestStore_KeyFingerprintRefusesMismatchedWriters(t *testing.T) {
	const secret = "correct horse battery staple"
	tests := []struct {
		name          string
		chainKey      string
		writerKey     string
		legacy        bool // store written before fingerprints (7d73e0a)
		wantRefused   bool
		reasonContain string
	}{
		{"keyed, same key", secret, secret, false, false, ""},
		{"keyed, no key", secret, "", false, true, "none was given"},
		{"keyed, wrong key", secret, "other", false, true, "is not the key"},
		{"unkeyed, a key", "", secret, false, true, "has no HMAC key"},
		{"unkeyed, no key", "", "", false, false, ""},
		{"legacy keyed, same key", secret, secret, true, false, ""},
		{"legacy keyed, no key", secret, "", true, true, "none was given"},
		{"legacy keyed, wrong key", secret, "other", true, true, "is not the key"},
		{"legacy unkeyed, a key", "", secret, true, true, "has no HMAC key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "rath.db")
			s := MustOpenStore(t, eventlog.Options{Path: path, HMACKey: []byte(tt.chainKey)})
			if _, err := s.Append(ctx, "s", eventlog.NoStream, placed("s", "local")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if tt.legacy {
				db := rawDB(t, path)
				mustExec(t, db, `DROP TRIGGER events_no_update`)
				if err := eventlog.RewriteAsFormat1(db, []byte(tt.chainKey)); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			w, err := eventlog.Open(ctx, eventlog.Options{Path: path, HMACKey: []byte(tt.writerKey)})
			if err != nil {
				t.Fatal(err) // reading stays possible whatever the key
			}
			_, err = w.Append(ctx, "s", 1, placed("s", "bwrap"))
			w.Close()
			if !tt.wantRefused {
				if err != nil {
					t.Fatalf("append: %v", err)
				}
			} else {
				var ke *eventlog.KeyError
				if !errors.As(err, &ke) || !errors.Is(err, eventlog.ErrKey) {
					t.Fatalf("append = %v, want a *KeyError", err)
				}
				msg := err.Error()
				if !strings.Contains(msg, "RATH_HMAC_KEY") || !strings.Contains(msg, tt.reasonContain) {
					t.Fatalf("error %q should name RATH_HMAC_KEY and say %q", msg, tt.reasonContain)
				}
				if strings.Contains(msg, secret) || strings.Contains(msg, "other") {
					t.Fatalf("error %q leaks a key", msg)
				}
			}
			// The chain still verifies with its own key, and the refused
			// append wrote nothing.
			v := MustOpenStore(t, eventlog.Options{Path: path, HMACKey: []byte(tt.chainKey)})
			rep, err := v.Verify(ctx, eventlog.VerifyOptions{})
			if err != nil || !rep.OK() {
				t.Fatalf("verify with the chain's key = %+v, %v", rep, err)
			}
			want := int64(2)
			if tt.wantRefused {
				want = 1
			}
			if rep.Events != want {
				t.Fatalf("%d events, want %d", rep.Events, want)
			}
			if tt.wantRefused {
				// Verify with the writer's key names the key problem.
				o := MustOpenStore(t, eventlog.Options{Path: path, HMACKey: []byte(tt.writerKey)})
				if rep, _ := o.Verify(ctx, eventlog.VerifyOptions{}); rep.OK() || !strings.Contains(rep.Failure.Reason, "RATH_HMAC_KEY") {
					t.Fatalf("verify with the writer's key = %+v", rep.Failure)
				}
			}
		})
	}
}

// A key given to an empty store keys its chain: the first event's writer
// decides, and a writer without the key is refused from then on.
func TestStore_FirstEventDecidesTheKey(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "rath.db")
	unkeyed := MustOpenStore(t, eventlog.Options{Path: path})
	keyed := MustOpenStore(t, eventlog.Options{Path: path, HMACKey: []byte("k")})
	if _, err := keyed.Append(ctx, "s", eventlog.NoStream, placed("s", "local")); err != nil {
		t.Fatal(err)
	}
	if _, err := unkeyed.Append(ctx, "t", eventlog.NoStream, placed("t", "local")); !errors.Is(err, eventlog.ErrKey) {
		t.Fatalf("unkeyed append to a keyed chain = %v, want ErrKey", err)
	}
	// Rebuilds (Exclusive) write no event and need no key.
	if err := unkeyed.Exclusive(ctx, func(context.Context, *eventlog.Tx) error { return nil }); err != nil {
		t.Fatalf("exclusive without the key: %v", err)
	}
	if _, err := keyed.Append(ctx, "t", eventlog.NoStream, placed("t", "local")); err != nil {
		t.Fatal(err)
	}
	if rep, err := keyed.Verify(ctx, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Events != 2 {
		t.Fatalf("verify = %+v, %v", rep, err)
	}
}
