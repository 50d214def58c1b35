package httperr_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/httperr"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": now.Add(42 * time.Second).Format(http.TimeFormat)}, 42 * time.Second},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-1"}, 0},
		{"ms header wins", map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond},
		{"bad ms header falls back", map[string]string{"Retry-After-Ms": "x", "Retry-After": "2"}, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := httperr.RetryAfter(h, now); got != tt.want {
				t.Fatalf("RetryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestKindForStatus(t *testing.T) {
	tests := []struct {
		status int
		want   model.ErrorKind
	}{
		{400, model.KindBadRequest}, {401, model.KindAuth}, {403, model.KindAuth}, {404, model.KindBadRequest},
		{408, model.KindTimeout}, {413, model.KindBadRequest}, {422, model.KindBadRequest}, {429, model.KindRateLimit},
		{500, model.KindServer}, {502, model.KindServer}, {503, model.KindServer}, {529, model.KindServer},
	}
	for _, tt := range tests {
		if got := httperr.KindForStatus(tt.status); got != tt.want {
			t.Errorf("KindForStatus(%d) = %q, want %q", tt.status, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

func TestKindForTransport(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	var syn error = &json.SyntaxError{}
	if err := json.Unmarshal([]byte("{x"), new(any)); err != nil {
		syn = err
	}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want model.ErrorKind
	}{
		{"caller canceled", canceled, errors.New("whatever"), model.KindCanceled},
		{"caller deadline", expired, errors.New("whatever"), model.KindTimeout},
		{"wrapped canceled", context.Background(), fmt.Errorf("x: %w", context.Canceled), model.KindCanceled},
		{"sdk attempt timeout", context.Background(), context.DeadlineExceeded, model.KindTimeout},
		{"client timeout", context.Background(), &url.Error{Op: "Post", URL: "u", Err: timeoutErr{}}, model.KindTimeout},
		{"json syntax", context.Background(), fmt.Errorf("decode: %w", syn), model.KindMalformed},
		{"json type", context.Background(), &json.UnmarshalTypeError{Value: "string"}, model.KindMalformed},
		{"unexpected EOF", context.Background(), io.ErrUnexpectedEOF, model.KindConnection},
		{"refused", context.Background(), &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, model.KindConnection},
		{"reset", context.Background(), &net.OpError{Op: "read", Err: syscall.ECONNRESET}, model.KindConnection},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := httperr.KindForTransport(tt.ctx, tt.err); got != tt.want {
				t.Fatalf("kind = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNew_ScrubsAndKeepsOnlySentinels(t *testing.T) {
	const key = "sk-secret-123"
	cause := &url.Error{Op: "Post", URL: "https://h/v1?key=" + key, Err: context.Canceled}
	err := httperr.New("openai", model.KindCanceled, 0, 0, cause.Error(), key, cause)
	if got, want := err.Error(), `model: openai call failed (canceled): Post "https://h/v1?key=[REDACTED]": context canceled`; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, model.ErrModel) {
		t.Fatal("sentinels lost")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		t.Fatal("the original error (which can hold the request) is reachable")
	}
	if got := httperr.Scrub("no secret here", ""); got != "no secret here" {
		t.Fatalf("Scrub with empty secret = %q", got)
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"  short  ", 10, "short"},
		{"abcdef", 3, "abc..."},
		{"aéb", 2, "a..."}, // é is two bytes: not cut inside
	}
	for _, tt := range tests {
		if got := httperr.Excerpt([]byte(tt.in), tt.n); got != tt.want {
			t.Errorf("Excerpt(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
