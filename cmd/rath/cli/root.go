package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "rath",
		Short: "Inspect and operate a rath runtime: sessions, the event log, lineage, import and export",
		Long: `rath operates on a runtime directory (--dir, default ./.rath, or $RATH_DIR)
holding the event log rath.db, or on a PostgreSQL database (--dsn
postgres://…, or $RATH_DSN) shared by many processes. Data goes to stdout (as JSON with --json),
logs and progress to stderr. A store with a keyed hash chain needs the key
in $RATH_HMAC_KEY.

Exit codes:
  0  ok
  1  could not run, or failed
  2  usage error: unknown command or flag, bad flag value, wrong arguments
  3  verify (or rebuild --check) found a problem: tampering, a bad blob,
     projections that differ from the log
  4  a replay diverged from the record (replay, demo, dossier --replay)
  5  a run waits for a person (run, resume, wait): rath approvals lists
     what to decide
  6  a replay reproduced all it could check, but events of the run were
     redacted
  7  wait --timeout passed with runs still going (none failed)
  8  this binary cannot rebuild the run's workflow to replay or resume it
     (a program's own workflow: replay it from that program)`,
		Example: `rath demo
rath run --cassette examples/cassettes/write_and_check.json --workspace work --tools all "Write hello.txt"
rath runs --status failed --since 24h
rath replay $(rath runs -q --limit 1)
rath dossier $(rath runs -q --limit 1) -o run.html
rath approve --as ann $(rath approvals -q --run RUN)`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			h := "rath --help"
			if s := nearestCommand(cmd, args[0]); s != "" {
				h = "rath " + s
			}
			return &usageError{err: fmt.Errorf("unknown command %q", args[0]), hint: h}
		},
	}
	// `rath completion bash|zsh|fish|powershell`; ids complete from the store.
	root.CompletionOptions.HiddenDefaultCmd = false
	root.Version = buildVersion()
	root.SetVersionTemplate("rath {{.Version}}\n")
	root.SuggestionsMinimumDistance = 2
	root.PersistentFlags().StringVar(&a.dir, "dir", a.dir, "runtime directory holding rath.db (env RATH_DIR)")
	root.PersistentFlags().StringVar(&a.dsn, "dsn", a.dsn, "keep the log in PostgreSQL instead: postgres://… (env RATH_DSN); --dir then holds only per-process files")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newSessionsCmd(a),
		newShowCmd(a),
		newGraphCmd(a),
		newEventsCmd(a),
		newVerifyCmd(a),
		newKeysCmd(a),
		newCheckpointCmd(a),
		newWitnessCmd(a),
		newRedactCmd(a),
		newEraseCmd(a),
		newRetainCmd(a),
		newCopyCmd(a),
		newSubmitCmd(a),
		newWorkerCmd(a),
		newWaitCmd(a),
		newCancelCmd(a),
		newWorkersCmd(a),
		newRebuildCmd(a),
		newNewCmd(a),
		newAppendCmd(a),
		newForkCmd(a),
		newMergeCmd(a),
		newExportCmd(a),
		newImportCmd(a),
		newMigrateCmd(a),
		newVersionCmd(a),
		newRunCmd(a),
		newToolsCmd(a),
		newRunsCmd(a),
		newReplayCmd(a),
		newResumeCmd(a),
		newApprovalsCmd(a),
		newApproveCmd(a),
		newRejectCmd(a),
		newAnswerCmd(a),
		newMemoryCmd(a),
		newDemoCmd(a),
		newDossierCmd(a),
		newOtelCmd(a),
		newConfigCmd(a),
		newServeCmd(a),
		newDatasetCmd(a),
		newScoreCmd(a),
		newExperimentsCmd(a),
		newRegressCmd(a),
		newCounterfactualCmd(a),
		newTokensCmd(a),
		newAccessCmd(a),
	)
	groupCommands(root)
	completeIDs(a, root)
	return root
}

// commandGroups are the sections of `rath --help`, in order, and the
// commands of each.
var commandGroups = []struct {
	id, title string
	commands  []string
}{
	{"runs", "Runs:", []string{"run", "runs", "wait", "replay", "resume", "demo", "tools", "config"}},
	{"people", "A person in the loop:", []string{"approvals", "approve", "reject", "answer"}},
	{"fleet", "Fleet:", []string{"submit", "worker", "workers", "cancel"}},
	{"evals", "Evals:", []string{"dataset", "score", "experiments", "regress", "counterfactual"}},
	{"evidence", "Evidence:", []string{"verify", "dossier", "export", "checkpoint", "witness", "keys"}},
	{"sessions", "Sessions and memory:", []string{"sessions", "show", "graph", "new", "append", "fork", "merge", "memory"}},
	{"console", "Console and telemetry:", []string{"serve", "otel"}},
	{"access", "Access:", []string{"tokens", "access"}},
	{"store", "Store:", []string{"events", "import", "copy", "migrate", "rebuild", "redact", "erase", "retain", "version"}},
}

// groupCommands sorts root's commands into the help's sections; cobra's
// own (help, completion) go last.
func groupCommands(root *cobra.Command) {
	byName := map[string]string{}
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.commands {
			byName[c] = g.id
		}
	}
	for _, c := range root.Commands() {
		c.GroupID = byName[c.Name()]
	}
	root.AddGroup(&cobra.Group{ID: "other", Title: "Other:"})
	root.SetHelpCommandGroupID("other")
	root.SetCompletionCommandGroupID("other")
}

// quietFlag adds -q/--quiet to a listing: only the ids of what it lists,
// one a line, for scripts.
func quietFlag(cmd *cobra.Command, quiet *bool, what string) {
	cmd.Flags().BoolVarP(quiet, "quiet", "q", false, "print only the "+what+" ids, one a line")
}

// jsonFlag adds --json to a command whose output is data.
func jsonFlag(cmd *cobra.Command, a *app) {
	cmd.Flags().BoolVar(&a.json, "json", false, "print JSON on stdout")
}
