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
// test. The servers close when the test ends.
package modeltest
