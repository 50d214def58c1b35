// Package openai is the model client for OpenAI's chat-completions API and
// the many servers that copy it (vLLM, llama.cpp, Ollama, LiteLLM, ...),
// built on github.com/sashabaranov/go-openai.
//
// A [Client] makes exactly one HTTP attempt per call: it does not retry,
// log or record anything; package flow does. Failures come back as
// *model.Error with a kind the retry logic branches on (429 rate_limit
// with the server's Retry-After, 5xx server, 401/403 auth, other 4xx
// bad_request, timeout, connection, malformed, canceled). The API key
// never appears in an error or a response: SDK errors are not wrapped
// (they can carry the outgoing request) but re-described and scrubbed.
//
// Session chunks map to chat messages: system, user and assistant (with
// tool_calls) as themselves, tool_result as role "tool" with tool_call_id
// and name, summary and memory as system messages prefixed with
// [SummaryPrefix] and [MemoryPrefix].
//
// Streaming ([Client.Stream]) asks for the usage chunk and requires the
// final "data: [DONE]": a stream that ends without it is a connection
// error, never a silently truncated answer.
package openai
