package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/anthropic"
	"github.com/gorath/rath/flow/model/modeltest"
)

// errorCases echo the key back where they can, so the leak test can fail.
var errorCases = []struct {
	name       string
	reply      modeltest.Reply
	stream     bool
	kind       model.ErrorKind
	status     int
	retryAfter time.Duration
}{
	{"429 seconds", modeltest.Reply{Status: 429, RetryAfter: "2", Message: "slow down " + testKey}, false, model.KindRateLimit, 429, 2 * time.Second},
	{"429 stream", modeltest.Reply{Status: 429, RetryAfter: "1"}, true, model.KindRateLimit, 429, time.Second},
	{"529 overloaded", modeltest.Reply{Status: 529, Message: "Overloaded"}, false, model.KindServer, 529, 0},
	{"529 with Retry-After", modeltest.Reply{Status: 529, RetryAfter: "4"}, true, model.KindServer, 529, 4 * time.Second},
	{"500", modeltest.Reply{Status: 500, Message: "boom " + testKey}, false, model.KindServer, 500, 0},
	{"502 html", modeltest.Reply{Status: 502, Raw: "<html>bad gateway " + testKey + "</html>"}, false, model.KindServer, 502, 0},
	{"401", modeltest.Reply{Status: 401, Message: "invalid x-api-key " + testKey}, false, model.KindAuth, 401, 0},
	{"403", modeltest.Reply{Status: 403}, true, model.KindAuth, 403, 0},
	{"400", modeltest.Reply{Status: 400, Message: "prompt is too long"}, false, model.KindBadRequest, 400, 0},
	{"malformed JSON", modeltest.Reply{Raw: `{"id": "msg", "content": oops ` + testKey}, false, model.KindMalformed, 0, 0},
	{"malformed stream event", modeltest.Reply{Raw: "event: message_start\ndata: {not json " + testKey + "}\n\n"}, true, model.KindMalformed, 0, 0},
	{"JSON body cut", modeltest.Reply{Content: "a long answer", CutAfter: 20}, false, model.KindConnection, 0, 0},
	{"stream cut", modeltest.Reply{Content: "a long answer that is cut", CutAfter: 4}, true, model.KindConnection, 0, 0},
	{"stream ends without message_stop", modeltest.Reply{Raw: "event: message_start\ndata: " +
		`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n"},
		true, model.KindConnection, 0, 0},
	{"overloaded event in stream", modeltest.Reply{Raw: "event: error\ndata: " +
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded ` + testKey + `"}}` + "\n\n"}, true, model.KindServer, 0, 0},
	{"rate limit event in stream", modeltest.Reply{Raw: "event: error\ndata: " +
		`{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}` + "\n\n"}, true, model.KindRateLimit, 0, 0},
}

func call(t *testing.T, c *anthropic.Client, stream bool) error {
	t.Helper()
	var err error
	if stream {
		_, err = c.Stream(t.Context(), userReq("hi"), func(model.Delta) {})
	} else {
		_, err = c.Complete(t.Context(), userReq("hi"))
	}
	return err
}

func TestClient_ErrorKinds(t *testing.T) {
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewAnthropic(t)
			srv.Push(tt.reply)
			err := call(t, MustClient(t, srv), tt.stream)
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v (%T), want *model.Error", err, err)
			}
			if me.Kind != tt.kind || me.StatusCode != tt.status || me.RetryAfter != tt.retryAfter || me.Provider != "anthropic" {
				t.Fatalf("got kind %q status %d retry-after %v provider %q, want %q %d %v anthropic (%v)",
					me.Kind, me.StatusCode, me.RetryAfter, me.Provider, tt.kind, tt.status, tt.retryAfter, err)
			}
			// One attempt: the SDK's own retries are off.
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("%d requests, want exactly one attempt", n)
			}
		})
	}
}

func TestClient_Cancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			srv := modeltest.NewAnthropic(t)
			srv.Push(modeltest.Reply{Content: "too late", Delay: time.Minute})
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(20*time.Millisecond, cancel)
			var err error
			if stream {
				_, err = MustClient(t, srv).Stream(ctx, userReq("hi"), nil)
			} else {
				_, err = MustClient(t, srv).Complete(ctx, userReq("hi"))
			}
			if model.KindOf(err) != model.KindCanceled || !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want canceled matching context.Canceled", err)
			}
		})
	}
	t.Run("mid-stream", func(t *testing.T) {
		srv := modeltest.NewAnthropic(t)
		srv.Push(modeltest.Reply{Content: "one two three four"})
		ctx, cancel := context.WithCancel(t.Context())
		_, err := MustClient(t, srv).Stream(ctx, userReq("hi"), func(model.Delta) { cancel() })
		if model.KindOf(err) != model.KindCanceled {
			t.Fatalf("err = %v, want canceled", err)
		}
	})
}

func TestClient_Timeouts(t *testing.T) {
	t.Run("context deadline", func(t *testing.T) {
		srv := modeltest.NewAnthropic(t)
		srv.Push(modeltest.Reply{Content: "too late", Delay: time.Minute})
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		_, err := MustClient(t, srv).Complete(ctx, userReq("hi"))
		if model.KindOf(err) != model.KindTimeout {
			t.Fatalf("err = %v, want timeout", err)
		}
	})
	t.Run("http client timeout", func(t *testing.T) {
		srv := modeltest.NewAnthropic(t)
		srv.Push(modeltest.Reply{Content: "too late", Delay: time.Minute})
		c := anthropic.New(anthropic.Config{BaseURL: srv.URL(), APIKey: testKey, Model: "m", HTTPClient: &http.Client{Timeout: 20 * time.Millisecond}})
		if _, err := c.Complete(t.Context(), userReq("hi")); model.KindOf(err) != model.KindTimeout {
			t.Fatalf("err = %v, want timeout", err)
		}
	})
}

func TestClient_ConnectionRefused(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	c := anthropic.New(anthropic.Config{BaseURL: url, APIKey: testKey, Model: "m"})
	for _, stream := range []bool{false, true} {
		if err := call(t, c, stream); model.KindOf(err) != model.KindConnection {
			t.Fatalf("stream=%v: err = %v, want connection", stream, err)
		}
	}
}

func TestClient_KeyNeverLeaks(t *testing.T) {
	check := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		for e := err; e != nil; e = errors.Unwrap(e) {
			for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
				if strings.Contains(s, testKey) || strings.Contains(s, testKey[:20]) {
					t.Fatalf("key leaked in %T: %s", e, s)
				}
			}
		}
	}
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			srv := modeltest.NewAnthropic(t)
			srv.Push(tt.reply)
			check(t, call(t, MustClient(t, srv), tt.stream))
		})
	}
	t.Run("invalid request", func(t *testing.T) {
		srv := modeltest.NewAnthropic(t)
		req := userReq("x")
		req.ToolChoice = "tool-named-" + testKey
		req.Tools = []model.ToolSpec{{Name: "a"}}
		_, err := MustClient(t, srv).Complete(t.Context(), req)
		check(t, err)
	})
	t.Run("connection refused", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		check(t, call(t, anthropic.New(anthropic.Config{BaseURL: dead.URL, APIKey: testKey, Model: "m"}), false))
	})
	t.Run("echoed in a 401", func(t *testing.T) {
		srv := modeltest.NewAnthropic(t)
		srv.Push(modeltest.Reply{Status: 401, Message: "bad key " + testKey})
		err := call(t, MustClient(t, srv), false)
		check(t, err)
		if !strings.Contains(err.Error(), "bad key [REDACTED]") {
			t.Fatalf("err = %v, want the scrubbed server message", err)
		}
	})
}
