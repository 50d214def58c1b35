package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gorath/rath/flow"
	"github.com/gorath/rath/internal/demo"
	"github.com/spf13/cobra"
)

// demoDir is the demo's runtime directory unless --dir or RATH_DIR says
// otherwise: kept between runs, so a second demo recalls the first's lesson.
const demoDir = "./.rath-demo"

func newDemoCmd(a *app) *cobra.Command {
	var backend string
	var live bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the offline multi-agent demo: plan, code, review (one rejected patch), memory, a Selector; then replay and verify it",
		Long: `demo runs a small software task in a real sandbox workspace: a planner reads
ISSUE.md, a coder writes code with the file tools and runs the tests with the
shell tool, a reviewer rejects the first patch (the workflow forks from the
plan and tries again) and approves the second, the lesson is committed to
memory, and a Selector decides when the work is done.

The model's turns come from a scripted cassette shipped with rath (labelled
as scripted); the tools, sandbox, events, memory and session graph are
real. Only with --live does the same workflow run against a real model (the
provider from the environment or the config file); a key in the environment
alone never makes the demo go live. The store is kept in ./.rath-demo (or --dir): run it twice and
the planner recalls the first run's lesson.`,
		Example: "rath demo",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if !cmd.Flags().Changed("dir") && os.Getenv("RATH_DIR") == "" {
				a.dir = demoDir
			}
			rt, err := a.create(ctx)
			if err != nil {
				return err
			}
			var opts demo.Options
			opts.Backend = backend
			if live {
				if opts.Provider, err = rt.ResolveProvider(flow.Provider{}, flow.ResolveOptions{}); err != nil {
					return err
				}
			}
			sum, err := demo.Run(ctx, rt, opts)
			if sum == nil {
				return err
			}
			if a.json {
				if perr := a.printJSON(sum); perr != nil {
					return perr
				}
				return err
			}
			printDemo(a, sum)
			if err != nil {
				return err
			}
			if !sum.Replay.OK() {
				return errDiverged
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&backend, "backend", "local", "sandbox backend for the workspace: local or bwrap")
	cmd.Flags().BoolVar(&live, "live", false, "use a real model (provider from the environment or config file) instead of the cassette")
	jsonFlag(cmd, a)
	return cmd
}

func printDemo(a *app, s *demo.Summary) {
	w := a.stdout
	model := "scripted cassette (not a real model)"
	if !s.Scripted {
		model = "live provider"
	}
	fmt.Fprintf(w, "rath demo: issue 17, add slugify to textkit\n")
	fmt.Fprintf(w, "  model turns      %s\n", model)
	fmt.Fprintf(w, "  workspace        %s\n", s.Workspace)
	fmt.Fprintf(w, "  run              %s\n", s.Run)
	fmt.Fprintf(w, "  sessions         %d (%d forks; %d rejected patch abandoned on its branch)\n", s.Sessions, s.Forks, s.Rejected)
	fmt.Fprintf(w, "  tool calls       %d (real, in the %s sandbox)\n", s.ToolCalls, "workspace")
	fmt.Fprintf(w, "  selector         %d decisions\n", s.Decisions)
	fmt.Fprintf(w, "  memory           %d recalled, %d committed\n", s.Recalled, s.Committed)
	fmt.Fprintf(w, "  tokens           %d over the run\n", s.Tokens)
	fmt.Fprintf(w, "  events           %d in the run\n", s.Events)
	verdict := "ok"
	if !s.Verified {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "  verify           %s, head %d:%s\n", verdict, s.Head.Seq, s.Head.Hash)
	if s.Replay != nil {
		if s.Replay.OK() {
			fmt.Fprintf(w, "  replay           reproduced %d of %d events\n", s.Replay.Matched, s.Replay.Recorded)
		} else {
			fmt.Fprintf(w, "  replay           DIVERGED: %v\n", s.Replay.Divergence)
		}
	}
	if s.Final != "" {
		fmt.Fprintf(w, "  final answer     %s\n", strings.ReplaceAll(s.Final, "\n", " "))
	}
	if s.Err != "" {
		fmt.Fprintf(w, "  error            %s\n", s.Err)
	}
	if s.Dossier != "" {
		fmt.Fprintf(w, "\nEvidence dossier: %s\n", s.Dossier)
	}
	// One command per line: joined on one line they would paste as a pipe.
	fmt.Fprintf(w, "Inspect it:\n")
	self := selfName()
	fmt.Fprintf(w, "  %s --dir %s graph\n", self, a.dir)
	fmt.Fprintf(w, "  %s --dir %s show %s\n", self, a.dir, s.Output)
	fmt.Fprintf(w, "  %s --dir %s replay %s\n", self, a.dir, s.Run)
}

// selfName is how to call this program in a command to paste: the path
// it was started by when that is a path to a rath binary (make demo runs
// bin/rath, which need not be on PATH), else "rath".
func selfName() string {
	if p := os.Args[0]; filepath.Base(p) == "rath" && strings.ContainsRune(p, filepath.Separator) {
		return p
	}
	return "rath"
}
