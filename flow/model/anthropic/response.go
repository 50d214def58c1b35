package anthropic

import (
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/httperr"
)

// fromMessage maps the API's message: text blocks joined, tool_use
// blocks as calls in order; thinking blocks are not part of the answer.
func (c *Client) fromMessage(msg *sdk.Message) (model.Response, error) {
	var text strings.Builder
	out := model.Response{FinishReason: string(msg.StopReason), Model: string(msg.Model), Usage: usage(msg.Usage)}
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return model.Response{}, c.malformed(fmt.Sprintf("tool_use block %d has no id or name", i))
			}
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, events.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	out.Content = text.String()
	return out, nil
}

// usage counts cached prompt tokens as prompt tokens: input_tokens
// excludes them, but they are part of what the call read.
func usage(u sdk.Usage) events.Usage {
	prompt := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	return events.Usage{PromptTokens: prompt, CompletionTokens: u.OutputTokens, TotalTokens: prompt + u.OutputTokens, Calls: 1}
}

func (c *Client) malformed(msg string) error {
	return httperr.New(Provider, model.KindMalformed, 0, 0, msg, c.key, nil)
}
