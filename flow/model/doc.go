// Package model owns the wire-neutral model interface of rath: a
// [Request] (messages as session chunks, tool specs, sampling), a
// [Response] (text, tool calls, usage), the [Client] interface every model
// client implements, the optional [Streamer] capability, and the typed
// [*Error] that retry logic branches on.
//
// Implementations live in subpackages: openai (any OpenAI-compatible
// chat-completions endpoint, through go-openai), anthropic (the messages
// API) and scripted (responses read from a cassette file, for tests,
// examples and the offline demo). Each offers a [Vendor] (its name, its
// environment variables' prefix, a constructor) for a [Registry], which
// the caller fills: package flow builds providers' clients through one
// and imports no vendor (the rath runtime fills it with the three). Recording calls in the event log, retries
// and budgets are the caller's job (package flow); clients do one attempt.
//
// This package imports events only.
package model
