// Package anthropic is the model client for Anthropic's messages API,
// built on the official SDK (github.com/anthropics/anthropic-sdk-go).
//
// A [Client] makes exactly one HTTP attempt per call: the SDK's own
// retries are turned off (it retries twice by default) and it is kept
// from reading credentials or a base URL from the environment, since
// package flow resolves those. Failures come back as *model.Error (429
// rate_limit with Retry-After, 5xx and 529 overloaded server, 401/403
// auth, other 4xx bad_request, timeout, connection, malformed, canceled).
// The API key never appears in an error: SDK errors hold the outgoing
// request, so they are re-described and scrubbed, not wrapped.
//
// Session chunks map to the API's shape: system, summary and memory
// chunks become the system parameter (summary and memory prefixed like
// the openai client's); user text and assistant text with tool_use blocks
// become messages, consecutive chunks of one role sharing a message; each
// run of tool_result chunks becomes one user message of tool_result
// blocks, flagged is_error when the chunk's Meta has "is_error": "true"
// or an "error_kind". Sampling.Seed has no equivalent and is ignored.
package anthropic
