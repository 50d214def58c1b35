// Package httperr holds what the HTTP model clients (openai, anthropic)
// share when turning a failed call into a *model.Error: the kind for an
// HTTP status or a transport failure, Retry-After parsing, and scrubbing
// the API key out of any text that ends up in an error.
//
// Everything here is a pure function and safe for concurrent use.
package httperr
