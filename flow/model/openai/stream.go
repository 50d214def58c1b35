package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/httperr"
)

// readStream assembles the streamed chunks into a response.
func (c *Client) readStream(ctx context.Context, st *goopenai.ChatCompletionStream, capt *capture, onDelta func(model.Delta)) (model.Response, error) {
	if onDelta == nil {
		onDelta = func(model.Delta) {}
	}
	var a assembler
	for {
		// Buffered chunks would still be read after a cancel; stop at once.
		if err := ctx.Err(); err != nil {
			return model.Response{}, c.classify(ctx, err, capt)
		}
		chunk, err := st.Recv()
		if errors.Is(err, io.EOF) {
			if _, h := capt.get(); !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				// A server that ignored "stream": true and sent one JSON
				// body: go-openai reads no event from it.
				return model.Response{}, httperr.New(Provider, model.KindMalformed, 0, 0,
					fmt.Sprintf("asked for a stream, got Content-Type %q", h.Get("Content-Type")), c.key, nil)
			}
			if !capt.sawDone() {
				// A proxy or server that closes cleanly mid-answer looks
				// like the end of the stream; only [DONE] says it is.
				return model.Response{}, httperr.New(Provider, model.KindConnection, 0, 0,
					"stream ended before data: [DONE]", c.key, io.ErrUnexpectedEOF)
			}
			break
		}
		if err != nil {
			return model.Response{}, c.classify(ctx, err, capt)
		}
		a.add(chunk, onDelta)
	}
	return a.response(c)
}

// assembler accumulates stream chunks. Tool calls are keyed by the index
// the API gives each fragment, since fragments of parallel calls may
// interleave.
type assembler struct {
	content strings.Builder
	calls   map[int]*events.ToolCall
	finish  string
	model   string
	usage   *goopenai.Usage
}

func (a *assembler) add(ch goopenai.ChatCompletionStreamResponse, onDelta func(model.Delta)) {
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.Usage != nil {
		a.usage = ch.Usage
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue // only one choice is ever requested
		}
		if d := choice.Delta.Content; d != "" {
			a.content.WriteString(d)
			onDelta(model.Delta{Content: d})
		}
		for i, tc := range choice.Delta.ToolCalls {
			idx := i // servers that omit the index send whole calls in order
			if tc.Index != nil {
				idx = *tc.Index
			}
			if a.calls == nil {
				a.calls = map[int]*events.ToolCall{}
			}
			call := a.calls[idx]
			if call == nil {
				call = &events.ToolCall{}
				a.calls[idx] = call
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Function.Name != "" {
				call.Name = tc.Function.Name
			}
			call.Arguments += tc.Function.Arguments
			if tc.ID != "" || tc.Function.Name != "" || tc.Function.Arguments != "" {
				onDelta(model.Delta{ToolCallIndex: idx, ToolCallID: tc.ID, ToolName: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		}
		if choice.FinishReason != "" {
			a.finish = string(choice.FinishReason)
		}
	}
}

func (a *assembler) response(c *Client) (model.Response, error) {
	out := model.Response{Content: a.content.String(), FinishReason: a.finish, Model: a.model}
	if a.usage != nil {
		out.Usage = usage(*a.usage)
	} else {
		out.Usage = events.Usage{Calls: 1} // a server that ignores include_usage
	}
	idxs := make([]int, 0, len(a.calls))
	for idx := range a.calls {
		idxs = append(idxs, idx)
	}
	slices.Sort(idxs)
	for i, idx := range idxs {
		tc := a.calls[idx]
		call, err := c.toolCall(i, tc.ID, tc.Name, tc.Arguments)
		if err != nil {
			return model.Response{}, err
		}
		out.ToolCalls = append(out.ToolCalls, call)
	}
	return out, nil
}
