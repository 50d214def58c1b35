package openai

import (
	"fmt"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/httperr"
)

func (c *Client) fromResponse(resp goopenai.ChatCompletionResponse) (model.Response, error) {
	if len(resp.Choices) == 0 {
		return model.Response{}, c.malformed("the response has no choices")
	}
	ch := resp.Choices[0]
	out := model.Response{
		Content:      ch.Message.Content,
		FinishReason: string(ch.FinishReason),
		Model:        resp.Model,
		Usage:        usage(resp.Usage),
	}
	for i, tc := range ch.Message.ToolCalls {
		call, err := c.toolCall(i, tc.ID, tc.Function.Name, tc.Function.Arguments)
		if err != nil {
			return model.Response{}, err
		}
		out.ToolCalls = append(out.ToolCalls, call)
	}
	return out, nil
}

// toolCall checks one call. Some compatible servers send no call id; the
// position stands in, since the id only pairs a call with its result
// within the next request.
func (c *Client) toolCall(i int, id, name, args string) (events.ToolCall, error) {
	if name == "" {
		return events.ToolCall{}, c.malformed(fmt.Sprintf("tool call %d has no function name", i))
	}
	if id == "" {
		id = fmt.Sprintf("call_%d", i)
	}
	return events.ToolCall{ID: id, Name: name, Arguments: args}, nil
}

// usage converts the API's counts; one response is one call.
func usage(u goopenai.Usage) events.Usage {
	total := int64(u.TotalTokens)
	if total == 0 {
		total = int64(u.PromptTokens + u.CompletionTokens)
	}
	return events.Usage{PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens), TotalTokens: total, Calls: 1}
}

func (c *Client) malformed(msg string) error {
	return httperr.New(Provider, model.KindMalformed, 0, 0, msg, c.key, nil)
}
