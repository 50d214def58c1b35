package openaiembed

import "errors"

var (
	// ErrConfig is returned by New for an unusable configuration.
	ErrConfig = errors.New("openaiembed: bad configuration")
	// ErrResponse is matched by errors for a response that does not hold
	// exactly one vector per input.
	ErrResponse = errors.New("openaiembed: malformed response")
)
