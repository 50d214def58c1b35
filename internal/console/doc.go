// Package console is the web console behind `rath serve`: a JSON HTTP API
// over one open store and a single-page UI built into the binary.
//
// # What it serves
//
// [New] returns an [http.Handler] with the API under /api/ (documented in
// docs/openapi.yaml) and the UI (static/, embedded with go:embed: plain
// HTML, CSS and JavaScript, no CDN, works offline) at /. The runs list and
// a run's events are keyset-paged SQL queries over the projections and the
// events table's run index: no request loads the whole log. A run's live
// tail is Server-Sent Events fed by eventlog.Store.Subscribe, which wakes on
// the store's append notifications.
//
// # Security
//
// The console is meant for loopback. With no token, a request whose Host
// is not a loopback name is refused (DNS rebinding). With a token (any
// non-loopback address needs one; `rath serve` enforces it) every request
// must carry it, as `Authorization: Bearer TOKEN` or as the cookie set by
// visiting /?token=TOKEN, compared in constant time. A write (POST) also
// needs the header X-Rath-CSRF holding a random value of this process,
// which only the served page knows, and is refused when Origin or
// Sec-Fetch-Site say it comes from another site. Every page is sent with a
// Content-Security-Policy that allows no inline script and no other
// origin; the JavaScript writes model and tool text with textContent only.
// No endpoint reads a file: everything comes from the store.
//
// # Scope
//
// It reads the store and, for replay and verify, runs what the CLI runs
// (replay.Run in a scratch store, rath.Runtime.Verify). Its one append
// is POST /api/runs, which hands runs to Options.Submit (the CLI's
// batch submit) and writes them to the fleet's queue.
// The Evals endpoints (/api/evals/, evals.go) read what package eval
// recorded: datasets, experiments, scores and the events each score read;
// they never score.
// The approvals inbox (issue: human in the loop) has its place reserved in
// routes (server.go) and in the UI's navigation (static/app.js).
package console
