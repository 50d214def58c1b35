package rath

import (
	"fmt"

	"github.com/gorath/rath/sandbox"
	"github.com/gorath/rath/sandbox/bwrap"
	"github.com/gorath/rath/sandbox/local"
	"github.com/gorath/rath/sandbox/opensandbox"
)

// BuiltinSandboxes returns a registry of the named built-in backends
// ("local", "bwrap", "opensandbox"), for Options.Sandboxes; no name means
// all three. A runtime opened with it can open no other backend, whatever
// placement a session in the log claims: a worker that takes runs from
// others lists only the backends its operator allows.
func BuiltinSandboxes(names ...string) (*sandbox.Registry, error) {
	return BuiltinSandboxesWith(SandboxOptions{}, names...)
}

// SandboxOptions configure the built-in backends of BuiltinSandboxesWith.
type SandboxOptions struct {
	// WorkspaceRoot confines the workspaces of the local and bwrap
	// backends to the tree under it (local.Backend.WorkspaceRoot): a
	// placement elsewhere fails. Empty confines nothing.
	WorkspaceRoot string
}

// BuiltinSandboxesWith is BuiltinSandboxes with the backends configured
// by opts.
func BuiltinSandboxesWith(opts SandboxOptions, names ...string) (*sandbox.Registry, error) {
	if len(names) == 0 {
		names = []string{"local", "bwrap", "opensandbox"}
	}
	reg := sandbox.NewRegistry()
	for _, n := range names {
		var b sandbox.Backend
		switch n {
		case "local":
			b = &local.Backend{WorkspaceRoot: opts.WorkspaceRoot}
		case "bwrap":
			b = &bwrap.Backend{WorkspaceRoot: opts.WorkspaceRoot}
		case "opensandbox":
			b = &opensandbox.Backend{}
		default:
			return nil, fmt.Errorf("rath: %w", &sandbox.UnknownBackendError{Name: n, Known: []string{"bwrap", "local", "opensandbox"}})
		}
		if _, err := reg.Lookup(n); err == nil {
			continue // named twice
		}
		reg.Register(b)
	}
	return reg, nil
}
