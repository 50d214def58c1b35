package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gorath/rath"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/sandbox"
)

// DefaultBackends returns the sandbox backends a worker runs submitted
// workspaces on when its operator says nothing: not local, which runs
// tools as the worker's own user on its host.
func DefaultBackends() []string { return []string{"bwrap", "opensandbox"} }

// ErrRefused is matched by a *RefusedError.
var ErrRefused = errors.New("refused by this worker")

// RefusedError is a submitted run that asks a worker for something its
// operator did not allow (Policy): a sandbox backend outside
// Policy.Backends, an MCP server the submission brings itself, a
// workspace or cassette outside Policy.WorkspaceRoot. The run fails with
// it as its reason before anything of it runs.
type RefusedError struct {
	// What names what was refused ("backend local", "MCP server x (command …)").
	What string
	// Allow says how the worker's operator could allow it, or the
	// submitter do without.
	Allow string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("this worker refuses the run's %s: %s", e.What, e.Allow)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// ApprovalsParam is the run parameter a worker records its imposed
// approval rules in (JSON, as flow.ParseApprovalRules reads), so that a
// replay and a resume rebuild the same gate.
const ApprovalsParam = rath.ParamImposed

// Policy is what a worker's operator lets submitted runs make the worker
// do. Whoever can submit to the store writes a run's parameters, so
// nothing in them is trusted beyond it. The zero value allows the
// DefaultBackends, no MCP server a run brings, no imposed approval and
// any workspace.
type Policy struct {
	// Backends are the sandbox backends a run's workspace may be placed
	// on (rath worker --backends). Nil means DefaultBackends.
	Backends []string
	// SubmittedMCP lets a run start MCP servers it brings (a command on
	// this host, or a URL) (rath worker --allow-submitted-mcp). False
	// (the default): a run may only name the servers in Servers.
	SubmittedMCP bool
	// Servers are the MCP servers of the worker's own configuration: a
	// run may bring one of these, exactly as configured, without
	// SubmittedMCP. Nil means none.
	Servers map[string]mcptool.Server
	// Approvals are the operator's approval rules (rath worker --approve,
	// then the worker's config file's "approvals"), imposed on every
	// built-in agent run the worker executes: the run's own rules cannot
	// loosen them (flow.WithImposedApproval). Nil imposes none.
	Approvals []flow.ApprovalRule
	// WorkspaceRoot, when set, is the directory under which a run's local
	// or bwrap workspace and its cassette must lie (rath worker
	// --workspace-root); the backends enforce it too, at every placement.
	// Empty allows any directory.
	WorkspaceRoot string
}

// Asks is what a submitted run asks of the worker that runs it, as
// Policy.Check judges it.
type Asks struct {
	// Workspace is the run's workspace: a directory for the local and
	// bwrap backends, an image or sandbox spec for opensandbox; empty for
	// none.
	Workspace string
	// Backend is the sandbox backend the workspace is placed on.
	Backend string
	// Cassette is the file the run's model replies come from; empty for
	// none.
	Cassette string
	// MCP are the MCP servers the submission brings, by name.
	MCP map[string]mcptool.Server
}

// Check refuses, with a *RefusedError, a run that asks for more than the
// policy allows.
func (p Policy) Check(a Asks) error {
	backends := p.Backends
	if backends == nil {
		backends = DefaultBackends()
	}
	if a.Workspace != "" && !slices.Contains(backends, a.Backend) {
		return &RefusedError{What: fmt.Sprintf("backend %q", a.Backend),
			Allow: fmt.Sprintf("it runs workspaces on %s only (submit with --backend %s, or start the worker with --backends %s)",
				strings.Join(backends, ", "), backends[0], strings.Join(append(slices.Clone(backends), a.Backend), ","))}
	}
	if a.Workspace != "" && p.WorkspaceRoot != "" && (a.Backend == "local" || a.Backend == "bwrap") && !within(p.WorkspaceRoot, a.Workspace) {
		return &RefusedError{What: fmt.Sprintf("workspace %q", a.Workspace),
			Allow: fmt.Sprintf("it runs workspaces under %s only (submit with a --workspace there, or start the worker with another --workspace-root)", p.WorkspaceRoot)}
	}
	if a.Cassette != "" && p.WorkspaceRoot != "" && !within(p.WorkspaceRoot, a.Cassette) {
		// A cassette's replies become the run's model output, which the
		// submitter reads: a file elsewhere on the worker could leak.
		return &RefusedError{What: fmt.Sprintf("cassette %q", a.Cassette),
			Allow: fmt.Sprintf("it reads the files a run names under %s only (--workspace-root)", p.WorkspaceRoot)}
	}
	if p.SubmittedMCP {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(a.MCP)) {
		srv := a.MCP[name]
		// The same server as this worker's own config is the operator's:
		// nothing the submitter chose runs.
		if own, ok := p.Servers[name]; ok && sameServer(own, srv) {
			continue
		}
		what := fmt.Sprintf("MCP server %q (command %q)", name, strings.Join(append([]string{srv.Command}, srv.Args...), " "))
		if srv.URL != "" {
			what = fmt.Sprintf("MCP server %q (url %q)", name, srv.URL)
		}
		return &RefusedError{What: what,
			Allow: "it starts only the MCP servers of its own config file, which a run names with --tools NAME.* and no --mcp (or start the worker with --allow-submitted-mcp)"}
	}
	return nil
}

// CheckAgent refuses, with a *RefusedError, a run of the built-in agent
// (rath.AgentWorkflow, its parameters read by rath.ParseAgentSpec) that
// asks for more than the policy allows: its workspace, backend and
// cassette, and the MCP servers it brings.
func (p Policy) CheckAgent(spec rath.AgentSpec) error {
	asks := Asks{Workspace: spec.Workspace, Backend: spec.Backend, Cassette: spec.Provider.Cassette}
	if !p.SubmittedMCP {
		asks.MCP = spec.MCP
	}
	return p.Check(asks)
}

// Impose sets a submitted run's imposed approval rules
// (rath.AgentSpec.Imposed, recorded under ApprovalsParam) to the
// policy's, over whatever the submission put there: only the worker says
// what it imposes.
func (p Policy) Impose(spec *rath.AgentSpec) {
	spec.Imposed = slices.Clone(p.Approvals)
}

// within reports whether dir, with its symlinks resolved, is root or
// lies below it (also resolved). A dir that does not exist is judged as
// written (the worker then finds it unreachable; the backends would
// create it only inside the root).
func within(root, dir string) bool {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if d, err = filepath.Abs(dir); err != nil {
			return false
		}
		if rabs, err := filepath.Abs(root); err == nil {
			if _, ok := sandbox.RelUnder(rabs, d); ok {
				return true
			}
		}
	}
	_, ok := sandbox.RelUnder(r, d)
	return ok
}

// sameServer reports whether two server entries start the same thing.
func sameServer(a, b mcptool.Server) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
