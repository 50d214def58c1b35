package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/modeltest"
	"github.com/gorath/rath/flow/model/openai"
)

func TestClient_StreamWithoutUsageChunk(t *testing.T) {
	// A server that ignores include_usage still gives a complete answer.
	srv := modeltest.NewOpenAI(t)
	chunk := func(delta, finish string) string {
		b, _ := json.Marshal(map[string]any{"id": "1", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": json.RawMessage(delta), "finish_reason": finish}}})
		return "data: " + string(b) + "\n\n"
	}
	srv.Push(modeltest.Reply{Raw: chunk(`{"content":"hi"}`, "") + chunk(`{}`, "stop") + "data: [DONE]"})
	got, err := MustClient(t, srv).Stream(t.Context(), userReq("hi"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "hi" || got.FinishReason != "stop" || got.Usage != (events.Usage{Calls: 1}) {
		t.Fatalf("got %+v", got)
	}
}

func TestClient_StreamRequestAnsweredWithJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`)
	}))
	defer srv.Close()
	c := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m"})
	_, err := c.Stream(t.Context(), userReq("hi"), nil)
	if model.KindOf(err) != model.KindMalformed || !strings.Contains(err.Error(), "application/json") {
		t.Fatalf("err = %v, want malformed naming the content type", err)
	}
}
