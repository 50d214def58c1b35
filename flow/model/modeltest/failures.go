package modeltest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/flow/model"
)

// The failure cases of the conformance suite: error kinds, cancellation,
// timeouts, refused connections and the key never leaking.

func (s suite) errorKinds(t *testing.T) {
	for _, tt := range append(slices.Clone(sharedErrors), s.v.Errors...) {
		t.Run(tt.Name, func(t *testing.T) {
			srv, c := s.setup(t, tt.Reply)
			_, err := call(t.Context(), t, c, tt.Stream, userReq("hi"))
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v (%T), want *model.Error", err, err)
			}
			if me.Kind != tt.Kind || me.StatusCode != tt.Status || me.RetryAfter != tt.RetryAfter || me.Provider != s.v.Name {
				t.Fatalf("got kind %q status %d retry-after %v provider %q, want %q %d %v %s (%v)",
					me.Kind, me.StatusCode, me.RetryAfter, me.Provider, tt.Kind, tt.Status, tt.RetryAfter, s.v.Name, err)
			}
			if !errors.Is(err, model.ErrModel) {
				t.Fatal("errors.Is(err, model.ErrModel) = false")
			}
			// One attempt: retries are the caller's, never the SDK's.
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("%d requests, want exactly one attempt", n)
			}
		})
	}
}

func (s suite) retryAfterDate(t *testing.T) {
	_, c := s.setup(t, Reply{Status: 429, RetryAfter: time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)})
	_, err := c.Complete(t.Context(), userReq("hi"))
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.KindRateLimit {
		t.Fatalf("err = %v", err)
	}
	// The date has one-second resolution and the clock moved on a little.
	if me.RetryAfter < 80*time.Second || me.RetryAfter > 91*time.Second {
		t.Fatalf("RetryAfter = %v, want about 90s", me.RetryAfter)
	}
}

func (s suite) cancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("while waiting stream=", stream), func(t *testing.T) {
			_, c := s.setup(t, Reply{Content: "too late", Delay: time.Minute})
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(20*time.Millisecond, cancel)
			_, err := call(ctx, t, c, stream, userReq("hi"))
			if model.KindOf(err) != model.KindCanceled || !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want canceled matching context.Canceled", err)
			}
		})
		t.Run(fmt.Sprint("before the call stream=", stream), func(t *testing.T) {
			srv, c := s.setup(t) // nothing queued: a request that arrives fails the test
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			_, err := call(ctx, t, c, stream, userReq("hi"))
			if model.KindOf(err) != model.KindCanceled {
				t.Fatalf("err = %v, want canceled", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("%d requests sent, want 0", n)
			}
		})
	}
	t.Run("mid-stream", func(t *testing.T) {
		_, c := s.setup(t, Reply{Content: "one two three four"})
		ctx, cancel := context.WithCancel(t.Context())
		deltas := 0
		_, err := streamer(t, c).Stream(ctx, userReq("hi"), func(model.Delta) { deltas++; cancel() })
		if model.KindOf(err) != model.KindCanceled {
			t.Fatalf("err = %v, want canceled", err)
		}
		// Deltas already buffered must not be delivered after the cancel.
		if deltas != 1 {
			t.Fatalf("%d deltas delivered, want 1", deltas)
		}
	})
}

func (s suite) timeouts(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("context deadline stream=", stream), func(t *testing.T) {
			_, c := s.setup(t, Reply{Content: "too late", Delay: time.Minute})
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
			defer cancel()
			_, err := call(ctx, t, c, stream, userReq("hi"))
			if model.KindOf(err) != model.KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want timeout matching context.DeadlineExceeded", err)
			}
		})
		t.Run(fmt.Sprint("http client timeout stream=", stream), func(t *testing.T) {
			srv := s.v.NewServer(t)
			srv.Push(Reply{Content: "too late", Delay: time.Minute})
			c := s.v.NewClient(ClientConfig{BaseURL: srv.URL(), APIKey: Key, Model: Model,
				HTTPClient: &http.Client{Timeout: 20 * time.Millisecond}})
			_, err := call(t.Context(), t, c, stream, userReq("hi"))
			var me *model.Error
			if !errors.As(err, &me) || me.Kind != model.KindTimeout || !me.Retryable() {
				t.Fatalf("err = %v, want retryable timeout", err)
			}
		})
	}
}

// deadClient is a client whose server has gone: connections are refused.
func (s suite) deadClient(t *testing.T) model.Client {
	t.Helper()
	srv := s.v.NewServer(t)
	srv.Close()
	return s.v.NewClient(ClientConfig{BaseURL: srv.URL(), APIKey: Key, Model: Model})
}

func (s suite) connectionRefused(t *testing.T) {
	c := s.deadClient(t)
	for _, stream := range []bool{false, true} {
		_, err := call(t.Context(), t, c, stream, userReq("hi"))
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != model.KindConnection || !me.Retryable() {
			t.Fatalf("stream=%v: err = %v, want retryable connection", stream, err)
		}
	}
}

// noKey fails if the key, or a long enough prefix of it to matter, is in
// the text of any error in the chain, or in its Go representation.
func noKey(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, Key) || strings.Contains(s, Key[:20]) {
				t.Fatalf("key leaked in %T: %s", e, s)
			}
		}
	}
}

func (s suite) keyNeverLeaks(t *testing.T) {
	for _, tt := range append(slices.Clone(sharedErrors), s.v.Errors...) {
		t.Run(tt.Name, func(t *testing.T) {
			_, c := s.setup(t, tt.Reply)
			_, err := call(t.Context(), t, c, tt.Stream, userReq("hi"))
			noKey(t, err)
		})
	}
	t.Run("invalid request", func(t *testing.T) {
		_, c := s.setup(t)
		req := userReq("x")
		req.ToolChoice = "tool-named-" + Key
		req.Tools = []model.ToolSpec{{Name: "a"}}
		_, err := c.Complete(t.Context(), req)
		noKey(t, err)
	})
	t.Run("connection refused", func(t *testing.T) {
		_, err := s.deadClient(t).Complete(t.Context(), userReq("hi"))
		noKey(t, err)
	})
	t.Run("echoed in a 401", func(t *testing.T) {
		// The scrubber is what keeps the key out: the unscrubbed message
		// would contain it.
		_, c := s.setup(t, Reply{Status: 401, Message: "bad key " + Key})
		_, err := c.Complete(t.Context(), userReq("hi"))
		noKey(t, err)
		if !strings.Contains(err.Error(), "bad key [REDACTED]") {
			t.Fatalf("err = %v, want the scrubbed server message", err)
		}
	})
}
