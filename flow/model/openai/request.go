package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/httperr"
)

// Prefixes of the system messages that carry summary and memory chunks:
// chat completions has no roles for them, and the prefix tells the model
// what the text is.
const (
	SummaryPrefix = "Summary of the earlier conversation:\n"
	MemoryPrefix  = "Relevant memory:\n"
)

// emptySchema is sent for a tool declared without parameters: the API
// requires an object schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest maps a model.Request to go-openai's request. Errors are
// KindBadRequest: the request cannot be sent as it is.
func (c *Client) buildRequest(req model.Request) (goopenai.ChatCompletionRequest, error) {
	var out goopenai.ChatCompletionRequest
	out.Model = req.Model
	if out.Model == "" {
		out.Model = c.model
	}
	if out.Model == "" {
		return out, c.badRequest("no model: set Request.Model or Config.Model")
	}
	for i, m := range req.Messages {
		msg, err := toMessage(m)
		if err != nil {
			return out, c.badRequest(fmt.Sprintf("message %d: %v", i, err))
		}
		out.Messages = append(out.Messages, msg)
	}
	names := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		if t.Name == "" {
			return out, c.badRequest("a tool has no name")
		}
		params := t.Parameters
		if len(params) == 0 {
			params = emptySchema
		} else if !json.Valid(params) {
			return out, c.badRequest(fmt.Sprintf("tool %s: parameters are not valid JSON", t.Name))
		}
		names[t.Name] = true
		out.Tools = append(out.Tools, goopenai.Tool{Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	choice, err := toolChoice(req.ToolChoice, names)
	if err != nil {
		return out, c.badRequest(err.Error())
	}
	out.ToolChoice = choice
	setSampling(&out, req.Sampling)
	// go-openai refuses max_tokens for reasoning models (o1, o3, o4,
	// gpt-5...), which take max_completion_tokens instead; compatible
	// servers mostly know only max_tokens, so move it only when asked to.
	v := goopenai.NewReasoningValidator()
	if err := v.Validate(out); errors.Is(err, goopenai.ErrReasoningModelMaxTokensDeprecated) {
		//lint:ignore SA1019 max_tokens is what OpenAI-compatible servers accept; it moves only for reasoning models
		out.MaxCompletionTokens, out.MaxTokens = out.MaxTokens, 0
	}
	if err := v.Validate(out); err != nil {
		return out, c.badRequest(fmt.Sprintf("model %s: %v", out.Model, err))
	}
	return out, nil
}

func toMessage(m model.Message) (goopenai.ChatCompletionMessage, error) {
	switch m.Role {
	case events.RoleSystem:
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: m.Content}, nil
	case events.RoleUser:
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: m.Content}, nil
	case events.RoleAssistant:
		msg := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: m.Content}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, goopenai.ToolCall{ID: tc.ID, Type: goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		return msg, nil
	case events.RoleToolResult:
		if m.ToolCallID == "" {
			return goopenai.ChatCompletionMessage{}, errors.New("tool_result without tool_call_id")
		}
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, ToolCallID: m.ToolCallID,
			Name: m.Name, Content: m.Content}, nil
	case events.RoleSummary:
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: SummaryPrefix + m.Content}, nil
	case events.RoleMemory:
		return goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: MemoryPrefix + m.Content}, nil
	}
	return goopenai.ChatCompletionMessage{}, fmt.Errorf("unknown role %q", m.Role)
}

// toolChoice maps Request.ToolChoice; nil leaves the field out, which the
// API reads as auto (or as none when there are no tools).
func toolChoice(choice string, tools map[string]bool) (any, error) {
	switch choice {
	case model.ToolChoiceAuto:
		return nil, nil
	case model.ToolChoiceNone:
		if len(tools) == 0 {
			return nil, nil
		}
		return "none", nil
	case model.ToolChoiceRequired:
		if len(tools) == 0 {
			return nil, errors.New(`tool choice "required" with no tools`)
		}
		return "required", nil
	}
	if !tools[choice] {
		return nil, fmt.Errorf("tool choice %q names no tool of the request", choice)
	}
	return goopenai.ToolChoice{Type: goopenai.ToolTypeFunction, Function: goopenai.ToolFunction{Name: choice}}, nil
}

// setSampling copies the sampling fields. go-openai's float32 fields are
// omitempty, so an explicit 0 would vanish and the server would use its
// default (often 1); the smallest positive float32 is sent instead, which
// every server treats as 0 (sashabaranov/go-openai issue #9).
func setSampling(out *goopenai.ChatCompletionRequest, s model.Sampling) {
	if s.Temperature != nil {
		out.Temperature = nonZero(*s.Temperature)
	}
	if s.TopP != nil {
		out.TopP = nonZero(*s.TopP)
	}
	//lint:ignore SA1019 max_tokens is what OpenAI-compatible servers accept (see above)
	out.MaxTokens = s.MaxTokens
	out.Seed = s.Seed
	out.Stop = s.Stop
}

func nonZero(f float64) float32 {
	if f == 0 {
		return math.SmallestNonzeroFloat32
	}
	return float32(f)
}

func (c *Client) badRequest(msg string) error {
	return httperr.New(Provider, model.KindBadRequest, 0, 0, "invalid request: "+msg, c.key, nil)
}
