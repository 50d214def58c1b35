// Package cli is the rath command line: it lists, shows and graphs
// sessions, reads and follows the event log, verifies the hash chain,
// rebuilds projections, appends, forks and merges sessions, imports and
// exports OpenRath JSONL, runs agents, and replays and resumes runs.
// Command rath (cmd/rath) is cli.Main with an empty Config.
//
// A program builds its own rath binary to make its workflows replayable
// and resumable by name from the command line: "rath replay" and "rath
// resume" can rebuild only workflows the binary knows, which are those of
// "rath run", the demo, and whatever Config.Setup registers:
//
//	func main() {
//		cli.Main(cli.Config{Setup: func(ctx context.Context, rt *rath.Runtime) error {
//			rt.Register("review", newReviewWorkflow(rt))
//			return nil
//		}})
//	}
//
// Every command takes --dir (default ./.rath, or $RATH_DIR). A store whose
// hash chain is keyed (rath.Options.HMACKey) needs the key in
// $RATH_HMAC_KEY, for verify and for every command that appends; a command
// that appends with no key or another key is refused (eventlog.KeyError),
// and so is a key for an unkeyed store that has events. Commands
// whose output is data take --json and then print JSON on stdout; logs and
// progress go to stderr, progress bars only when stderr is a terminal.
// Exit codes: ExitOK, ExitFailure, ExitUsage for a usage error (which
// prints a "Try:" hint), ExitVerifyFailed and ExitDiverged.
//
// # Layout
//
// cli.go holds Main, the only caller of os.Exit, and Run, which builds the
// command tree for one invocation so tests call it with buffers. Each
// command lives in its own file as newXxxCmd(*app). The app value holds the
// global flags and opens the runtime lazily, running Config.Setup on it;
// there are no package-level commands and no init functions.
package cli
