package anthropic

import (
	"errors"

	"github.com/gorath/rath/flow/model"
)

// Vendor describes this client for a model.Registry: the name
// "anthropic" and the ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and
// ANTHROPIC_DEFAULT_MODEL variables.
func Vendor() model.Vendor {
	return model.Vendor{Name: "anthropic", EnvPrefix: "ANTHROPIC", New: func(c model.Config) (model.Client, error) {
		if c.Model == "" {
			return nil, errors.New("anthropic provider has no model (set Model, ANTHROPIC_DEFAULT_MODEL or the config file)")
		}
		return New(Config{BaseURL: c.BaseURL, APIKey: c.APIKey, Model: c.Model, MaxTokens: c.MaxTokens}), nil
	}}
}
