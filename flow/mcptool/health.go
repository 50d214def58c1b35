package mcptool

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorath/rath/flow"
)

// healthy returns the connection to call through: c itself unless a call
// to it timed out, in which case the server must first answer a ping
// within PingTimeout. One that does not is restarted when Connect started
// it, and otherwise given up on (calls fail at once with KindServerHung
// until the name is connected again), so a hung server costs one ping,
// not every later call's whole timeout.
func (m *Manager) healthy(ctx context.Context, c *conn) (*conn, error) {
	if c.hung.Load() {
		return nil, &flow.ToolError{Kind: KindServerHung, Err: &UnresponsiveError{Server: c.name, Stderr: c.stderr.String()}}
	}
	if !c.suspect.Load() {
		return c, nil
	}
	pctx, cancel := context.WithTimeout(ctx, m.opts.PingTimeout)
	err := c.session.Ping(pctx, nil)
	cancel()
	if err == nil {
		c.suspect.Store(false)
		return c, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	hung := &UnresponsiveError{Server: c.name, Waited: m.opts.PingTimeout.String(), Stderr: c.stderr.String()}
	if c.redial == nil {
		c.hung.Store(true)
		return nil, &flow.ToolError{Kind: KindServerHung, Err: hung}
	}
	err = c.redial(ctx, c)
	if err != nil && !errors.Is(err, ErrAlreadyConnected) { // already: a concurrent call restarted it
		c.hung.Store(true)
		hung.Restart = err
		return nil, &flow.ToolError{Kind: KindServerHung, Err: hung}
	}
	nc, err := m.conn(c.name)
	if err != nil {
		return nil, &flow.ToolError{Kind: KindServerGone, Err: err}
	}
	return nc, nil
}

// Ping is a health check: it asks the server to answer a ping within
// ctx, first connecting again a server that is gone (restarting a stdio
// one), and trying once more on a new connection when the ping finds the
// connection broken (an HTTP server restarted). Errors: ErrUnknownServer, ErrClosed, a *ServerGoneError (also
// inside a *flow.ToolError when reconnecting failed), or the ping's.
func (m *Manager) Ping(ctx context.Context, server string) error {
	c, err := m.conn(server)
	if err != nil {
		return err
	}
	if !c.alive() && c.redial != nil && !c.hung.Load() {
		if c, err = m.reconnect(ctx, c); err != nil {
			return err
		}
	}
	if !c.alive() {
		return c.goneError()
	}
	err = c.session.Ping(ctx, nil)
	if err != nil && ctx.Err() == nil && c.redial != nil && broken(err, c) {
		// A ping is safe to send twice: try once on a new connection.
		if nc, rerr := m.reconnect(ctx, c); rerr == nil {
			err = nc.session.Ping(ctx, nil)
		}
	}
	if err != nil {
		return fmt.Errorf("mcptool: ping %s: %w", server, err)
	}
	return nil
}
