package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime/pprof"
	"syscall"

	"github.com/gorath/rath"
	"github.com/gorath/rath/bundle"
	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/flow/model/scripted"
	"github.com/gorath/rath/projections"
)

// Config is what a program that embeds the rath CLI adds to it.
type Config struct {
	// Setup runs on every runtime the CLI opens, before a command uses it.
	// Register your workflows there (rt.Register) so that "rath replay"
	// and "rath resume" can rebuild their runs by name. An error stops the
	// command and closes the runtime.
	Setup func(ctx context.Context, rt *rath.Runtime) error
}

// Main runs the CLI on os.Args, stops on SIGINT or SIGTERM, and exits the
// process with the command's exit code. It is meant to be all of a main
// function:
//
//	func main() { cli.Main(cli.Config{Setup: registerWorkflows}) }
func Main(cfg Config) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startCPUProfile(os.Getenv(CPUProfileEnv), os.Stderr)
	code := run(ctx, cfg, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, true)
	stopProfile()
	stop()
	os.Exit(code)
}

// CPUProfileEnv names a file the process writes a Go CPU profile to
// (go tool pprof reads it) from its start until its command returns: how
// a worker's CPU per step is found where it goes (docs/PERFORMANCE.md).
const CPUProfileEnv = "RATH_CPU_PROFILE"

// startCPUProfile starts profiling into path (nothing for ""), and
// returns what stops it. A profile that cannot be written is reported,
// never a reason to fail the command.
func startCPUProfile(path string, stderr io.Writer) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "rath: %s: %v\n", CPUProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(stderr, "rath: %s: %v\n", CPUProfileEnv, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// Exit codes. Scripts can tell "could not run" from "ran and found a
// problem": verify and replay have codes of their own.
const (
	ExitOK           = 0 // the command succeeded
	ExitFailure      = 1 // it could not run, or failed
	ExitUsage        = 2 // the command line was wrong (bad flag value too); a "Try:" hint is printed
	ExitVerifyFailed = 3 // verify or rebuild --check found a problem: a broken chain, a bad blob, projections that differ
	ExitDiverged     = 4 // a replay diverged from the record (replay, demo, dossier --replay)
	ExitWaiting      = 5 // the run waits for a person (run, resume): rath approvals lists what to decide
	ExitUnchecked    = 6 // a replay reproduced all it could check, but events of the run were redacted
	ExitTimedOut     = 7 // wait --timeout passed with runs still going: none of them failed
	ExitNotRebuilt   = 8 // this binary cannot rebuild the run's workflow to replay or resume it
)

// Run executes one rath invocation with args (without the program name)
// and returns its exit code. Errors are printed on stderr.
func Run(ctx context.Context, cfg Config, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, cfg, args, stdin, stdout, stderr, false)
}

// run is Run; ownsProcess says the command is all the process does
// (Main), so it may tune the process's runtime for itself.
func run(ctx context.Context, cfg Config, args []string, stdin io.Reader, stdout, stderr io.Writer, ownsProcess bool) int {
	a := newApp(cfg, stdin, stdout, stderr)
	a.ownsProcess = ownsProcess
	root := newRootCmd(a)
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if cerr := a.close(); cerr != nil && err == nil {
		err = cerr
	}
	return exitCode(stderr, err)
}

// exitCode prints err, with a hint for usage errors, and maps it to an
// exit code.
func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "rath: %s\nTry: %s\n", message(ue.err), ue.hint)
		return ExitUsage
	}
	if errors.Is(err, flow.ErrWaiting) {
		// Not a failure: the run is where it should be. The requests and
		// how to decide them were printed already.
		fmt.Fprintf(stderr, "%s\n", message(err))
		return ExitWaiting
	}
	fmt.Fprintf(stderr, "rath: %s\n", message(err))
	if errors.Is(err, scripted.ErrCassette) || errors.Is(err, eval.ErrSpec) {
		// The file given is bad input, as a bad flag value is.
		return ExitUsage
	}
	if errors.Is(err, projections.ErrNotFound) {
		fmt.Fprintln(stderr, "Try: rath runs (run ids, newest first) or rath sessions (session ids)")
	}
	var diff *projections.Difference
	switch {
	case errors.Is(err, errDiverged):
		return ExitDiverged
	case errors.Is(err, errUnchecked):
		return ExitUnchecked
	case errors.Is(err, errTimedOut):
		return ExitTimedOut
	case errors.Is(err, rath.ErrUnknownWorkflow), errors.Is(err, flow.ErrNotRebuildable):
		return ExitNotRebuilt
	case errors.Is(err, eventlog.ErrVerify), errors.Is(err, eval.ErrScoreMismatch), errors.As(err, &diff), errors.Is(err, checkpoint.ErrRefused), errors.Is(err, bundle.ErrInvalid):
		return ExitVerifyFailed
	}
	return ExitFailure
}

// message is err's text as printed after the program's "rath: ". The
// library's errors carry their package's prefix ("projections: not
// found", "flow: provider configuration"), as Go packages' errors do;
// an operator reads the message without them (the errors themselves,
// wrapped and typed, are unchanged). An error can quote model text or
// tool output: it is escaped.
func message(err error) string {
	msg := err.Error()
	// Prefixes follow one another ("rath: flow: …"): a match ends where
	// the next one would have to begin, so repeat until none is left.
	for {
		next := packagePrefix.ReplaceAllString(msg, "$1")
		if next == msg {
			return termSafe(msg)
		}
		msg = next
	}
}

// packagePrefix matches the prefix of one of rath's packages where an
// error's text starts or a wrapped error's begins.
var packagePrefix = regexp.MustCompile(`(^|: )(?:rath|flow|projections|events|fleet|replay|session|approval|checkpoint|bundle|scripted|sandbox|signkey|retention|telemetry|dossier|secret|memory): `)
