package openai_test

import (
	"testing"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/modeltest"
	"github.com/gorath/rath/flow/model/openai"
)

// vendor describes this client to the shared suite; the wire JSON below
// is chat completions' shape for each of the suite's scenarios.
var vendor = modeltest.Vendor{
	Name:      openai.Provider,
	NewServer: modeltest.NewOpenAI,
	NewClient: func(cfg modeltest.ClientConfig) model.Client {
		return openai.New(openai.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model, HTTPClient: cfg.HTTPClient})
	},
	FinishStop:      "stop",
	FinishToolCalls: "tool_calls",
	Header:          map[string]string{"Authorization": "Bearer " + modeltest.Key},
	Wire: map[modeltest.Scenario]modeltest.Fields{
		modeltest.WirePlain: {
			"model": `"conformance-model"`, "stream": `false`, "messages": `[{"role":"user","content":"hi"}]`,
			"tools": modeltest.Absent, "tool_choice": modeltest.Absent, "stream_options": modeltest.Absent,
			"temperature": modeltest.Absent, "top_p": modeltest.Absent, "max_tokens": modeltest.Absent,
			"max_completion_tokens": modeltest.Absent, "seed": modeltest.Absent, "stop": modeltest.Absent,
		},
		// Summary and memory become system messages; each tool result is
		// its own "tool" message (an error result is plain text: the API
		// has no error flag).
		modeltest.WireRoundTrip: {
			"messages": `[
				{"role":"system","content":"You are terse."},
				{"role":"system","content":"Relevant memory:\nThe user likes cats."},
				{"role":"system","content":"Summary of the earlier conversation:\nWe discussed the weather."},
				{"role":"user","content":"Count cats and dogs."},
				{"role":"assistant","content":"Checking both.","tool_calls":[
					{"id":"call_a","type":"function","function":{"name":"search","arguments":"{\"q\":\"cats\"}"}},
					{"id":"call_b","type":"function","function":{"name":"search","arguments":"{\"q\":\"dogs\"}"}}]},
				{"role":"tool","tool_call_id":"call_a","name":"search","content":"3 cats"},
				{"role":"tool","tool_call_id":"call_b","name":"search","content":"timeout"}]`,
			"tools": `[{"type":"function","function":{"name":"search","description":"Search the zoo.",
				"parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}}}]`,
		},
		modeltest.WireToolChoiceAuto:        {"tools": lookupTools, "tool_choice": modeltest.Absent},
		modeltest.WireToolChoiceRequired:    {"tools": lookupTools, "tool_choice": `"required"`},
		modeltest.WireToolChoiceNone:        {"tools": lookupTools, "tool_choice": `"none"`},
		modeltest.WireToolChoiceNoneNoTools: {"tool_choice": modeltest.Absent, "tools": modeltest.Absent},
		modeltest.WireToolChoiceForced:      {"tools": lookupTools, "tool_choice": `{"type":"function","function":{"name":"lookup"}}`},
		modeltest.WireSampling: {"temperature": `0.25`, "top_p": `0.5`, "max_tokens": `64`, "seed": `7`, "stop": `["END"]`,
			"max_completion_tokens": modeltest.Absent},
		// go-openai drops a zero float32, so the smallest positive one
		// stands in for 0 (see setSampling).
		modeltest.WireZeroTemperature: {"temperature": `1e-45`},
		modeltest.WireStream: {"model": `"conformance-model"`, "stream": `true`, "stream_options": `{"include_usage":true}`,
			"messages": `[{"role":"user","content":"hi"}]`},
	},
	Errors: []modeltest.ErrorCase{
		{Name: "malformed stream chunk", Reply: modeltest.Reply{Raw: "data: {not json " + modeltest.Key + "}\n\n"}, Stream: true, Kind: model.KindMalformed},
		{Name: "no choices", Reply: modeltest.Reply{Raw: `{"id":"x","object":"chat.completion","choices":[]}`}, Kind: model.KindMalformed},
		{Name: "stream ends without DONE", Reply: modeltest.Reply{Raw: `data: {"id":"1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"half"}}]}` + "\n\n"},
			Stream: true, Kind: model.KindConnection},
		{Name: "error event in stream", Reply: modeltest.Reply{Raw: `data: {"error":{"message":"overloaded ` + modeltest.Key + `","type":"server_error","code":null}}` + "\n\n"},
			Stream: true, Kind: model.KindServer},
		{Name: "rate limit event in stream", Reply: modeltest.Reply{Raw: `data: {"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}` + "\n\n"},
			Stream: true, Kind: model.KindRateLimit},
	},
}

// lookupTools is the "lookup" tool of the tool choice scenarios, which has
// no parameters: an empty object schema is sent, since the API requires one.
const lookupTools = `[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{}}}}]`

func TestConformance(t *testing.T) { modeltest.Conformance(t, vendor) }
