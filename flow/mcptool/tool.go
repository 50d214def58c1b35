package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/session"
)

// Backend is the evidence backend of every MCP tool result; the sandbox id
// is "mcp:" and the server's name.
const Backend = "mcp"

// Tools lists the server's tools (all pages) and wraps each as a
// flow.Tool named as [ToolName] says. The list is read from the server at
// each call, so a server whose tools changed gives the new ones.
//
// The listing (every page) is bounded by the server's list_timeout, else
// its call_timeout, else Options.ListTimeout.
//
// Errors: ErrUnknownServer, ErrClosed, a *ServerGoneError, a
// *ListTimeoutError, or the listing's failure.
func (m *Manager) Tools(ctx context.Context, server string) ([]flow.Tool, error) {
	c, err := m.conn(server)
	if err != nil {
		return nil, err
	}
	if !c.alive() && c.redial != nil && !c.hung.Load() {
		// Listing changes nothing: a gone server is simply connected again.
		if c, err = m.reconnect(ctx, c); err != nil {
			return nil, err
		}
	}
	if !c.alive() {
		return nil, c.goneError()
	}
	var out []flow.Tool
	names := map[string]bool{}
	d := m.listTimeout(c.lim)
	lctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for t, err := range c.session.Tools(lctx, nil) {
		if err != nil {
			if ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
				// The server holds the connection but not its answer.
				c.suspect.Store(true)
				return nil, &ListTimeoutError{Server: server, Op: "list tools", After: d}
			}
			if !c.alive() || errors.Is(err, mcp.ErrConnectionClosed) {
				return nil, c.goneError()
			}
			return nil, fmt.Errorf("mcptool: list tools of %s: %w", server, err)
		}
		wt, err := m.wrap(server, t)
		if err != nil {
			return nil, err
		}
		if names[wt.name] {
			wt.name = withHash(wt.name, server+Separator+t.Name)
		}
		names[wt.name] = true
		out = append(out, wt)
	}
	return out, nil
}

// tool is one MCP tool as a flow.Tool.
type tool struct {
	m              *Manager
	server, remote string // the server's name and the tool's name there
	name, desc     string
	schema         json.RawMessage      // sent to the model
	resolved       *jsonschema.Resolved // nil: the server validates alone
	ann            flow.ToolAnnotations
}

var (
	_ flow.Tool              = (*tool)(nil)
	_ flow.ArgumentValidator = (*tool)(nil)
	_ flow.ParallelSafe      = (*tool)(nil)
	_ flow.TimeoutTool       = (*tool)(nil)
	_ flow.AnnotatedTool     = (*tool)(nil)
)

func (m *Manager) wrap(server string, t *mcp.Tool) (*tool, error) {
	raw := []byte(`{"type":"object"}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("mcptool: %s tool %s: input schema: %w", server, t.Name, err)
		}
		raw = b
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return nil, fmt.Errorf("mcptool: %s tool %s: input schema is not a JSON object", server, t.Name)
	}
	// "$schema" names the draft for validation below; model APIs do not
	// need it and some reject drafts other than their own.
	delete(doc, "$schema")
	if _, ok := doc["type"]; !ok {
		doc["type"] = "object"
	}
	forModel, err := json.Marshal(doc) // map keys sorted: stable bytes
	if err != nil {
		return nil, fmt.Errorf("mcptool: %s tool %s: input schema: %w", server, t.Name, err)
	}
	wt := &tool{m: m, server: server, remote: t.Name, name: ToolName(server, t.Name, m.opts.BareNames),
		desc: firstOf(t.Description, t.Title, "Tool "+t.Name+" of MCP server "+server+"."), schema: forModel}
	if a := t.Annotations; a != nil {
		wt.ann = flow.ToolAnnotations{Title: a.Title, ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint,
			Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
	}
	// A schema this validator cannot resolve (a remote $ref, an unknown
	// draft) is still given to the model; the server checks the
	// arguments itself and its refusal comes back as a KindError.
	var sc jsonschema.Schema
	if json.Unmarshal(raw, &sc) == nil {
		if r, err := sc.Resolve(nil); err == nil {
			wt.resolved = r
		}
	}
	return wt, nil
}

// Timeout is the server's call_timeout, else Options.CallTimeout (zero:
// flow's default).
func (t *tool) Timeout() time.Duration {
	if c, err := t.m.conn(t.server); err == nil && c.lim.timeout > 0 {
		return c.lim.timeout
	}
	return t.m.opts.CallTimeout
}

func (t *tool) Name() string            { return t.name }
func (t *tool) Description() string     { return t.desc }
func (t *tool) Schema() json.RawMessage { return t.schema }

// ParallelSafe is the server's read-only hint: a tool that changes nothing
// may run beside the round's other safe calls.
func (t *tool) ParallelSafe() bool { return t.ann.ReadOnly }

// Annotations are the server's hints about the tool.
func (t *tool) Annotations() flow.ToolAnnotations { return t.ann }

func (t *tool) ValidateArguments(args json.RawMessage) error {
	if t.resolved == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return err
	}
	return t.resolved.Validate(v)
}

func (t *tool) Call(ctx context.Context, s *session.Session, args json.RawMessage) (flow.ToolResult, error) {
	return t.m.call(ctx, s, t.server, t.remote, args, t.ann.ReadOnly || t.ann.Idempotent)
}

// Call calls the server's tool (by its name on the server) with args, a
// JSON object. The result names the server as its evidence; a failure is a
// *flow.ToolError of kind KindError, KindToolError or KindServerGone
// wrapping a *CallError or a *ServerGoneError, or the context's error.
//
// A server found gone before the call is sent is reconnected first (a
// stdio server is started again). A call that fails because the
// connection broke is retried once on a new connection only when it
// cannot have run: the request was never sent (the HTTP server refused
// the connection, or no longer knew the session). Tools wrapped by Tools
// also retry when the server annotates them read-only or idempotent;
// Call does not know the annotations.
func (m *Manager) Call(ctx context.Context, server, toolName string, args json.RawMessage) (flow.ToolResult, error) {
	return m.call(ctx, nil, server, toolName, args, false)
}

// call is Call on behalf of session s (nil: a server's questions are
// declined); safe says the tool may run twice. A question the server
// asked that a person has not answered yet makes it a *flow.WaitingError,
// whatever the server answered.
func (m *Manager) call(ctx context.Context, s *session.Session, server, toolName string, args json.RawMessage, safe bool) (flow.ToolResult, error) {
	res := flow.ToolResult{Backend: Backend, SandboxID: Backend + ":" + server}
	c, err := m.conn(server)
	if err != nil {
		return res, &flow.ToolError{Kind: KindServerGone, Err: err}
	}
	if c, err = m.healthy(ctx, c); err != nil {
		return res, err
	}
	if !c.alive() && c.redial != nil {
		// Gone before this call sent anything: reconnecting cannot make
		// the tool run twice.
		if c, err = m.reconnect(ctx, c); err != nil {
			return res, err
		}
	}
	if !c.alive() {
		return res, &flow.ToolError{Kind: KindServerGone, Err: c.goneError()}
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	params := &mcp.CallToolParams{Name: toolName, Arguments: args}
	out, waiting, err := send(ctx, c, s, params)
	if err != nil && waiting == nil && ctx.Err() == nil && c.redial != nil && (notSent(err) || safe && broken(err, c)) {
		if nc, rerr := m.reconnect(ctx, c); rerr == nil {
			c = nc
			out, waiting, err = send(ctx, c, s, params)
		}
	}
	if waiting != nil {
		return res, waiting
	}
	if err != nil {
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// The server may be hung: check before trusting it with
				// another call's whole timeout.
				c.suspect.Store(true)
			}
			return res, ctx.Err()
		}
		var we *jsonrpc.Error
		switch {
		case broken(err, c):
			if errors.Is(err, mcp.ErrConnectionClosed) || c.gone() {
				// The session's Wait returns right after: once a call said
				// the server is gone, a reconnect must not find it alive.
				select {
				case <-c.done:
				case <-time.After(time.Second):
				}
			}
			ge := c.goneError()
			if ge.Err == nil {
				ge.Err = err
			}
			return res, &flow.ToolError{Kind: KindServerGone, Err: ge}
		case errors.As(err, &we):
			return res, &flow.ToolError{Kind: KindError, Err: &CallError{Server: server, Tool: toolName, Code: we.Code, Message: we.Message}}
		default:
			return res, &flow.ToolError{Kind: KindError, Err: fmt.Errorf("mcptool: %s tool %s: %w", server, toolName, err)}
		}
	}
	max := m.opts.MaxResultBytes
	if c.lim.maxResult != 0 {
		max = c.lim.maxResult
	}
	r := render(out).capped(max)
	res.Content, res.Blobs, res.Attachments, res.Truncated = r.text, r.blobs, r.attachments, r.truncated
	if out.IsError {
		return res, &flow.ToolError{Kind: KindToolError, Err: &CallError{Server: server, Tool: toolName, Message: res.Content}}
	}
	return res, nil
}

// send makes one call through c on behalf of s; waiting is the question
// the server asked meanwhile that a person has not answered yet.
func send(ctx context.Context, c *conn, s *session.Session, params *mcp.CallToolParams) (out *mcp.CallToolResult, waiting, err error) {
	call := &inflight{ctx: ctx, s: s}
	done := c.calls.add(call)
	out, err = c.session.CallTool(context.WithValue(ctx, inflightKey{}, call), params)
	done()
	return out, call.waitingErr(), err
}
