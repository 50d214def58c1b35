// Package access owns who may do what in rath and the record of who read
// what: roles and the actions they allow ([Role], [Action]), the
// [Identity] a request or a command acts as, API tokens ([CreateToken],
// [LookupToken], [RevokeToken], [Tokens]) and the access records
// ([Viewed], [Record], [Records]).
//
// # Roles
//
// A [Viewer] reads runs; an [Approver] reads and decides approvals; an
// [Operator] reads and submits, cancels, resumes, forks and replays (it
// does not decide); an [Admin] does everything, tokens and erasure
// included. [Role.Allows] is the one place that says so.
//
// # Tokens
//
// An API token is printed once, when it is created; the log holds only
// the SHA-256 of its secret, in an access.token_created event, and its
// revocation is an access.token_revoked event on the same stream
// (events.TokenStream). [LookupToken] turns a presented token into the
// [Identity] it stands for, or a *[TokenError] (unknown, revoked or
// expired).
//
// # Access records
//
// Every read of run content through the console or its API appends one
// access.viewed event ([Record]); the records are in the hash-chained
// log, as tamper-evident as the runs they are about. [Records] lists them
// by run, by who read, or since a time.
//
// # What it does not own
//
// The console (internal/console) decides which identity a request has and
// which action each route needs; tenants' isolation of the rows a query
// returns lives in the read layer. This package imports events and
// eventlog and nothing else from rath, so the root package may import it.
package access
