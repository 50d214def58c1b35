package model

import (
	"errors"
	"fmt"
	"time"
)

// ErrorKind classifies a failed model call.
type ErrorKind string

// Error kinds. RateLimit, Server, Timeout and Connection are retryable.
const (
	KindRateLimit  ErrorKind = "rate_limit"  // HTTP 429
	KindServer     ErrorKind = "server"      // HTTP 5xx
	KindTimeout    ErrorKind = "timeout"     // deadline or client timeout
	KindConnection ErrorKind = "connection"  // reset, refused, EOF mid-response
	KindBadRequest ErrorKind = "bad_request" // HTTP 400, 404, 422
	KindAuth       ErrorKind = "auth"        // HTTP 401, 403
	KindMalformed  ErrorKind = "malformed"   // a response that is not valid for the protocol
	KindScript     ErrorKind = "script"      // a scripted cassette ran out or did not match
	KindCanceled   ErrorKind = "canceled"    // the caller's context was canceled
)

// Retryable reports whether a call failing with this kind may succeed if
// tried again.
func (k ErrorKind) Retryable() bool {
	switch k {
	case KindRateLimit, KindServer, KindTimeout, KindConnection:
		return true
	}
	return false
}

// ErrModel is matched by every *Error.
var ErrModel = errors.New("model: call failed")

// Error is a failed model call. Its message never contains the API key.
type Error struct {
	Kind       ErrorKind
	StatusCode int           // HTTP status, 0 if none
	RetryAfter time.Duration // from a Retry-After header, 0 if none
	Provider   string        // openai, anthropic, scripted
	Err        error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("model: %s call failed (%s)", e.Provider, e.Kind)
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(" HTTP %d", e.StatusCode)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrModel) true.
func (e *Error) Is(target error) bool { return target == ErrModel }

// Retryable reports whether the call may succeed if tried again.
func (e *Error) Retryable() bool { return e.Kind.Retryable() }

// KindOf returns the kind of a model error, or "" if err is not one.
func KindOf(err error) ErrorKind {
	var me *Error
	if errors.As(err, &me) {
		return me.Kind
	}
	return ""
}
