package eventlog_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
)

// TestStoredRows_MixedFormats reads and verifies a log whose first rows
// were written before the compact row format (hex hashes, whole payloads)
// and whose later rows use it, the chain running across both.
func TestStoredRows_MixedFormats(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "log.db")
	s := MustOpenStore(t, eventlog.Options{Path: path})
	appendChunks := func(s *eventlog.Store, from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if _, err := s.Append(ctx, "s-1", eventlog.AnyVersion, events.ChunkAppended{Session: "s-1", Index: int64(i), Chunk: events.Chunk{Role: events.RoleUser, Content: fmt.Sprint("message ", i)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventlog.SetLegacyRows(s, true)
	appendChunks(s, 0, 3)
	eventlog.SetLegacyRows(s, false)
	appendChunks(s, 3, 3)
	db := rawDB(t, path)
	var hexHashes, blobHashes, whole int
	rows, err := db.QueryContext(ctx, `SELECT typeof(hash), payload FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var kind, payload string
		if err := rows.Scan(&kind, &payload); err != nil {
			t.Fatal(err)
		}
		switch kind {
		case "text":
			hexHashes++
		case "blob":
			blobHashes++
		}
		if strings.HasPrefix(payload, `{"session":`) {
			whole++
		}
	}
	rows.Close()
	if hexHashes != 3 || blobHashes != 3 || whole != 3 {
		t.Fatalf("rows: %d hex hashes, %d raw, %d whole payloads; want 3, 3, 3", hexHashes, blobHashes, whole)
	}
	s.Close()
	s, err = eventlog.Open(ctx, eventlog.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendChunks(s, 6, 1) // the chain continues from a raw hash
	evs, err := s.ReadStream(ctx, "s-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		ca, err := events.DecodeChunkAppended(ev.Payload, ev.TypeVersion)
		if err != nil || ca.Session != "s-1" || ca.Index != int64(i) || ca.Chunk.Content != fmt.Sprint("message ", i) || len(ev.Hash) != 64 {
			t.Fatalf("event %d: %s %s: %+v %v", i, ev.Payload, ev.Hash, ca, err)
		}
	}
	rep, err := s.Verify(ctx, eventlog.VerifyOptions{})
	if err != nil || !rep.OK() || rep.Events != 7 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	head, _ := s.Head(ctx)
	if head.Hash != evs[6].Hash {
		t.Fatalf("head %s, last event %s", head.Hash, evs[6].Hash)
	}
	// An edit to a compact row is caught.
	if _, err := db.ExecContext(ctx, `DROP TRIGGER events_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE events SET payload = replace(payload, 'message 4', 'message X') WHERE seq = 5`); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Verify(ctx, eventlog.VerifyOptions{}); err != nil || rep.OK() || rep.Failure.Seq != 5 {
		t.Fatalf("verify after an edit: %+v %v", rep, err)
	}
}
