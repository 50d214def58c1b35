package cli

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/flow/mcptool"
	"github.com/gorath/rath/keyring"
	"github.com/spf13/cobra"
)

func newSubmitCmd(a *app) *cobra.Command {
	var f runFlags
	var workflow, queue, batch string
	cmd := &cobra.Command{
		Use:   "submit [flags] PROMPT | --batch FILE|-",
		Short: "Put a run (or a batch of runs) on the queue for a worker (rath worker) and print its id at once",
		Long: `submit records a run of one agent on PROMPT, with the flags of "rath run",
and puts it on the run queue in the same transaction; any "rath worker"
sharing the store (the same --dir on one machine, or the same --dsn)
executes it. It prints the run id; "rath wait RUN" waits for it and
"rath runs" shows its status and worker. With --workflow NAME it runs a
workflow registered by a program built on package cli (Config.Setup)
instead of the built-in agent; the workers must know it too.

With --batch FILE (or - for stdin) it submits many runs in one
transaction, one JSON object a line: {"prompt": "...", ...} with any of
the run flags by name, "-" written "_" (model, provider, cassette,
workspace, backend, tools, mcp, system, no_stream, max_rounds, memory,
approve, workflow); a field left out takes the command line's value. A
line that does not check out is reported with its number and nothing is
submitted. It prints one run id a line, in order (--json: a list of
{"run", "input_session"}). See docs/SUBMIT.md.

submit only inserts: it opens no listener and starts no worker.`,
		Example: `rath submit --cassette examples/cassettes/write_and_check.json --workspace /shared/work --tools all "Write hello.txt"
rath wait $(rath submit --model gpt-4o-mini "Summarize README.md")
rath submit --batch runs.jsonl --cassette script.json --workspace /shared/work`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			// Its one garbage collection, at 4 MB of heap, cost about 3
			// ms of a lone submit's 21-22 ms of CPU. A batch still
			// collects, at 9 times its live heap.
			a.collectLess(submitGCPercent)
			ctx := cmd.Context()
			if f.subject != "" {
				if err := keyring.ValidSubjectID(f.subject); err != nil {
					return usagef(cmd, "--subject: %v", err)
				}
			}
			var runs []checkedRun
			switch {
			case batch != "" && len(argv) > 0:
				return usagef(cmd, "--batch takes the prompts from its lines: give no PROMPT")
			case batch != "":
				r, done, err := a.openBatch(batch)
				if err != nil {
					return err
				}
				lines, nums, err := readBatch(r)
				done()
				if err != nil {
					return fmt.Errorf("--batch %s: %w", batch, err)
				}
				if runs, err = checkBatch(cmd, f, workflow, lines, nums, false); err != nil {
					return fmt.Errorf("--batch %s: nothing submitted: %w", batch, err)
				}
			case len(argv) == 0:
				return usagef(cmd, "a PROMPT (or --batch FILE) is required")
			default:
				// Flag values are checked before the store is touched.
				c, err := checkRun(cmd, f, workflow, strings.Join(argv, " "), false)
				if err != nil {
					return err
				}
				runs = []checkedRun{c}
			}
			// A submit appends and exits: the workers and the console,
			// which keep running, build the Merkle tree over its commits.
			a.leaveTree = true
			rt, err := a.create(ctx)
			if err != nil {
				return err
			}
			fl, err := fleet.Open(ctx, rt, fleet.Options{Queue: queue, SubmitOnly: true, Tenants: []string{f.tenant}})
			if err != nil {
				return err
			}
			defer fl.Close()
			out, err := a.submitRuns(cmd, rt, fl, runs, false)
			if err != nil {
				if batch != "" {
					return fmt.Errorf("--batch %s: nothing submitted: %w", batch, err)
				}
				return err
			}
			switch {
			case a.json && batch != "":
				return a.printJSON(out)
			case a.json:
				return a.printJSON(out[0])
			}
			for _, r := range out {
				fmt.Fprintln(a.stdout, r.Run)
			}
			return nil
		},
	}
	addRunFlags(cmd, &f)
	tenantFlag(cmd, &f.tenant, "the tenant the runs belong to: only a worker started for it takes them")
	cmd.Flags().StringVar(&f.subject, "subject", "", "whose content the runs are (a person's id): with a key-encryption key their input and everything the worker records, resumes too, is sealed under subject user:ID's key, which rath erase --subject ID destroys")
	cmd.Flags().StringVar(&workflow, "workflow", "", "run a registered workflow by name instead of the built-in agent")
	cmd.Flags().StringVar(&queue, "queue", fleet.DefaultQueue, "the queue to put the run on")
	cmd.Flags().StringVar(&batch, "batch", "", "submit the runs of a JSON Lines file (- for stdin) in one transaction")
	jsonFlag(cmd, a)
	return cmd
}

func newWorkerCmd(a *app) *cobra.Command {
	var concurrency int
	var queue string
	var tenants []string
	var lease, grace, deadAfter time.Duration
	var backends, approve []string
	var workspaceRoot string
	var verbose bool
	var policy fleet.Policy
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Execute submitted runs until SIGTERM or SIGINT",
		Long: `worker takes runs from the queue and executes them, up to --concurrency at
a time, until it gets SIGTERM or SIGINT; then it takes no new run, lets
those in flight finish for up to --grace, and hands back the rest (their
leases lapse and another worker resumes them). A worker holds each run
under a lease renewed every third of --lease; if it dies, another worker
takes the run over after the lease expires and resumes it from the log,
so nothing that completed runs again. Workers beat a heartbeat every
fifth of --dead-after; one silent for --dead-after has its leases expired
early by a live peer (with fencing), so a crashed worker's runs go on in
about that long. Raise it on a machine so loaded that a live worker can
miss its heartbeats that long: such a worker loses its runs, and a tool
call it was running may run a second time. The workspace a run names must be
reachable from every worker (a shared path, or an OpenSandbox sandbox);
a run whose workspace is missing fails with that reason.

Whoever can submit to the store chooses a run's parameters, so a worker
runs only what its operator allows: workspaces on the --backends it
lists (bwrap and opensandbox unless told; local runs tools as this
worker's user, unconfined), and the MCP servers of its own config file,
which a run may name (--tools NAME.*). A run that brings its own --mcp
server (a command to start here, or a URL) is refused unless the worker
runs with --allow-submitted-mcp. A refused run fails with the reason
before anything of it runs. With --workspace-root, a local or bwrap
workspace, and a cassette, must lie under that directory (symlinks
resolved); without it, a run may name any directory this worker's user
can write, and any file it can read as its cassette. The approval rules
of --approve and of the worker's config file ("approvals") are imposed
on every run: a call they stop waits for a person whatever the run's
own rules say, and the run records them, so its replay asks the same.`,
		Example: "rath worker --concurrency 8\nRATH_DSN=postgres://rath@db/rath rath worker --queue batch --backends bwrap",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if deadAfter <= 0 {
				return usagef(cmd, "--dead-after: want a positive duration, got %s", deadAfter)
			}
			for _, t := range tenants {
				if err := events.CheckTenant(t); err != nil || t == "" {
					return usagef(cmd, "--tenant %q: a tenant is lowercase letters and digits, with single - or _ between them", t)
				}
			}
			a.collectLess(workerGCPercent)
			var err error
			if policy.Backends, err = parseBackends(backends); err != nil {
				return usagef(cmd, "--backends: %v", err)
			}
			if policy.Approvals, err = approvalRules(cmd, approve); err != nil {
				return err
			}
			if workspaceRoot != "" {
				if st, err := os.Stat(workspaceRoot); err != nil || !st.IsDir() {
					return usagef(cmd, "--workspace-root: %s is not a directory", workspaceRoot)
				}
				policy.WorkspaceRoot = workspaceRoot
			}
			// The runtime can open no other backend, whatever a session in
			// the log claims, nor a workspace outside the root.
			if a.sandboxes, err = rath.BuiltinSandboxesWith(rath.SandboxOptions{WorkspaceRoot: workspaceRoot}, policy.Backends...); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			rt, err := a.create(ctx)
			if err != nil {
				return err
			}
			stopOtel, err := a.liveTelemetry(ctx, rt)
			if err != nil {
				return err
			}
			defer stopOtel()
			// A config file with a bad entry still names its good servers.
			policy.Servers, _ = mcptool.LoadServers("")
			fl, err := fleet.Open(ctx, rt, fleet.Options{Queue: queue, Concurrency: concurrency, LeaseTime: lease, DeadAfter: deadAfter, Log: a.stderr,
				Policy: policy, Tenants: tenants})
			if err != nil {
				return err
			}
			defer fl.Close()
			fmt.Fprintf(a.stderr, "worker %s: queue %s, tenants %s, up to %d runs at a time; stop with SIGTERM\n", fl.WorkerID(), queue, strings.Join(fl.Tenants(), ","), concurrency)
			if workspaceRoot == "" && (slices.Contains(policy.Backends, "local") || slices.Contains(policy.Backends, "bwrap")) {
				fmt.Fprintf(a.stderr, "worker %s: submitted runs may name any workspace this user can write; --workspace-root confines them\n", fl.WorkerID())
			}
			if n := len(policy.Approvals); n > 0 {
				fmt.Fprintf(a.stderr, "worker %s: %d approval rules imposed on every run (--approve, the config file's approvals)\n", fl.WorkerID(), n)
			}
			err = fl.Run(ctx, grace)
			if !verbose {
				return err
			}
			// What this process's event writer cost, for operators tuning
			// a store and cmd/fleetbench (round trips per step).
			st := rt.Store().Stats()
			fmt.Fprintf(a.stderr, "worker %s: event writer: %d commits, %d appends, %d events, %d round trips, %d batches redone, %d late commits, %d missed, %d tree round trips\n",
				fl.WorkerID(), st.Commits, st.Requests, st.Events, st.RoundTrips, st.Redone, st.Late, st.Missed, st.TreeRoundTrips)
			return err
		},
	}
	cmd.Flags().IntVar(&concurrency, "concurrency", fleet.DefaultConcurrency, "runs executed at once")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "when it stops, print the event writer's counters (commits, appends, round trips)")
	cmd.Flags().StringVar(&queue, "queue", fleet.DefaultQueue, "the queue to take runs from")
	cmd.Flags().StringSliceVar(&tenants, "tenant", nil, "the tenants whose runs this worker takes (repeatable; default: the default tenant's only)")
	cmd.Flags().DurationVar(&lease, "lease", fleet.DefaultLeaseTime, "how long a run stays this worker's without a renewal")
	cmd.Flags().DurationVar(&deadAfter, "dead-after", fleet.DefaultDeadAfter, "how long a worker may miss heartbeats before its peers take its runs over")
	cmd.Flags().DurationVar(&grace, "grace", 30*time.Second, "how long runs in flight may finish after SIGTERM")
	cmd.Flags().StringSliceVar(&backends, "backends", fleet.DefaultBackends(), "sandbox backends submitted workspaces may use (local runs tools unconfined as this worker's user)")
	cmd.Flags().StringVar(&workspaceRoot, "workspace-root", "", "the directory under which submitted runs' local and bwrap workspaces and cassettes must lie (a run naming another fails before it runs)")
	cmd.Flags().StringSliceVar(&approve, "approve", nil, "tools whose every call waits for a person's approval in every run, whatever the run's own rules (names or patterns like github__*); more rules in the config file's \"approvals\"")
	cmd.Flags().BoolVar(&policy.SubmittedMCP, "allow-submitted-mcp", false, "start MCP servers a submitted run brings (--mcp: a command on this host, or a URL); without it, only this worker's configured servers")
	return cmd
}

func newCancelCmd(a *app) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a queued or running run: it ends with status canceled",
		Long: `cancel takes the run's lease from the worker holding it, so that worker can
append nothing more to the run, and records the run as finished with
status canceled and the reason. A tool call already running on the worker
is not interrupted; its result is refused.`,
		Example: `rath cancel run-1a2b --reason "wrong prompt"`,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			if err := fleet.Cancel(ctx, rt, argv[0], reason); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]string{"run": argv[0], "status": fleet.StatusCanceled})
			}
			fmt.Fprintf(a.stdout, "%s\t%s\n", argv[0], fleet.StatusCanceled)
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded with the run")
	jsonFlag(cmd, a)
	return cmd
}

func newWorkersCmd(a *app) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List the fleet's live workers: queue, heartbeat and the runs each holds",
		Long: `workers lists each worker process of the fleet that beat its heartbeat
within its lease time, idle ones too: its queue, concurrency, when it
started, its last heartbeat and the runs it holds a live lease on. A
worker stopped with SIGTERM says goodbye and is gone from the list; one
that died stops beating and shows as dead with --all (its runs are taken
over by the others).`,
		Example: "rath workers --json\nrath workers --all",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			ws, err := fleet.Workers(ctx, rt, all)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(ws)
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKER\tSTATE\tQUEUE\tCONCURRENCY\tSTARTED\tHEARTBEAT\tRUNS")
			for _, w := range ws {
				state := "live"
				if !w.Live {
					state = "dead"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", w.ID, state, w.Queue, w.Concurrency, w.StartedAt.Format(time.RFC3339),
					w.HeartbeatAt.Format(time.RFC3339), orDash(strings.Join(w.Runs, " ")))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also list workers that stopped beating in the last day")
	jsonFlag(cmd, a)
	return cmd
}
