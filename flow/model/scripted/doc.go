// Package scripted is a model client that answers from a cassette: a JSON
// file of invented responses, for tests, runnable examples and the
// offline demo. It never touches the network.
//
// A cassette looks like this:
//
//	{
//	  "scripted": true,
//	  "description": "The critic asks for one search, then approves.",
//	  "responses": [
//	    {"agent": "root.critic", "expect": "review this",
//	     "tool_calls": [{"name": "search", "arguments": {"q": "prior art"}}]},
//	    {"error": {"kind": "rate_limit", "status": 429, "retry_after_ms": 5}},
//	    {"agent": "root.critic", "content": "Approved.",
//	     "usage": {"prompt_tokens": 120, "completion_tokens": 4}}
//	  ]
//	}
//
// "scripted": true is required: it marks the file as made up by hand, not
// recorded from a real model. Each call takes the first unused entry whose
// "agent" pattern (a path.Match pattern on Request.Agent; empty matches
// every agent) matches, so agents running in parallel each consume their
// own entries in order. "expect", if set, is a substring that the last
// user or tool_result message of the request must contain; a mismatch is
// a KindScript error naming the entry, which makes prompt drift visible
// instead of silently answering the wrong question. An entry with "error"
// makes the call fail with that *model.Error kind, status and Retry-After.
// Tool-call arguments may be written as a JSON object or as a string;
// missing call ids are generated from the entry's position.
//
// When an entry gives no usage, the client estimates it (one token per
// four characters, rounded up) so budgets behave in tests. A cassette
// that has run out fails with a KindScript error.
package scripted
