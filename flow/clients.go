package flow

import (
	"fmt"

	"github.com/gorath/rath/flow/model"
)

// newClient builds the model client for a resolved provider.
func newClient(p *Provider) (model.Client, error) {
	return nil, fmt.Errorf("%w: unknown kind %q (want openai, anthropic or scripted)", ErrProvider, p.Kind)
}
