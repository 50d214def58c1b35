package openai_test

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
	"github.com/gorath/rath/flow/model/modeltest"
	"github.com/gorath/rath/flow/model/openai"
)

// errorCases are failures the fake server can produce; every one also
// echoes the key in what it sends back where it can, as some real
// servers do ("Incorrect API key provided: sk-..."), so the leak test
// below can fail.
var errorCases = []struct {
	name       string
	reply      modeltest.Reply
	stream     bool
	kind       model.ErrorKind
	status     int
	retryAfter time.Duration
}{
	{"429 seconds", modeltest.Reply{Status: 429, RetryAfter: "2", Message: "Rate limit reached for " + testKey}, false, model.KindRateLimit, 429, 2 * time.Second},
	{"429 stream", modeltest.Reply{Status: 429, RetryAfter: "1.5"}, true, model.KindRateLimit, 429, 1500 * time.Millisecond},
	{"429 no header", modeltest.Reply{Status: 429}, false, model.KindRateLimit, 429, 0},
	{"500", modeltest.Reply{Status: 500, Message: "boom " + testKey}, false, model.KindServer, 500, 0},
	{"503 with Retry-After", modeltest.Reply{Status: 503, RetryAfter: "3"}, true, model.KindServer, 503, 3 * time.Second},
	{"502 html", modeltest.Reply{Status: 502, Raw: "<html>bad gateway " + testKey + "</html>"}, false, model.KindServer, 502, 0},
	{"401", modeltest.Reply{Status: 401, Message: "Incorrect API key provided: " + testKey}, false, model.KindAuth, 401, 0},
	{"403", modeltest.Reply{Status: 403, Message: "forbidden"}, true, model.KindAuth, 403, 0},
	{"400", modeltest.Reply{Status: 400, Message: "context too long"}, false, model.KindBadRequest, 400, 0},
	{"404", modeltest.Reply{Status: 404, Message: "no such model"}, false, model.KindBadRequest, 404, 0},
	{"malformed JSON", modeltest.Reply{Raw: `{"id": "x", "choices": oops ` + testKey}, false, model.KindMalformed, 0, 0},
	{"malformed stream chunk", modeltest.Reply{Raw: "data: {not json " + testKey + "}\n\n"}, true, model.KindMalformed, 0, 0},
	{"no choices", modeltest.Reply{Raw: `{"id":"x","object":"chat.completion","choices":[]}`}, false, model.KindMalformed, 0, 0},
	{"JSON body cut", modeltest.Reply{Content: "a long answer", CutAfter: 20}, false, model.KindConnection, 0, 0},
	{"stream cut", modeltest.Reply{Content: "a long answer that is cut", CutAfter: 3}, true, model.KindConnection, 0, 0},
	{"stream ends without DONE", modeltest.Reply{Raw: `data: {"id":"1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"half"}}]}` + "\n\n"}, true, model.KindConnection, 0, 0},
	{"error event in stream", modeltest.Reply{Raw: `data: {"error":{"message":"overloaded ` + testKey + `","type":"server_error","code":null}}` + "\n\n"}, true, model.KindServer, 0, 0},
	{"rate limit event in stream", modeltest.Reply{Raw: `data: {"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}` + "\n\n"}, true, model.KindRateLimit, 0, 0},
}

func call(t *testing.T, c *openai.Client, stream bool) error {
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
			srv := modeltest.NewOpenAI(t)
			srv.Push(tt.reply)
			err := call(t, MustClient(t, srv), tt.stream)
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v (%T), want *model.Error", err, err)
			}
			if me.Kind != tt.kind || me.StatusCode != tt.status || me.RetryAfter != tt.retryAfter || me.Provider != "openai" {
				t.Fatalf("got kind %q status %d retry-after %v provider %q, want %q %d %v openai (%v)",
					me.Kind, me.StatusCode, me.RetryAfter, me.Provider, tt.kind, tt.status, tt.retryAfter, err)
			}
			if !errors.Is(err, model.ErrModel) {
				t.Fatal("errors.Is(err, model.ErrModel) = false")
			}
			if len(srv.Requests()) != 1 {
				t.Fatalf("%d requests, want exactly one attempt", len(srv.Requests()))
			}
		})
	}
}

func TestClient_RetryAfterHTTPDate(t *testing.T) {
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{Status: 429, RetryAfter: time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)})
	err := call(t, MustClient(t, srv), false)
	var me *model.Error
	if !errors.As(err, &me) || me.Kind != model.KindRateLimit {
		t.Fatalf("err = %v", err)
	}
	// The date has one-second resolution and the clock moved on a little.
	if me.RetryAfter < 80*time.Second || me.RetryAfter > 91*time.Second {
		t.Fatalf("RetryAfter = %v, want about 90s", me.RetryAfter)
	}
}

func TestClient_Cancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			srv := modeltest.NewOpenAI(t)
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
	t.Run("before the call", func(t *testing.T) {
		srv := modeltest.NewOpenAI(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := MustClient(t, srv).Complete(ctx, userReq("hi"))
		if model.KindOf(err) != model.KindCanceled {
			t.Fatalf("err = %v, want canceled", err)
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		srv := modeltest.NewOpenAI(t)
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
		srv := modeltest.NewOpenAI(t)
		srv.Push(modeltest.Reply{Content: "too late", Delay: time.Minute})
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		_, err := MustClient(t, srv).Complete(ctx, userReq("hi"))
		if model.KindOf(err) != model.KindTimeout {
			t.Fatalf("err = %v, want timeout", err)
		}
	})
	t.Run("http client timeout", func(t *testing.T) {
		srv := modeltest.NewOpenAI(t)
		srv.Push(modeltest.Reply{Content: "too late", Delay: time.Minute})
		c := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: testKey, Model: "m", HTTPClient: &http.Client{Timeout: 20 * time.Millisecond}})
		_, err := c.Complete(t.Context(), userReq("hi"))
		var me *model.Error
		if !errors.As(err, &me) || me.Kind != model.KindTimeout || !me.Retryable() {
			t.Fatalf("err = %v, want retryable timeout", err)
		}
	})
}

func TestClient_ConnectionRefused(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL + "/v1"
	dead.Close()
	c := openai.New(openai.Config{BaseURL: url, APIKey: testKey, Model: "m"})
	for _, stream := range []bool{false, true} {
		if err := call(t, c, stream); model.KindOf(err) != model.KindConnection {
			t.Fatalf("stream=%v: err = %v, want connection", stream, err)
		}
	}
}

// TestClient_KeyNeverLeaks runs every failure with a recognizable key,
// where the server echoes it back, and checks that no error text in the
// chain, nor its Go representation, contains it.
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
			srv := modeltest.NewOpenAI(t)
			srv.Push(tt.reply)
			check(t, call(t, MustClient(t, srv), tt.stream))
		})
	}
	t.Run("invalid request", func(t *testing.T) {
		srv := modeltest.NewOpenAI(t)
		req := userReq("x")
		req.ToolChoice = "tool-named-" + testKey
		req.Tools = []model.ToolSpec{{Name: "a"}}
		_, err := MustClient(t, srv).Complete(t.Context(), req)
		check(t, err)
	})
	t.Run("connection refused", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		c := openai.New(openai.Config{BaseURL: dead.URL + "/v1", APIKey: testKey, Model: "m"})
		check(t, call(t, c, false))
	})
	t.Run("echoed in a 401", func(t *testing.T) {
		// The scrubber is what keeps the key out: the unscrubbed message
		// would contain it.
		srv := modeltest.NewOpenAI(t)
		srv.Push(modeltest.Reply{Status: 401, Message: "bad key " + testKey})
		err := call(t, MustClient(t, srv), false)
		check(t, err)
		if !strings.Contains(err.Error(), "bad key [REDACTED]") {
			t.Fatalf("err = %v, want the scrubbed server message", err)
		}
	})
}
