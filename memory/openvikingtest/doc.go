// Package openvikingtest is a test double of an OpenViking server, built
// from its published HTTP API documentation: the same envelope, error
// codes and HTTP statuses, viking:// URIs, per-user isolation, L0/L1
// sidecars, find and search, resources with temp_upload, sessions with
// their two-phase commit and background tasks.
//
// It is an in-memory httptest server for tests; nothing in it is a
// provider. What it simplifies, on purpose:
//
//   - Scores are lexical, not semantic: the share of the query's words a
//     file holds, in [0,1]. Hits are sorted by score, then URI.
//   - The L0 abstract is the content's first AbstractMax runes and the L1
//     overview its first OverviewMax runes (a real server has a model
//     write them).
//   - A commit's extraction writes each user message of the archive as a
//     memory under viking://user/{user}/memories/events/, and its task
//     completes after Options.Polls polls.
//   - A resource's path (a URL) is not fetched: only uploaded files
//     (temp_upload) are accepted.
//
// Faults are injected with Server.FailNext, Server.SetDelay and
// Server.SetMalformed; Server.Requests counts what it was asked.
package openvikingtest
