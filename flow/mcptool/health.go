package mcptool

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

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

// capResult keeps at most max bytes of a result's text and max bytes of
// its binary parts, saying in the text what was dropped. max < 0 keeps
// everything.
func capResult(content string, blobs [][]byte, max int) (string, [][]byte) {
	if max < 0 {
		return content, blobs
	}
	var notes []string
	kept, total, dropped := 0, 0, 0
	var keep [][]byte
	for _, b := range blobs {
		total += len(b)
		if kept+len(b) > max {
			dropped++
			continue
		}
		kept += len(b)
		keep = append(keep, b)
	}
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("[mcptool: %d binary parts not kept (%d of %d bytes kept): over the %d-byte result cap]", dropped, kept, total, max))
		blobs = keep
	}
	if len(content) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(content[cut]) {
			cut--
		}
		notes = append([]string{fmt.Sprintf("[mcptool: result truncated to %d of %d bytes: over the %d-byte result cap]", cut, len(content), max)}, notes...)
		content = content[:cut]
	}
	for _, n := range notes {
		content += "\n" + n
	}
	return content, blobs
}
