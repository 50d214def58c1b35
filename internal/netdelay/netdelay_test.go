package netdelay_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gorath/rath/internal/netdelay"
)

// echo starts a loopback server that writes back what it reads and
// closes its side when the client's ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func mustStart(t *testing.T, target string, delay time.Duration) *netdelay.Proxy {
	t.Helper()
	p, err := netdelay.Start(target, delay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *netdelay.Proxy) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// Bytes arrive whole and in order, in both directions, and the client's
// half-close reaches the server, whose close reaches the client.
func TestProxy_CarriesBytesInOrder(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			c := dial(t, mustStart(t, echo(t), delay))
			want := make([]byte, 3<<20)
			rand.Read(want)
			go func() {
				for b := want; len(b) > 0; {
					n := min(len(b), 1+len(b)%70000) // writes of uneven sizes
					c.Write(b[:n])
					b = b[n:]
				}
				c.CloseWrite()
			}()
			got, err := io.ReadAll(c) // ends only when the half-close went round
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes back, want the %d sent, in order", len(got), len(want))
			}
		})
	}
}

// A round trip through the proxy takes at least the delay each way.
func TestProxy_DelaysEachDirection(t *testing.T) {
	const delay = 30 * time.Millisecond
	c := dial(t, mustStart(t, echo(t), delay))
	buf := make([]byte, 4)
	for i := range 3 {
		start := time.Now()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got < 2*delay {
			t.Fatalf("round trip %d took %s, want at least 2 × %s", i, got, delay)
		}
	}
}

// Chunks in flight are delayed together, not one after another: N
// messages sent without waiting come back in about one round trip, where
// a proxy that held each one in turn would take N.
func TestProxy_IsADelayLineNotARateLimit(t *testing.T) {
	const delay, n = 100 * time.Millisecond, 20
	c := dial(t, mustStart(t, echo(t), delay))
	c.SetNoDelay(true)
	start := time.Now()
	go func() {
		for range n {
			c.Write([]byte("ping"))
			time.Sleep(time.Millisecond) // separate chunks on the wire
		}
	}()
	buf := make([]byte, 4*n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	// One round trip is 2 × delay; one after another would be n times
	// that (4 s; about half when the echo side coalesces chunks). A
	// quarter leaves room for a loaded machine.
	if got, limit := time.Since(start), n*2*delay/4; got < 2*delay || got > limit {
		t.Fatalf("%d pipelined round trips took %s, want between %s and %s", n, got, 2*delay, limit)
	}
}

// Close ends the connections it carries and refuses new ones.
func TestProxy_Close(t *testing.T) {
	p := mustStart(t, echo(t), time.Millisecond)
	c := dial(t, p)
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("read after Close: %v, want the connection ended", err)
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		c2.Close()
		t.Fatal("the proxy accepted a connection after Close")
	}
	if err := p.Close(); !errors.Is(err, netdelay.ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
}

// A target that refuses connections closes the client's.
func TestProxy_UnreachableTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := dial(t, mustStart(t, target, time.Millisecond))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("read: %v, want the connection closed", err)
	}
}

func TestStart_NegativeDelay(t *testing.T) {
	if _, err := netdelay.Start("127.0.0.1:1", -time.Millisecond); err == nil {
		t.Fatal("Start accepted a negative delay")
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}
