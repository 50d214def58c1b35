package anthropic_test

import (
	"testing"
	"time"

	"github.com/gorath/rath/flow/model"
	"github.com/gorath/rath/flow/model/anthropic"
	"github.com/gorath/rath/flow/model/modeltest"
)

// vendor describes this client to the shared suite; the wire JSON below
// is the messages API's shape for each of the suite's scenarios.
var vendor = modeltest.Vendor{
	Name:      anthropic.Provider,
	NewServer: modeltest.NewAnthropic,
	NewClient: func(cfg modeltest.ClientConfig) model.Client {
		return anthropic.New(anthropic.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model, HTTPClient: cfg.HTTPClient})
	},
	FinishStop:      "end_turn",
	FinishToolCalls: "tool_use",
	Header:          map[string]string{"X-Api-Key": modeltest.Key, "Anthropic-Version": "2023-06-01", "Authorization": ""},
	Wire: map[modeltest.Scenario]modeltest.Fields{
		// max_tokens is required by the API: the default is sent.
		modeltest.WirePlain: {
			"model": `"conformance-model"`, "max_tokens": `4096`, "messages": `[{"role":"user","content":[{"type":"text","text":"hi"}]}]`,
			"system": modeltest.Absent, "tools": modeltest.Absent, "tool_choice": modeltest.Absent, "stream": modeltest.Absent,
			"temperature": modeltest.Absent, "top_p": modeltest.Absent, "stop_sequences": modeltest.Absent,
		},
		// System, summary and memory make the system parameter; the
		// assistant's calls are tool_use blocks and their results one user
		// message of tool_result blocks, the failed one flagged is_error.
		modeltest.WireRoundTrip: {
			"system": `[
				{"type":"text","text":"You are terse."},
				{"type":"text","text":"Relevant memory:\nThe user likes cats."},
				{"type":"text","text":"Summary of the earlier conversation:\nWe discussed the weather."}]`,
			"messages": `[
				{"role":"user","content":[{"type":"text","text":"Count cats and dogs."}]},
				{"role":"assistant","content":[
					{"type":"text","text":"Checking both."},
					{"type":"tool_use","id":"call_a","name":"search","input":{"q":"cats"}},
					{"type":"tool_use","id":"call_b","name":"search","input":{"q":"dogs"}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"call_a","content":[{"type":"text","text":"3 cats"}]},
					{"type":"tool_result","tool_use_id":"call_b","is_error":true,"content":[{"type":"text","text":"timeout"}]}]}]`,
			"tools": `[{"name":"search","description":"Search the zoo.",
				"input_schema":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}}]`,
		},
		modeltest.WireToolChoiceAuto:        {"tools": lookupTools, "tool_choice": modeltest.Absent},
		modeltest.WireToolChoiceRequired:    {"tools": lookupTools, "tool_choice": `{"type":"any"}`},
		modeltest.WireToolChoiceNone:        {"tools": lookupTools, "tool_choice": `{"type":"none"}`},
		modeltest.WireToolChoiceNoneNoTools: {"tool_choice": modeltest.Absent, "tools": modeltest.Absent},
		modeltest.WireToolChoiceForced:      {"tools": lookupTools, "tool_choice": `{"type":"tool","name":"lookup"}`},
		// The API has no seed: it is dropped.
		modeltest.WireSampling: {"temperature": `0.25`, "top_p": `0.5`, "max_tokens": `64`, "stop_sequences": `["END"]`,
			"seed": modeltest.Absent, "stop": modeltest.Absent},
		modeltest.WireZeroTemperature: {"temperature": `0`},
		modeltest.WireStream: {"model": `"conformance-model"`, "stream": `true`, "max_tokens": `4096`,
			"messages": `[{"role":"user","content":[{"type":"text","text":"hi"}]}]`},
	},
	Errors: []modeltest.ErrorCase{
		{Name: "529 overloaded", Reply: modeltest.Reply{Status: 529, Message: "Overloaded"}, Kind: model.KindServer, Status: 529},
		{Name: "529 with Retry-After stream", Reply: modeltest.Reply{Status: 529, RetryAfter: "4"}, Stream: true, Kind: model.KindServer, Status: 529, RetryAfter: 4 * time.Second},
		{Name: "malformed stream event", Reply: modeltest.Reply{Raw: "event: message_start\ndata: {not json " + modeltest.Key + "}\n\n"}, Stream: true, Kind: model.KindMalformed},
		{Name: "stream ends without message_stop", Reply: modeltest.Reply{Raw: "event: message_start\ndata: " +
			`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}` + "\n\n"},
			Stream: true, Kind: model.KindConnection},
		{Name: "overloaded event in stream", Reply: modeltest.Reply{Raw: "event: error\ndata: " +
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded ` + modeltest.Key + `"}}` + "\n\n"}, Stream: true, Kind: model.KindServer},
		{Name: "rate limit event in stream", Reply: modeltest.Reply{Raw: "event: error\ndata: " +
			`{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}` + "\n\n"}, Stream: true, Kind: model.KindRateLimit},
	},
}

// lookupTools is the "lookup" tool of the tool choice scenarios, which has
// no parameters: an empty object schema is sent, since the API requires one.
const lookupTools = `[{"name":"lookup","input_schema":{"type":"object","properties":{}}}]`

func TestConformance(t *testing.T) { modeltest.Conformance(t, vendor) }
