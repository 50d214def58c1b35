package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/httperr"
)

// maxBody bounds the part of a non-JSON error body kept in the message.
const maxBody = 300

// classify turns a go-openai error into a *model.Error. ctx is the
// caller's context.
func (c *Client) classify(ctx context.Context, err error, capt *capture) error {
	status, header := capt.get()
	var (
		apiErr *goopenai.APIError
		reqErr *goopenai.RequestError
	)
	switch {
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode >= 400:
		return c.httpError(apiErr.HTTPStatusCode, header, describe(apiErr))
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode >= 400:
		// An error body that is not the API's error object: a proxy's
		// HTML page, plain text, or nothing.
		return c.httpError(reqErr.HTTPStatusCode, header, "body: "+httperr.Excerpt(reqErr.Body, maxBody))
	case errors.As(err, &apiErr):
		// An error object sent inside a stream that had started with 200.
		return httperr.New(Provider, streamErrorKind(apiErr), 0, 0, "error in stream: "+describe(apiErr), c.key, nil)
	case errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages):
		return httperr.New(Provider, model.KindMalformed, 0, 0, "stream: "+err.Error(), c.key, err)
	}
	kind := httperr.KindForTransport(ctx, err)
	msg := err.Error()
	switch {
	case kind == model.KindMalformed:
		msg = fmt.Sprintf("response (HTTP %d) is not valid JSON: %v", status, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		msg = "connection closed before the response was complete: " + msg
	}
	return httperr.New(Provider, kind, 0, 0, msg, c.key, err)
}

func (c *Client) httpError(status int, header http.Header, msg string) error {
	return httperr.New(Provider, httperr.KindForStatus(status), status, httperr.RetryAfter(header, time.Now()), msg, c.key, nil)
}

// describe renders the API's error object: message, then type and code.
func describe(e *goopenai.APIError) string {
	msg := e.Message
	if e.Type != "" {
		msg += " (type " + e.Type + ")"
	}
	// A JSON null code decodes as the number 0.
	if e.Code != nil && e.Code != 0 && e.Code != "" {
		msg += fmt.Sprintf(" (code %v)", e.Code)
	}
	return msg
}

// streamErrorKind classifies an error object that came without an HTTP
// status, by its code or type.
func streamErrorKind(e *goopenai.APIError) model.ErrorKind {
	code, _ := e.Code.(string)
	switch {
	case code == "rate_limit_exceeded" || e.Type == "requests" || e.Type == "rate_limit_error":
		return model.KindRateLimit
	case code == "invalid_api_key" || e.Type == "authentication_error":
		return model.KindAuth
	case e.Type == "invalid_request_error":
		return model.KindBadRequest
	}
	return model.KindServer
}
