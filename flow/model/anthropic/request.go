package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/internal/httperr"
)

// Prefixes of the system text that carries summary and memory chunks.
const (
	SummaryPrefix = "Summary of the earlier conversation:\n"
	MemoryPrefix  = "Relevant memory:\n"
)

// buildParams maps a model.Request to the SDK's parameters. Errors are
// KindBadRequest: the request cannot be sent as it is.
func (c *Client) buildParams(req model.Request) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	p.Model = sdk.Model(req.Model)
	if p.Model == "" {
		p.Model = sdk.Model(c.model)
	}
	if p.Model == "" {
		return p, c.badRequest("no model: set Request.Model or Config.Model")
	}
	var err error
	if p.System, p.Messages, err = messages(req.Messages); err != nil {
		return p, c.badRequest(err.Error())
	}
	names := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return p, c.badRequest(err.Error())
		}
		names[t.Name] = true
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tool})
	}
	if p.ToolChoice, err = toolChoice(req.ToolChoice, names); err != nil {
		return p, c.badRequest(err.Error())
	}
	s := req.Sampling
	p.MaxTokens = int64(s.MaxTokens)
	if p.MaxTokens <= 0 {
		p.MaxTokens = c.maxTokens
	}
	if s.Temperature != nil {
		p.Temperature = sdk.Float(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = sdk.Float(*s.TopP)
	}
	p.StopSequences = s.Stop
	return p, nil
}

// messages splits the chunks into the system text and the conversation.
// Empty text is dropped: the API rejects empty text blocks.
func messages(chunks []model.Message) ([]sdk.TextBlockParam, []sdk.MessageParam, error) {
	var (
		system []sdk.TextBlockParam
		msgs   []sdk.MessageParam
	)
	add := func(role sdk.MessageParamRole, blocks ...sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
			return
		}
		msgs = append(msgs, sdk.MessageParam{Role: role, Content: blocks})
	}
	for i, m := range chunks {
		switch m.Role {
		case events.RoleSystem, events.RoleSummary, events.RoleMemory:
			if m.Content == "" {
				continue
			}
			text := m.Content
			switch m.Role {
			case events.RoleSummary:
				text = SummaryPrefix + text
			case events.RoleMemory:
				text = MemoryPrefix + text
			}
			system = append(system, sdk.TextBlockParam{Text: text})
		case events.RoleUser:
			if m.Content != "" {
				add(sdk.MessageParamRoleUser, sdk.NewTextBlock(m.Content))
			}
		case events.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
			}
			add(sdk.MessageParamRoleAssistant, blocks...)
		case events.RoleToolResult:
			if m.ToolCallID == "" {
				return nil, nil, fmt.Errorf("message %d: tool_result without tool_call_id", i)
			}
			res := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" {
				res.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Content}}}
			}
			if m.Meta["is_error"] == "true" || m.Meta["error_kind"] != "" {
				res.IsError = sdk.Bool(true)
			}
			add(sdk.MessageParamRoleUser, sdk.ContentBlockParamUnion{OfToolResult: &res})
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return system, msgs, nil
}

// toolInput is a call's arguments as the input object the API requires.
// Arguments that are not a JSON object (a model's broken call, already
// answered by an error tool_result) are sent as {}: the call must still
// appear for its result to pair with it.
func toolInput(args string) json.RawMessage {
	b := bytes.TrimSpace([]byte(args))
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return json.RawMessage("{}")
	}
	return json.RawMessage(b)
}

// toolParam maps a tool; its JSON Schema is split into the fields the SDK
// names (properties, required) and the rest, which is passed through.
func toolParam(t model.ToolSpec) (*sdk.ToolParam, error) {
	if t.Name == "" {
		return nil, errors.New("a tool has no name")
	}
	tp := &sdk.ToolParam{Name: t.Name}
	if t.Description != "" {
		tp.Description = sdk.String(t.Description)
	}
	if len(t.Parameters) == 0 {
		// The API requires input_schema, and the SDK leaves a zero one
		// out: an empty object schema, as the openai client sends.
		tp.InputSchema.Properties = map[string]any{}
		return tp, nil
	}
	var schema map[string]any
	if err := json.Unmarshal(t.Parameters, &schema); err != nil {
		return nil, fmt.Errorf("tool %s: parameters are not a JSON object: %v", t.Name, err)
	}
	if typ, ok := schema["type"]; ok && typ != "object" {
		return nil, fmt.Errorf("tool %s: parameters have type %v, want object", t.Name, typ)
	}
	tp.InputSchema.Properties = schema["properties"]
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			name, ok := r.(string)
			if !ok {
				return nil, fmt.Errorf("tool %s: required holds %v, want names", t.Name, r)
			}
			tp.InputSchema.Required = append(tp.InputSchema.Required, name)
		}
	}
	for k, v := range schema {
		switch k {
		case "type", "properties", "required":
		default:
			if tp.InputSchema.ExtraFields == nil {
				tp.InputSchema.ExtraFields = map[string]any{}
			}
			tp.InputSchema.ExtraFields[k] = v
		}
	}
	return tp, nil
}

// toolChoice maps Request.ToolChoice; the zero union leaves the field out
// (auto).
func toolChoice(choice string, tools map[string]bool) (sdk.ToolChoiceUnionParam, error) {
	var tc sdk.ToolChoiceUnionParam
	switch choice {
	case model.ToolChoiceAuto:
	case model.ToolChoiceNone:
		if len(tools) > 0 {
			tc.OfNone = &sdk.ToolChoiceNoneParam{}
		}
	case model.ToolChoiceRequired:
		if len(tools) == 0 {
			return tc, errors.New(`tool choice "required" with no tools`)
		}
		tc.OfAny = &sdk.ToolChoiceAnyParam{}
	default:
		if !tools[choice] {
			return tc, fmt.Errorf("tool choice %q names no tool of the request", choice)
		}
		tc = sdk.ToolChoiceParamOfTool(choice)
	}
	return tc, nil
}

func (c *Client) badRequest(msg string) error {
	return httperr.New(Provider, model.KindBadRequest, 0, 0, "invalid request: "+msg, c.key, nil)
}
