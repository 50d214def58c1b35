package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// A server may ask the user something while it runs a tool call
// (elicitation/create, "form" mode). rath asks a person through
// flow.Ask: the question is recorded as approval.requested, the call
// ends without a result and the run suspends; when the run continues the
// call runs again, the server asks again, and the recorded answer is
// given. A replay answers from the record.
//
// Servers on the current protocol return their questions as the call's
// input requests (multi round-trip, SEP-2322): the SDK asks the handler
// with the call's own context, which names the call. An older server
// sends elicitation/create on its own, which does not say which call it
// belongs to: it is matched to the call in flight on the server's
// connection, and declined when there is none or more than one. A
// question that asks the user to open a URL is declined (rath does not
// do that).

type inflightKey struct{}

// inflight is a tool call waiting on its server.
type inflight struct {
	ctx context.Context
	s   *session.Session

	mu      sync.Mutex // protects waiting
	waiting error      // a question the call must wait for
}

func (c *inflight) wait(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting == nil {
		c.waiting = err
	}
}

func (c *inflight) waitingErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting
}

// calls tracks a connection's calls in flight.
type calls struct {
	mu sync.Mutex // protects m
	m  map[*inflight]bool
}

func (cs *calls) add(c *inflight) func() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = map[*inflight]bool{}
	}
	cs.m[c] = true
	return func() {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		delete(cs.m, c)
	}
}

// sole returns the only call in flight, or nil.
func (cs *calls) sole() *inflight {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.m) != 1 {
		return nil
	}
	for c := range cs.m {
		return c
	}
	return nil
}

// connOf finds the connection of a client session.
func (m *Manager) connOf(cs *mcp.ClientSession) *conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.conns {
		if c.session == cs {
			return c
		}
	}
	return nil
}

var decline = &mcp.ElicitResult{Action: "decline"}

// elicit answers a server's elicitation/create.
func (m *Manager) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if req.Params == nil || req.Params.Mode == "url" || req.Params.URL != "" {
		return decline, nil
	}
	call, _ := ctx.Value(inflightKey{}).(*inflight)
	if call == nil {
		if c := m.connOf(req.Session); c != nil {
			call = c.calls.sole()
		}
	}
	if call == nil || call.s == nil {
		return decline, nil
	}
	q := flow.Question{Text: req.Params.Message}
	if req.Params.RequestedSchema != nil {
		schema, err := json.Marshal(req.Params.RequestedSchema)
		if err != nil {
			return decline, nil
		}
		q.Schema = schema
	}
	ans, err := flow.Ask(call.ctx, call.s, q)
	if errors.Is(err, flow.ErrWaiting) {
		call.wait(err)
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	if err != nil {
		return nil, err
	}
	var content map[string]any
	if err := json.Unmarshal(ans, &content); err != nil {
		return decline, nil // form answers are objects
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}
