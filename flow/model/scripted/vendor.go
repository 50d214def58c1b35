package scripted

import (
	"errors"

	"github.com/gorath/rath/flow/model"
)

// Vendor describes this client for a model.Registry: the name "scripted",
// answering from the cassette file the provider names.
func Vendor() model.Vendor {
	return model.Vendor{Name: "scripted", New: func(c model.Config) (model.Client, error) {
		if c.Cassette == "" {
			return nil, errors.New("scripted provider needs a cassette file")
		}
		cl, err := Load(c.Cassette)
		if err != nil {
			return nil, err
		}
		return cl, nil
	}}
}
