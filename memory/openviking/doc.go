// Package openviking is a client for the HTTP API of an OpenViking server
// (a context database by volcengine: viking:// URIs, sessions committed
// into memories, L0/L1/L2 context tiers), written from its published API
// documentation. It does not use or copy OpenViking's own SDK (AGPL).
//
// Every response is an envelope: {"status": "ok", "result": …} or
// {"status": "error", "error": {"code", "message", "details"}}. A failure
// is an *Error carrying the HTTP status and the error code; errors.Is
// matches it against the sentinels (ErrInvalidArgument, ErrUnauthenticated,
// ErrNotFound, …) by code, or by HTTP status when the code is unknown. A
// server that cannot be reached is ErrUnavailable; a body that is not an
// envelope is ErrMalformed. The API key is sent as "Authorization: Bearer"
// (or X-API-Key) and never appears in an error; a redirect to another
// origin (scheme, host and port) than the configured URL's is refused
// with a *CrossOriginError rather than followed with the key.
//
// It covers health, content (write, read, the abstract and overview
// tiers), the file system (ls, delete), search/find and search/search,
// resources (temp_upload, then resources), sessions (create, add
// messages, commit) and tasks. ParseURI checks viking:// URIs. The
// memory.Memory built on it is package memory/vikingmem; the test double
// of the server is package memory/openvikingtest.
package openviking
