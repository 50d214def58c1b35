package eventlog

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/keyring"
	"github.com/gorath/rath/keyring/keyringtest"
	"github.com/gorath/rath/migrations"
)

// The writer waits for every caller counted as arriving before it
// commits, however long they take to come within the bound, and stops
// waiting at the bound for one that does not come.
func TestLinger_WaitsForCountedCallers(t *testing.T) {
	for _, tc := range []struct {
		name           string
		queued         bool // sent before the writer lingers, or 5 ms into it
		inflight, sent int
		bound          time.Duration
		want           int
	}{
		{"all already queued", true, 3, 2, time.Minute, 3},
		{"two still encoding", false, 3, 2, time.Minute, 3},
		{"one never comes", false, 3, 1, 20 * time.Millisecond, 2},
		{"none counted", false, 1, 0, time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{reqs: make(chan *request, 8)}
			s.opts.MaxBatch, s.opts.lingerFor = 64, tc.bound
			s.inflight.Store(int64(tc.inflight))
			if tc.queued {
				for range tc.sent {
					s.reqs <- &request{n: 1}
				}
			} else {
				go func() {
					// Later than the production bound (lingerMax): only a
					// writer that waits on the queue takes them.
					time.Sleep(5 * time.Millisecond)
					for range tc.sent {
						s.reqs <- &request{n: 1}
					}
				}()
			}
			batch := []*request{{n: 1}}
			start := time.Now()
			n, pending := s.linger(&batch, 1)
			if pending != nil || len(batch) != tc.want || n != tc.want {
				t.Fatalf("linger gathered %d requests (%d events, pending %v); want %d", len(batch), n, pending, tc.want)
			}
			// A caller counted but never queued is waited for up to the
			// bound.
			if took := time.Since(start); tc.want < tc.inflight && took < tc.bound {
				t.Fatalf("linger gave up after %s, before its bound of %s", took, tc.bound)
			}
		})
	}
}

// recordingSealer notes how many callers the store counted as arriving
// when a key was looked up the slow way.
type recordingSealer struct {
	*keyring.Keyring
	store *atomic.Pointer[Store]
	seen  []int64
}

func (r *recordingSealer) Key(ctx context.Context, q keyring.Querier, subject string) (*keyring.DataKey, error) {
	r.seen = append(r.seen, r.store.Load().inflight.Load())
	return r.Keyring.Key(ctx, q, subject)
}

// recordingRedactor notes the count while it redacts.
type recordingRedactor struct {
	store *atomic.Pointer[Store]
	seen  []int64
}

func (r *recordingRedactor) Redact(b []byte) ([]byte, []events.Redaction) {
	r.seen = append(r.seen, r.store.Load().inflight.Load())
	return b, nil
}

// An append is counted as arriving from its start, while it encodes,
// redacts and seals its events, except while its key is read or made (a
// round trip the writer must not wait for); a key in the cache is found
// without leaving the count. Nothing stays counted after the append.
func TestAppend_CountedAsArrivingExceptForAKeyRead(t *testing.T) {
	dir := t.TempDir()
	kek := keyringtest.KEK(t)
	path := filepath.Join(dir, "rath.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	_, err = migrations.Up(t.Context(), db)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ptr atomic.Pointer[Store]
	sealer := &recordingSealer{Keyring: keyring.New(kek, nil), store: &ptr}
	redactor := &recordingRedactor{store: &ptr}
	s, err := Open(t.Context(), Options{Path: path, Sealer: sealer, Redactor: redactor})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ptr.Store(s)
	for i := range 2 {
		p := events.ChunkAppended{Session: "s", Index: int64(i), Chunk: events.Chunk{Role: "user", Content: "hello"}}
		if _, err := s.Append(t.Context(), "s", AnyVersion, p); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range redactor.seen {
		if n != 1 {
			t.Errorf("redaction %d ran with %d callers counted; want 1 (the appender)", i, n)
		}
	}
	if len(redactor.seen) == 0 {
		t.Fatal("the redactor never ran")
	}
	// The first append reads (and makes) the key, uncounted; the second
	// finds it in the cache and reads nothing.
	if len(sealer.seen) != 2 || sealer.seen[0] != 0 || sealer.seen[1] != 0 {
		t.Errorf("key lookups saw %v callers counted; want [0 0]: the first append's lookup and its read after making the key", sealer.seen)
	}
	if n := s.inflight.Load(); n != 0 {
		t.Errorf("%d callers still counted after the appends", n)
	}
}
