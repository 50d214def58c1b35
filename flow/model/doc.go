// Package model owns the wire-neutral model interface of rath: a
// [Request] (messages as session chunks, tool specs, sampling), a
// [Response] (text, tool calls, usage), the [Client] interface every model
// client implements, the optional [Streamer] capability, and the typed
// [*Error] that retry logic branches on.
//
// Implementations live in subpackages: openai (any OpenAI-compatible
// chat-completions endpoint, through go-openai), anthropic (the messages
// API) and scripted (responses read from a cassette file, for tests,
// examples and the offline demo). Recording calls in the event log, retries
// and budgets are the caller's job (package flow); clients do one attempt.
//
// This package imports events only.
package model
