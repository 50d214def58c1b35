package anthropic

import (
	"context"
	"io"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/httperr"
)

// stream runs one streamed call, accumulating with the SDK's accumulator
// and passing text and tool-input fragments on as they arrive.
func (c *Client) stream(ctx context.Context, params sdk.MessageNewParams, onDelta func(model.Delta)) (model.Response, error) {
	if onDelta == nil {
		onDelta = func(model.Delta) {}
	}
	st := c.api.Messages.NewStreaming(ctx, params)
	defer st.Close()
	var (
		acc     sdk.Message
		calls   = map[int64]int{} // content block index -> tool call index
		stopped bool
	)
	for st.Next() {
		if err := ctx.Err(); err != nil {
			return model.Response{}, c.classify(ctx, err)
		}
		ev := st.Current()
		if err := acc.Accumulate(ev); err != nil {
			return model.Response{}, c.malformed("stream: " + err.Error())
		}
		switch ev.Type {
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				i := len(calls)
				calls[ev.Index] = i
				onDelta(model.Delta{ToolCallIndex: i, ToolCallID: ev.ContentBlock.ID, ToolName: ev.ContentBlock.Name})
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					onDelta(model.Delta{Content: ev.Delta.Text})
				}
			case "input_json_delta":
				if i, ok := calls[ev.Index]; ok && ev.Delta.PartialJSON != "" {
					onDelta(model.Delta{ToolCallIndex: i, Arguments: ev.Delta.PartialJSON})
				}
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := st.Err(); err != nil {
		return model.Response{}, c.classify(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return model.Response{}, c.classify(ctx, err)
	}
	if !stopped {
		// A connection closed cleanly mid-answer ends the event loop like
		// a finished stream; only message_stop says it is complete.
		return model.Response{}, httperr.New(Provider, model.KindConnection, 0, 0,
			"stream ended before message_stop", c.key, io.ErrUnexpectedEOF)
	}
	return c.fromMessage(&acc)
}
