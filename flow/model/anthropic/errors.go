package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/httperr"
)

// maxBody bounds the part of a non-JSON error body kept in the message.
const maxBody = 300

// classify turns an SDK error into a *model.Error. ctx is the caller's.
func (c *Client) classify(ctx context.Context, err error) error {
	var aerr *sdk.Error
	if errors.As(err, &aerr) {
		typ, msg := describe(aerr)
		if aerr.StatusCode >= 400 {
			var retryAfter time.Duration
			if aerr.Response != nil {
				retryAfter = httperr.RetryAfter(aerr.Response.Header, time.Now())
			}
			return httperr.New(Provider, httperr.KindForStatus(aerr.StatusCode), aerr.StatusCode, retryAfter, msg, c.key, nil)
		}
		// An error event inside a stream that had started with 200.
		return httperr.New(Provider, streamErrorKind(typ), 0, 0, "error in stream: "+msg, c.key, nil)
	}
	kind := httperr.KindForTransport(ctx, err)
	msg := err.Error()
	switch {
	case kind == model.KindMalformed:
		msg = "response is not valid JSON: " + msg
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = "connection closed before the response was complete: " + msg
	}
	return httperr.New(Provider, kind, 0, 0, msg, c.key, err)
}

// describe reads the API's error object, {"type": "error", "error":
// {"type": ..., "message": ...}}, or an excerpt of a body that is not one.
// It never uses the SDK's Error(), which prints the request URL.
func describe(e *sdk.Error) (typ, msg string) {
	raw := e.RawJSON()
	var env struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &env) == nil && (env.Error.Type != "" || env.Error.Message != "") {
		if env.Error.Message == "" {
			return env.Error.Type, env.Error.Type
		}
		return env.Error.Type, fmt.Sprintf("%s: %s", env.Error.Type, env.Error.Message)
	}
	return "", "body: " + httperr.Excerpt([]byte(raw), maxBody)
}

// streamErrorKind classifies an error event by its type.
func streamErrorKind(typ string) model.ErrorKind {
	switch typ {
	case "rate_limit_error":
		return model.KindRateLimit
	case "authentication_error", "permission_error":
		return model.KindAuth
	case "invalid_request_error", "not_found_error", "request_too_large":
		return model.KindBadRequest
	}
	return model.KindServer // overloaded_error, api_error and anything new
}
