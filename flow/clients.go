package flow

import (
	"errors"
	"fmt"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/anthropic"
	"github.com/gorath/rath/flow/model/openai"
	"github.com/gorath/rath/flow/model/scripted"
)

// newClient builds the model client for a resolved provider.
func newClient(p *Provider) (model.Client, error) {
	switch p.Kind {
	case KindOpenAI:
		if p.Model == "" {
			return nil, fmt.Errorf("%w: openai provider has no model (set Model, OPENAI_DEFAULT_MODEL or the config file)", ErrProvider)
		}
		return openai.New(openai.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, Model: p.Model}), nil
	case KindAnthropic:
		if p.Model == "" {
			return nil, fmt.Errorf("%w: anthropic provider has no model (set Model, ANTHROPIC_DEFAULT_MODEL or the config file)", ErrProvider)
		}
		return anthropic.New(anthropic.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, Model: p.Model, MaxTokens: p.MaxTokens}), nil
	case KindScripted:
		if p.Cassette == "" {
			return nil, fmt.Errorf("%w: scripted provider needs a cassette file", ErrProvider)
		}
		c, err := scripted.Load(p.Cassette)
		if errors.Is(err, scripted.ErrCassette) {
			return nil, fmt.Errorf("%w: %v", ErrProvider, err)
		}
		return c, err
	}
	return nil, fmt.Errorf("%w: unknown kind %q (want openai, anthropic or scripted)", ErrProvider, p.Kind)
}

// Scripted returns a provider that answers from entries, in order, and
// reads no config file and no environment: the one-line model of examples
// and tests.
//
//	agent, err := flow.NewAgent("Answer briefly.", flow.Scripted(scripted.Entry{Content: "Paris."}))
func Scripted(entries ...scripted.Entry) *Provider {
	p, err := ResolveProvider(Provider{Kind: KindScripted, Model: "scripted", Client: scripted.New(entries...)},
		ResolveOptions{Getenv: func(string) string { return "" }, ConfigPath: "-"})
	if err != nil {
		// A scripted provider with a client needs nothing that can fail.
		panic(fmt.Sprintf("flow: scripted provider: %v", err))
	}
	return p
}
