package openai

import (
	"errors"

	"github.com/gorath/rath/flow/model"
)

// Vendor describes this client for a model.Registry: the name "openai"
// and the OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_DEFAULT_MODEL
// variables.
func Vendor() model.Vendor {
	return model.Vendor{Name: "openai", EnvPrefix: "OPENAI", New: func(c model.Config) (model.Client, error) {
		if c.Model == "" {
			return nil, errors.New("openai provider has no model (set Model, OPENAI_DEFAULT_MODEL or the config file)")
		}
		return New(Config{BaseURL: c.BaseURL, APIKey: c.APIKey, Model: c.Model}), nil
	}}
}
