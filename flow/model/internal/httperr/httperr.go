package httperr

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorath/rath/flow/model"
)

// KindForStatus classifies an HTTP error status. It must only be called
// for statuses of 400 and above.
func KindForStatus(status int) model.ErrorKind {
	switch {
	case status == http.StatusTooManyRequests:
		return model.KindRateLimit
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return model.KindAuth
	case status == http.StatusRequestTimeout:
		// A server that gave up waiting for the request body: retryable.
		return model.KindTimeout
	case status >= 500:
		// Includes Anthropic's 529 "overloaded".
		return model.KindServer
	default:
		return model.KindBadRequest
	}
}

// KindForTransport classifies an error that came with no HTTP status: the
// caller's context ending, a client timeout, a response that does not
// parse, or a broken connection (the default).
func KindForTransport(ctx context.Context, err error) model.ErrorKind {
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.Canceled) {
			return model.KindCanceled
		}
		return model.KindTimeout
	}
	var (
		syntax    *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		timeouter interface{ Timeout() bool }
	)
	switch {
	case errors.Is(err, context.Canceled):
		return model.KindCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return model.KindTimeout
	case errors.As(err, &timeouter) && timeouter.Timeout():
		return model.KindTimeout
	case errors.As(err, &syntax), errors.As(err, &typeErr):
		return model.KindMalformed
	}
	return model.KindConnection
}

// RetryAfter reads how long the server asks the caller to wait:
// retry-after-ms (milliseconds, sent by OpenAI and Anthropic) first, then
// Retry-After in seconds or as an HTTP date. It returns 0 when neither is
// present or parses, or when the date is already past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// Redacted stands in for the API key in scrubbed text.
const Redacted = "[REDACTED]"

// Scrub replaces every occurrence of secret in s. An empty secret leaves s
// unchanged.
func Scrub(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, Redacted)
}

// Excerpt returns at most n bytes of b as text, cut on a rune boundary,
// with "..." when it was cut. Error bodies can be whole HTML pages; an
// excerpt is enough to tell what went wrong.
func Excerpt(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// New builds a *model.Error whose wrapped error carries msg scrubbed of
// secret. The original error is not kept, because SDK errors can hold the
// outgoing *http.Request and with it the key; only a well-known sentinel
// (context.Canceled, context.DeadlineExceeded, io.EOF,
// io.ErrUnexpectedEOF) found in cause stays reachable through errors.Is.
func New(provider string, kind model.ErrorKind, status int, retryAfter time.Duration, msg, secret string, cause error) *model.Error {
	return &model.Error{
		Kind:       kind,
		StatusCode: status,
		RetryAfter: retryAfter,
		Provider:   provider,
		Err:        &scrubbed{msg: Scrub(msg, secret), sentinel: sentinelOf(cause)},
	}
}

var sentinels = []error{context.Canceled, context.DeadlineExceeded, io.ErrUnexpectedEOF, io.EOF}

func sentinelOf(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

// scrubbed is an error message with the key removed, keeping at most one
// sentinel in the chain.
type scrubbed struct {
	msg      string
	sentinel error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.sentinel }
