package flow

import (
	"fmt"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/scripted"
)

// newClient builds the model client for a resolved provider from its
// vendor in models.
func newClient(p *Provider, models *model.Registry) (model.Client, error) {
	if models == nil {
		return nil, fmt.Errorf("%w: no model registry to build a %q client from: resolve through the rath runtime (Runtime.ResolveProvider, rath.NewProvider) or set ResolveOptions.Models", ErrProvider, p.Vendor)
	}
	c, err := models.New(p.Vendor, model.Config{Model: p.Model, BaseURL: p.BaseURL, APIKey: p.APIKey, MaxTokens: p.MaxTokens, Cassette: p.Cassette})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProvider, err)
	}
	return c, nil
}

// Scripted returns a provider that answers from entries, in order, and
// reads no config file and no environment: the one-line model of examples
// and tests.
//
//	agent, err := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: "Paris."}))
func Scripted(entries ...scripted.Entry) *Provider {
	p, err := ResolveProvider(Provider{Vendor: VendorScripted, Model: "scripted", Client: scripted.New(entries...)},
		ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "-"})
	if err != nil {
		// A scripted provider with a client needs nothing that can fail.
		panic(fmt.Sprintf("flow: scripted provider: %v", err))
	}
	return p
}
