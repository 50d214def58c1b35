package openviking

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinels matched by *Error (errors.Is), by the server's error code or,
// for a code this client does not know, by HTTP status.
var (
	// ErrInvalidArgument: INVALID_ARGUMENT or INVALID_URI, 400 (malformed
	// JSON, a bad parameter or URI).
	ErrInvalidArgument = errors.New("openviking: invalid argument")
	// ErrUnauthenticated: UNAUTHENTICATED, 401 (a key missing or wrong).
	ErrUnauthenticated = errors.New("openviking: unauthenticated")
	// ErrPermissionDenied: PERMISSION_DENIED, 403.
	ErrPermissionDenied = errors.New("openviking: permission denied")
	// ErrNotFound: NOT_FOUND, 404, or SESSION_EXPIRED, 410.
	ErrNotFound = errors.New("openviking: not found")
	// ErrConflict: ALREADY_EXISTS, CONFLICT or ABORTED, 409.
	ErrConflict = errors.New("openviking: conflict")
	// ErrFailedPrecondition: FAILED_PRECONDITION, 412 (as after a failed
	// commit).
	ErrFailedPrecondition = errors.New("openviking: failed precondition")
	// ErrRateLimited: RESOURCE_EXHAUSTED, 429.
	ErrRateLimited = errors.New("openviking: rate limited")
	// ErrUnavailable: UNAVAILABLE, 503, or a server that cannot be reached
	// or answered too late.
	ErrUnavailable = errors.New("openviking: unavailable")
	// ErrServer: any other 5xx or error code (INTERNAL, PROCESSING_ERROR).
	ErrServer = errors.New("openviking: server error")
	// ErrMalformed: a response that is not the documented envelope.
	ErrMalformed = errors.New("openviking: malformed response")
	// ErrCrossOrigin is matched by a *CrossOriginError.
	ErrCrossOrigin = errors.New("openviking: redirect to another origin refused")
)

// CrossOriginError reports a redirect to another origin (scheme, host,
// port) than the configured server's. It is not followed: the request
// carries the API key, which goes nowhere else.
type CrossOriginError struct {
	Server string // the configured URL (no userinfo)
	URL    string // where the redirect pointed (no userinfo)
}

func (e *CrossOriginError) Error() string {
	return fmt.Sprintf("openviking: refused a redirect to %s: not the origin of the configured server %s, and its key goes nowhere else", e.URL, e.Server)
}

// Is makes errors.Is(err, ErrCrossOrigin) true.
func (e *CrossOriginError) Is(target error) bool { return target == ErrCrossOrigin }

// Error is an error the server answered with.
type Error struct {
	Op      string // the call, like "search/find"
	Status  int    // HTTP status
	Code    string // the envelope's error.code; empty if there was none
	Message string
}

func (e *Error) Error() string {
	code := e.Code
	if code == "" {
		code = http.StatusText(e.Status)
	}
	return fmt.Sprintf("openviking: %s: %d %s: %s", e.Op, e.Status, code, e.Message)
}

// codes maps the documented error codes to sentinels.
var codes = map[string]error{
	"INVALID_ARGUMENT":    ErrInvalidArgument,
	"INVALID_URI":         ErrInvalidArgument,
	"CONFLICT":            ErrConflict,
	"SESSION_EXPIRED":     ErrNotFound,
	"UNAUTHENTICATED":     ErrUnauthenticated,
	"PERMISSION_DENIED":   ErrPermissionDenied,
	"NOT_FOUND":           ErrNotFound,
	"ALREADY_EXISTS":      ErrConflict,
	"ABORTED":             ErrConflict,
	"FAILED_PRECONDITION": ErrFailedPrecondition,
	"RESOURCE_EXHAUSTED":  ErrRateLimited,
	"UNAVAILABLE":         ErrUnavailable,
	"DEADLINE_EXCEEDED":   ErrUnavailable,
	"INTERNAL":            ErrServer,
	"PROCESSING_ERROR":    ErrServer,
}

// statuses maps HTTP statuses to sentinels when the code is unknown.
var statuses = map[int]error{
	http.StatusBadRequest:         ErrInvalidArgument,
	http.StatusUnauthorized:       ErrUnauthenticated,
	http.StatusForbidden:          ErrPermissionDenied,
	http.StatusNotFound:           ErrNotFound,
	http.StatusConflict:           ErrConflict,
	http.StatusPreconditionFailed: ErrFailedPrecondition,
	http.StatusTooManyRequests:    ErrRateLimited,
	http.StatusServiceUnavailable: ErrUnavailable,
	http.StatusGatewayTimeout:     ErrUnavailable,
}

// Unwrap returns the sentinel the error matches.
func (e *Error) Unwrap() error {
	if s, ok := codes[e.Code]; ok {
		return s
	}
	if s, ok := statuses[e.Status]; ok {
		return s
	}
	return ErrServer
}
