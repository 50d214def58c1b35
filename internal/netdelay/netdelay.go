package netdelay

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrClosed is returned by Close when the proxy is already closed.
var ErrClosed = errors.New("netdelay: proxy closed")

// chunkSize is the most a read takes from one side at a time.
const chunkSize = 64 << 10

// inFlight is how many chunks a direction holds before it stops reading:
// past it the sender waits, as on a full link (a window, not a rate).
const inFlight = 1024

// Proxy accepts connections on a loopback port and forwards each to
// Target, holding every chunk Delay in each direction. It is safe for
// concurrent use; Close stops it and every connection it carries.
type Proxy struct {
	target string
	delay  time.Duration
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex // protects following fields
	conns  map[net.Conn]struct{}
	closed bool
}

// Start listens on 127.0.0.1 on a free port and forwards what it accepts
// to target (host:port), delay each way. A delay of zero forwards at once.
func Start(target string, delay time.Duration) (*Proxy, error) {
	if delay < 0 {
		return nil, fmt.Errorf("netdelay: negative delay %s", delay)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netdelay: listen: %w", err)
	}
	p := &Proxy{target: target, delay: delay, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the host:port the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Delay is what each direction adds.
func (p *Proxy) Delay() time.Duration { return p.delay }

// Close stops accepting, closes every connection in both directions and
// waits for the proxy's goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.closed = true
	err := p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// track records c so Close can close it; false when the proxy closed
// first (c is closed then).
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(client) {
			return
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve connects client to the target and runs the two delay lines; the
// connection ends when both directions have.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		p.untrack(client) // the client sees its connection closed
		return
	}
	if !p.track(server) {
		p.untrack(client)
		return
	}
	var lines sync.WaitGroup
	lines.Go(func() { p.line(client, server) })
	lines.Go(func() { p.line(server, client) })
	lines.Wait()
	p.untrack(client, server)
}

// chunk is what one read took, and when.
type chunk struct {
	b  []byte
	at time.Time
}

// line copies src to dst, each chunk delay after it was read. At src's end
// it half-closes dst once every chunk is written, so the far side reads
// its end in order too; a failed write closes both.
func (p *Proxy) line(src, dst net.Conn) {
	q := make(chan chunk, inFlight)
	go func() {
		defer close(q)
		buf := make([]byte, chunkSize)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{b: append([]byte(nil), buf[:n]...), at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	timer := time.NewTimer(0)
	<-timer.C
	for c := range q {
		if wait := time.Until(c.at.Add(p.delay)); wait > 0 {
			timer.Reset(wait)
			<-timer.C
		}
		if _, err := dst.Write(c.b); err != nil {
			// The far side is gone: stop this side's reads too, and drain
			// what was read so the reader ends.
			src.Close()
			for range q {
			}
			return
		}
	}
	if hc, ok := dst.(interface{ CloseWrite() error }); ok {
		hc.CloseWrite()
	} else {
		dst.Close()
	}
}
