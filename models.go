package rath

import (
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/anthropic"
	"github.com/gorath/rath/flow/model/openai"
	"github.com/gorath/rath/flow/model/scripted"
)

// Models returns a new registry of the built-in model vendors: openai
// (any OpenAI-compatible endpoint), anthropic and scripted (cassettes).
// Add a vendor of your own with Register, and give the registry to
// Options.Models or flow.ResolveOptions.Models.
func Models() *model.Registry {
	return model.NewRegistry(openai.Vendor(), anthropic.Vendor(), scripted.Vendor())
}

// NewProvider resolves p against the process environment and the default
// config file, with the built-in vendors (Models): the one call a program
// needs for a provider outside a runtime.
func NewProvider(p flow.Provider) (*flow.Provider, error) {
	return flow.ResolveProvider(p, flow.ResolveOptions{Models: Models()})
}

// Models returns the runtime's model vendors (Options.Models).
func (rt *Runtime) Models() *model.Registry { return rt.models }

// ResolveProvider resolves p as flow.ResolveProvider does, with the
// runtime's model vendors.
func (rt *Runtime) ResolveProvider(p flow.Provider, opts flow.ResolveOptions) (*flow.Provider, error) {
	if opts.Models == nil {
		opts.Models = rt.models
	}
	return flow.ResolveProvider(p, opts)
}
