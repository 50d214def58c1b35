package eventlog_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// recordCalls stores two model calls of one agent loop the way package
// flow does (flow/request.go): each request record names its last message
// segment, and the second call's segment extends the first's. It returns
// the hashes of the first segment, the second segment and the records.
func recordCalls(t *testing.T, s *eventlog.Store) (seg1, seg2 string, recs []string) {
	t.Helper()
	c := t.Context()
	s1 := []byte(`{"add":[{"role":"system","content":"You review patches."},{"role":"user","content":"Review this."}]}`)
	seg1 = eventlog.BlobHash(s1)
	s2 := []byte(fmt.Sprintf(`{"prev":%q,"add":[{"role":"assistant","content":"Looks fine."},{"role":"user","content":"Again."}]}`, seg1))
	seg2 = eventlog.BlobHash(s2)
	for i, seg := range []struct {
		ref  string
		blob []byte
		n    int
	}{{seg1, s1, 2}, {seg2, s2, 4}} {
		rec := []byte(fmt.Sprintf(`{"model":"m","sampling":{},"messages_ref":%q,"messages":%d}`, seg.ref, seg.n))
		recs = append(recs, eventlog.BlobHash(rec))
		call := events.ProviderCalled{Session: "s", Model: "m", RequestRef: eventlog.BlobHash(rec)}
		if _, err := s.AppendWrites(c, eventlog.Write{Stream: "s", Expected: int64(i), Events: []events.Payload{call}, Blobs: [][]byte{seg.blob, rec}}); err != nil {
			t.Fatal(err)
		}
	}
	return seg1, seg2, recs
}

// Verify follows a request's messages_ref chain: a deleted or altered
// message segment is reported, named, even when no event names it.
func TestVerify_FollowsRequestMessageChain(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(seg1, seg2, rec2 string) string // SQL
		which func(seg1, seg2, rec2 string) string // the blob to be named
		seq   int64
		why   string
	}{
		{"first segment deleted",
			func(a, _, _ string) string { return `DELETE FROM blobs WHERE hash = '` + a + `'` },
			func(a, _, _ string) string { return a }, 1, "missing"},
		{"second request record deleted",
			func(_, _, r string) string { return `DELETE FROM blobs WHERE hash = '` + r + `'` },
			func(_, _, r string) string { return r }, 2, "missing"},
		{"last segment deleted",
			func(_, b, _ string) string { return `DELETE FROM blobs WHERE hash = '` + b + `'` },
			func(_, b, _ string) string { return b }, 2, "missing"},
		{"segment text altered",
			func(a, _, _ string) string {
				return `UPDATE blobs SET bytes = CAST(replace(CAST(bytes AS TEXT), 'Review this.', 'Delete it.') AS BLOB) WHERE hash = '` + a + `'`
			},
			func(a, _, _ string) string { return a }, 1, "does not match its hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := t.Context()
			path := filepath.Join(t.TempDir(), "rath.db")
			s := MustOpenStore(t, eventlog.Options{Path: path})
			seg1, seg2, recs := recordCalls(t, s)
			if rep, err := s.Verify(c, eventlog.VerifyOptions{}); err != nil || !rep.OK() || rep.Blobs != 4 {
				t.Fatalf("verify before = %+v, %v", rep, err)
			}
			mustExec(t, rawDB(t, path), tt.edit(seg1, seg2, recs[1]))
			rep, err := s.Verify(c, eventlog.VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := tt.which(seg1, seg2, recs[1])
			if rep.OK() || rep.Failure.Seq != tt.seq || rep.Failure.Blob != want ||
				!strings.Contains(rep.Failure.Error(), want) || !strings.Contains(rep.Failure.Reason, tt.why) {
				t.Fatalf("verify = %+v, want seq %d naming blob %s (%s)", rep.Failure, tt.seq, want, tt.why)
			}
		})
	}
}
