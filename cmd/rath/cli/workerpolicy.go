package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/sandbox"
)

// defaultWorkerBackends are the backends a worker runs submitted
// workspaces on when its operator says nothing: not local, which runs
// tools as the worker's own user on its host.
var defaultWorkerBackends = []string{"bwrap", "opensandbox"}

// ErrRefusedByWorker is matched by a *RefusedError.
var ErrRefusedByWorker = errors.New("refused by this worker")

// RefusedError is a submitted run that asks a worker for something its
// operator did not allow: a sandbox backend outside --backends, an MCP
// server the submission brings itself, a workspace or cassette outside
// --workspace-root. The run fails with it as its
// reason before anything of it runs.
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

// Is makes errors.Is(err, ErrRefusedByWorker) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefusedByWorker }

// workerPolicy is what a worker's operator lets submitted runs make the
// worker do. Whoever can submit to the store writes a run's parameters,
// so nothing in them is trusted beyond it.
type workerPolicy struct {
	// backends are the sandbox backends a run's workspace may be placed
	// on (rath worker --backends).
	backends []string
	// submittedMCP lets a run start MCP servers it brings (--mcp of rath
	// submit: a command on this host, or a URL) (rath worker
	// --allow-submitted-mcp). Without it a run may only name the servers
	// of this worker's config file.
	submittedMCP bool
	// approvals are the operator's approval rules (rath worker --approve,
	// then the worker's config file's "approvals"), imposed on every
	// built-in agent run the worker executes: the run's own rules cannot
	// loosen them (flow.WithImposedApproval).
	approvals []flow.ApprovalRule
	// workspaceRoot, when set, is the directory under which a run's
	// local or bwrap workspace and its cassette must lie (rath worker
	// --workspace-root); the backends enforce it too, at every placement.
	workspaceRoot string
}

// workerApprovalsParam is the run parameter a worker records its imposed
// approval rules in (JSON, as flow.ParseApprovalRules reads), so that a
// replay and `rath resume` rebuild the same gate.
const workerApprovalsParam = "worker_approvals"

// impose writes the policy's approval rules into a submitted run's
// parameters, over whatever the submission put there: only the worker
// says what it imposes.
func (p workerPolicy) impose(params map[string]string) error {
	delete(params, workerApprovalsParam)
	if len(p.approvals) == 0 {
		return nil
	}
	b, err := json.Marshal(p.approvals)
	if err != nil {
		return err
	}
	params[workerApprovalsParam] = string(b)
	return nil
}

// parseBackends checks a --backends list against the CLI's backends.
func parseBackends(list []string) ([]string, error) {
	var out []string
	for _, b := range list {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		if !slices.Contains(cliBackends, b) {
			return nil, fmt.Errorf("backend %q: want some of %s", b, strings.Join(cliBackends, ", "))
		}
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no backend: want some of %s", strings.Join(cliBackends, ", "))
	}
	return out, nil
}

// check refuses the parameters of a submitted "rath run" that ask for
// more than the policy allows. configured are the MCP servers of this
// worker's config file.
func (p workerPolicy) check(params map[string]string, configured map[string]mcptool.Server) error {
	if params["workspace"] != "" && !slices.Contains(p.backends, params["backend"]) {
		return &RefusedError{What: fmt.Sprintf("backend %q", params["backend"]),
			Allow: fmt.Sprintf("it runs workspaces on %s only (submit with --backend %s, or start the worker with --backends %s)",
				strings.Join(p.backends, ", "), p.backends[0], strings.Join(append(slices.Clone(p.backends), params["backend"]), ","))}
	}
	if ws := params["workspace"]; ws != "" && p.workspaceRoot != "" && (params["backend"] == "local" || params["backend"] == "bwrap") && !within(p.workspaceRoot, ws) {
		return &RefusedError{What: fmt.Sprintf("workspace %q", ws),
			Allow: fmt.Sprintf("it runs workspaces under %s only (submit with a --workspace there, or start the worker with another --workspace-root)", p.workspaceRoot)}
	}
	if c := params["cassette"]; c != "" && p.workspaceRoot != "" && !within(p.workspaceRoot, c) {
		// A cassette's replies become the run's model output, which the
		// submitter reads: a file elsewhere on the worker could leak.
		return &RefusedError{What: fmt.Sprintf("cassette %q", c),
			Allow: fmt.Sprintf("it reads the files a run names under %s only (--workspace-root)", p.workspaceRoot)}
	}
	raw := params[paramMCP]
	if raw == "" || p.submittedMCP {
		return nil
	}
	var brought map[string]mcptool.Server
	if err := json.Unmarshal([]byte(raw), &brought); err != nil {
		return &RefusedError{What: "MCP servers", Allow: fmt.Sprintf("its %s parameter does not parse: %v", paramMCP, err)}
	}
	for _, name := range slices.Sorted(maps.Keys(brought)) {
		srv := brought[name]
		// The same server as this worker's own config is the operator's:
		// nothing the submitter chose runs.
		if own, ok := configured[name]; ok && sameServer(own, srv) {
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
