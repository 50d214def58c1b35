package eventlog

import (
	"context"
	"net"
	"sync/atomic"
)

// countingConn counts round trips on a PostgreSQL connection: a read that
// follows a write is the answer to what was sent, however many messages
// the write held (a pipeline of statements is one round trip) and however
// many reads the answer takes. It measures the writer's chattiness where
// it costs, on the wire.
type countingConn struct {
	net.Conn
	n     *atomic.Int64
	wrote atomic.Bool
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.wrote.Store(true)
	return c.Conn.Write(p)
}

func (c *countingConn) Read(p []byte) (int, error) {
	if c.wrote.Swap(false) {
		c.n.Add(1)
	}
	return c.Conn.Read(p)
}

// countRoundTrips wraps dial so that its connections add their round
// trips to n.
func countRoundTrips(dial func(ctx context.Context, network, addr string) (net.Conn, error), n *atomic.Int64) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, n: n}, nil
	}
}
