package storetest_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/storetest"
)

// replyDropper is a TCP proxy in front of PostgreSQL that, once armed,
// lets the server run a pipeline holding a COMMIT and then closes the
// client's connection before the client reads any of the answers: the
// commit happened, and the client cannot know it. Cut instead, it
// swallows a pipeline the client sends and closes the client's
// connection while keeping the server's open: the server never gets the
// pipeline, and a transaction it had begun stays open, holding its locks.
type replyDropper struct {
	ln      net.Listener
	target  string
	tag     atomic.Value // the command tag whose reply is dropped: COMMIT unless set
	armed   atomic.Bool
	dropped atomic.Int64
	reply   atomic.Value // the reply dropped last ([]byte)
	// cut: cutNext swallows the client's next write; cutCommit the next
	// one that commits (a lone "commit", as database/sql's Commit sends
	// it).
	cut     atomic.Int32
	swallow atomic.Int64 // writes swallowed
	wg      sync.WaitGroup

	mu      sync.Mutex
	servers []net.Conn // closed at the end: a cut one is left open
}

const (
	cutNext = iota + 1
	cutCommit
)

func newReplyDropper(t *testing.T, target string) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropper{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, s := range p.servers {
			s.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *replyDropper) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.servers = append(p.servers, s)
		p.mu.Unlock()
		p.wg.Go(func() { p.requests(c, s) })
		p.wg.Go(func() { p.answers(s, c); c.Close() })
	}
}

// requests forwards the client's writes to the server, and swallows one
// when cut: the client's connection is closed and the server's left open
// (it closes when the server ends its session).
func (p *replyDropper) requests(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if p.cut.CompareAndSwap(cutNext, 0) || bytes.Contains(bytes.ToLower(buf[:n]), []byte("commit\x00")) && p.cut.CompareAndSwap(cutCommit, 0) {
				p.swallow.Add(1)
				c.Close()
				return
			}
			if _, werr := s.Write(buf[:n]); werr != nil {
				c.Close()
				return
			}
		}
		if err != nil {
			s.Close()
			return
		}
	}
}

// completion is the CommandComplete message of the tag to drop.
func (p *replyDropper) completion() []byte {
	tag, _ := p.tag.Load().(string)
	if tag == "" {
		tag = "COMMIT"
	}
	return completionOf(tag)
}

// completionOf is the CommandComplete message of tag.
func completionOf(tag string) []byte {
	msg := []byte{'C', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[1:], uint32(4+len(tag)+1))
	return append(append(msg, tag...), 0)
}

// answers forwards the server's messages a reply at a time (up to each
// ReadyForQuery) and drops the connection instead of a reply that holds
// a COMMIT's completion while armed.
func (p *replyDropper) answers(s, c net.Conn) {
	defer s.Close()
	var reply bytes.Buffer
	head := make([]byte, 5)
	for {
		if _, err := io.ReadFull(s, head); err != nil {
			return
		}
		body := make([]byte, int(binary.BigEndian.Uint32(head[1:]))-4)
		if _, err := io.ReadFull(s, body); err != nil {
			return
		}
		reply.Write(head)
		reply.Write(body)
		if head[0] != 'Z' {
			continue
		}
		if p.armed.Load() && bytes.Contains(reply.Bytes(), p.completion()) {
			p.armed.Store(false)
			p.reply.Store(bytes.Clone(reply.Bytes()))
			p.dropped.Add(1)
			return
		}
		if _, err := c.Write(reply.Bytes()); err != nil {
			return
		}
		reply.Reset()
	}
}

// A commit whose answer never comes back is not written a second time,
// and its outcome is learned: the writer's pipeline holds the batch's
// rows, a projector's queued statement and the COMMIT, and the lost
// answer of the queued statement once sent the batch to be redone as if
// that statement had failed, appending its events again; later the
// append failed with an unknown outcome. Now the writer ends the old
// connection's server process, finds the batch's first event at its seq
// with its leaf hash, and answers the append as committed
// (eventlog/resolve.go). Both ways a transaction begins: sequenced at
// its end, BEGIN and the lock in the same pipeline as the rows and the
// COMMIT, and the usual way, the lock at BEGIN (an append with an
// AppendTx function).
func TestPostgres_ACommitWhoseAnswerIsLostIsNotWrittenTwice(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, stream string
		late         bool
	}{
		{"late", "s", true},
		{"usual", "t", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tg := postgresTarget(t)
			if err := tg.Exec(t, `CREATE TABLE placements_seen (seq BIGINT PRIMARY KEY, backend TEXT NOT NULL CHECK (backend <> 'bad'))`); err != nil {
				t.Fatal(err)
			}
			s, proxy := behindDropper(t, tg, "COMMIT", deferredInsert{})
			proxy.armed.Store(true)
			if _, err := appendLateOrNot(ctx, s, c.late, c.stream, &events.SessionPlaced{Session: c.stream, Backend: "good", Spec: "b"}); err != nil {
				t.Fatalf("append whose commit answer was lost: %v, want its outcome learned: committed", err)
			}
			if proxy.dropped.Load() != 1 {
				t.Fatalf("the proxy dropped %d answers, want 1", proxy.dropped.Load())
			}
			if began := bytes.Contains(proxy.reply.Load().([]byte), completionOf("BEGIN")); began != c.late {
				t.Fatalf("the lost answer held BEGIN's: %v, want %v", began, c.late)
			}
			// The store goes on, on a new connection.
			if _, err := s.Append(ctx, c.stream, eventlog.AnyVersion, &events.SessionPlaced{Session: c.stream, Backend: "good", Spec: "c"}); err != nil {
				t.Fatalf("the next append: %v", err)
			}
			evs, err := s.ReadStream(ctx, c.stream, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := 2
			if c.stream == "s" {
				want = 3 // behindDropper's first append too
			}
			if len(evs) != want {
				t.Fatalf("the stream holds %d events, want %d (the lost answer's once)", len(evs), want)
			}
			storetest.MustVerify(t, s)
		})
	}
}

// A COMMIT that never reaches the server, on a connection the client
// lost and the server did not, leaves the transaction open on the server
// holding the chain lock. The writer ends that process, finds the batch
// not in the log, and writes it again: the append succeeds, once, without
// waiting for the server to time the session out. Both ways a
// transaction begins: sequenced at its end, the whole transaction is the
// swallowed pipeline, so the server has no transaction at all.
func TestPostgres_ACommitThatNeverArrivesIsWrittenAgainOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, stream string
		cut          int32
	}{
		{"late", "s", cutNext},
		{"usual", "t", cutCommit},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s, proxy := behindDropper(t, postgresTarget(t), "COMMIT")
			proxy.cut.Store(c.cut)
			evs, err := appendLateOrNot(ctx, s, c.cut == cutNext, c.stream, &events.SessionPlaced{Session: c.stream, Backend: "good", Spec: "b"})
			if err != nil {
				t.Fatalf("append whose COMMIT never arrived: %v, want it written again", err)
			}
			if proxy.swallow.Load() != 1 {
				t.Fatalf("the proxy swallowed %d pipelines, want 1", proxy.swallow.Load())
			}
			got, err := s.ReadStream(ctx, c.stream, 1)
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if c.stream == "s" {
				want = 2 // behindDropper's first append too
			}
			if len(got) != want || got[len(got)-1].Seq != evs[0].Seq {
				t.Fatalf("the stream holds %d events (last %v), want %d ending with the append's, seq %d", len(got), got[len(got)-1].Seq, want, evs[0].Seq)
			}
			storetest.MustVerify(t, s)
		})
	}
}

// appendLateOrNot appends p to stream, in a transaction sequenced at its
// end (late) or, with an AppendTx function, in one that takes the lock at
// BEGIN.
func appendLateOrNot(ctx context.Context, s *eventlog.Store, late bool, stream string, p events.Payload) ([]events.Event, error) {
	if late {
		return s.Append(ctx, stream, eventlog.AnyVersion, p)
	}
	return s.AppendTx(ctx, func(context.Context, *sql.Tx) error { return nil },
		eventlog.Write{Stream: stream, Expected: eventlog.AnyVersion, Events: []events.Payload{p}})
}

// behindDropper opens the log of tg through a reply dropper that drops
// the answer holding tag, with projectors, and appends a first event to
// stream "s" so that every statement is prepared before the fault.
func behindDropper(t *testing.T, tg storetest.Target, tag string, projectors ...eventlog.Projector) (*eventlog.Store, *replyDropper) {
	t.Helper()
	u, err := url.Parse(tg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newReplyDropper(t, u.Host)
	proxy.tag.Store(tag)
	u.Host = proxy.ln.Addr().String()
	s, err := eventlog.Open(t.Context(), eventlog.Options{DSN: u.String(), Projectors: projectors})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Append(t.Context(), "s", eventlog.AnyVersion, placedS(0)); err != nil {
		t.Fatal(err)
	}
	return s, proxy
}

// placedS is the nth placement of session "s".
func placedS(n int) *events.SessionPlaced {
	return &events.SessionPlaced{Session: "s", Backend: "good", Spec: string(rune('a' + n))}
}

// A lost answer to the pipeline that begins the transaction and takes the
// chain lock leaves nothing behind: the server rolls the transaction back
// when the connection goes, and the writer begins again on a new one, so
// the append either lands once or fails with nothing written.
func TestPostgres_ALostAnswerToTheLockIsRetriedOrNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, proxy := behindDropper(t, postgresTarget(t), "BEGIN")
	proxy.armed.Store(true)
	// A stream the writer has not seen: its head is read with the lock,
	// in the pipeline that begins (an append the writer could check
	// against its caches sends BEGIN with its COMMIT: the case above).
	_, err := s.Append(ctx, "t", eventlog.AnyVersion, &events.SessionPlaced{Session: "t", Backend: "good"})
	if proxy.dropped.Load() != 1 {
		t.Fatalf("the proxy dropped %d answers, want 1", proxy.dropped.Load())
	}
	t.Logf("the append after the lost answer: %v", err)
	want := 1
	if err != nil {
		if !eventlog.IsTransient(err) {
			t.Fatalf("append whose lock answer was lost: err = %v, want success or a transient error", err)
		}
		want = 0
	}
	evs, rerr := s.ReadStream(ctx, "t", 1)
	if rerr != nil || len(evs) != want {
		t.Fatalf("the stream holds %d events (%v) after an append that returned %v, want %d", len(evs), rerr, err, want)
	}
	storetest.MustVerify(t, s)
}
