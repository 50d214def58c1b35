// Package modeltest provides in-process fake model servers that speak the
// real wire formats, for testing the model clients and everything built on
// them without a network or a key.
//
// [NewOpenAI] serves POST /v1/chat/completions (JSON, or server-sent
// events when the request says "stream": true, with a final usage chunk
// when it asks for stream_options.include_usage, then "data: [DONE]").
// [NewAnthropic] serves POST /v1/messages (JSON, or the message_start,
// content_block_start/delta/stop, message_delta, message_stop event
// stream). Both answer from a queue of scripted [Reply] values, one per
// request, and record every request for assertions:
//
//	srv := modeltest.NewOpenAI(t)
//	srv.Push(modeltest.Reply{Status: 429, RetryAfter: "2"},
//		modeltest.Reply{Content: "hello", Usage: events.Usage{PromptTokens: 3, CompletionTokens: 1}})
//	c := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "k", Model: "m"})
//	// ... call c twice ...
//	reqs := srv.Requests() // decoded bodies and headers, in arrival order
//
// A request that arrives with an empty queue gets HTTP 500 and fails the
// test. The servers close when the test ends, or earlier with Close (then
// connections are refused).
//
// [Conformance] is the behaviour every model client must share, run as
// subtests against a vendor's fake: plain completion, the request's model
// overriding the configured one, parallel tool calls and a tool-result
// round trip, tool choice, invalid requests failing before anything is
// sent, sampling reaching the wire, error kinds from HTTP statuses and
// broken responses, cancellation, timeouts, refused connections, the API
// key never appearing in an error, and streaming (deltas that rebuild the
// answer, Stream agreeing with Complete). A [Vendor] says how to build the
// client and what its wire format looks like for each [Scenario]; what
// only one API has (OpenAI's reasoning models, Anthropic's message
// grouping) stays in the vendor's own tests:
//
//	func TestConformance(t *testing.T) {
//		modeltest.Conformance(t, modeltest.Vendor{
//			Name:      openai.Provider,
//			NewServer: modeltest.NewOpenAI,
//			NewClient: func(cfg modeltest.ClientConfig) model.Client {
//				return openai.New(openai.Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey,
//					Model: cfg.Model, HTTPClient: cfg.HTTPClient})
//			},
//			FinishStop: "stop", FinishToolCalls: "tool_calls",
//			Header: map[string]string{"Authorization": "Bearer " + modeltest.Key},
//			Wire: map[modeltest.Scenario]modeltest.Fields{
//				modeltest.WirePlain: {"stream": `false`, "tools": modeltest.Absent},
//				// ... one entry for every scenario
//			},
//		})
//	}
package modeltest
