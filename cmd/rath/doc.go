// Command rath is the command-line interface to a rath runtime directory:
// it lists, shows and graphs sessions, reads and follows the event log,
// verifies the hash chain, rebuilds projections, appends, forks and merges
// sessions, and imports and exports sessions as OpenRath JSONL.
//
// Every command takes --dir (default ./.rath, or $RATH_DIR). A store whose
// hash chain is keyed (rath.Options.HMACKey) needs the key in
// $RATH_HMAC_KEY, for verify and for every command that appends. Commands whose
// output is data take --json and then print JSON on stdout; logs and
// progress go to stderr. Exit codes: 0 on success, 1 on failure, 2 on a
// usage error (which prints a "Try:" hint).
//
// # Layout
//
// main.go holds main, the only caller of os.Exit, and run, which builds the
// command tree for one invocation so tests call it with buffers. Each
// command lives in its own file as newXxxCmd(*app). The app value holds the
// global flags and opens the runtime lazily; there are no package-level
// commands and no init functions.
//
// This program imports rath, events, projections, session, session/jsonl
// and migrations; nothing imports it.
package main
