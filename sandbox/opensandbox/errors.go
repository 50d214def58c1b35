package opensandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorath/rath/sandbox"
)

// APIError is a non-success HTTP response from the lifecycle server or from
// execd. Code and Message come from whichever error body the service sent:
// the {code, message} envelope, FastAPI's 422 {detail: [...]}, or execd's
// token middleware {error}. A 404 matches sandbox.ErrNotFound with
// errors.Is.
type APIError struct {
	Method, URL string
	Status      int
	Code        string
	Message     string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "opensandbox: %s %s: %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		fmt.Fprintf(&b, " [%s]", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Is makes a 404 match sandbox.ErrNotFound.
func (e *APIError) Is(target error) bool {
	return target == sandbox.ErrNotFound && e.Status == http.StatusNotFound
}

// maxErrorBody bounds how much of an error body is read and quoted.
const maxErrorBody = 64 << 10

// decodeError fills Code and Message from an error body in any of the
// three shapes the services use, falling back to the raw text.
func decodeError(method, url string, status int, body []byte) *APIError {
	e := &APIError{Method: method, URL: url, Status: status}
	var shape struct {
		Code    string          `json:"code"`
		Message string          `json:"message"`
		Error   string          `json:"error"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &shape) == nil {
		e.Code, e.Message = shape.Code, shape.Message
		if e.Message == "" && shape.Error != "" {
			e.Message = shape.Error
		}
		if e.Message == "" && len(shape.Detail) > 0 {
			e.Message = detailMessage(shape.Detail)
		}
		if e.Code != "" || e.Message != "" {
			return e
		}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 512 {
		text = text[:512] + "..."
	}
	e.Message = text
	return e
}

// detailMessage renders FastAPI's validation detail: a list of
// {loc, msg} (or, for plain HTTPExceptions, a string).
func detailMessage(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var items []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return string(raw)
	}
	var parts []string
	for _, it := range items {
		loc := make([]string, len(it.Loc))
		for i, l := range it.Loc {
			loc[i] = fmt.Sprint(l)
		}
		if len(loc) > 0 {
			parts = append(parts, strings.Join(loc, ".")+": "+it.Msg)
		} else {
			parts = append(parts, it.Msg)
		}
	}
	return strings.Join(parts, "; ")
}
