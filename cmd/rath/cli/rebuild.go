package cli

import (
	"context"
	"fmt"

	"github.com/gorath/rath"
	"github.com/gorath/rath/projections"
	"github.com/spf13/cobra"
)

// maxDiffs bounds the differences rebuild --check prints.
const maxDiffs = 10

type rebuildView struct {
	Events      int64    `json:"events"`
	Memories    *int64   `json:"memories,omitempty"` // indexed by --memory
	Checked     bool     `json:"checked"`
	Differences []string `json:"differences,omitempty"`
}

func newRebuildCmd(a *app) *cobra.Command {
	var check, withMemory bool
	cmd := &cobra.Command{
		Use:   "rebuild",
		Short: "Drop the SQL projections and replay the event log into them (--check: compare only)",
		Long: `rebuild clears every SQL projection and replays the whole log, in one
transaction, showing progress on stderr. Appends from other processes wait
for it and then apply to the rebuilt projections. With --memory it also
rebuilds the memory's BM25 index from the log.

With --check it changes nothing: it rebuilds the log into a scratch
in-memory database and compares that, row for row, with the projections as
of the same snapshot of the store, and fails naming the rows that differ.
The incrementally maintained read model must equal the one rebuilt from
events; "rath rebuild" without --check repairs a difference.`,
		Example: "rath rebuild --check",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if check && withMemory {
				return usagef(cmd, "--check is read-only and --memory rebuilds the memory index: run them separately")
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			if check {
				return runCheck(ctx, a, rt)
			}
			head, err := rt.Store().Head(ctx)
			if err != nil {
				return err
			}
			progress := a.progress("rebuild")
			if head.Seq == 0 {
				progress = nil
			}
			stats, err := rt.Rebuild(ctx, progress)
			if err != nil {
				return err
			}
			v := rebuildView{Events: stats.Events}
			if withMemory {
				m, err := rt.Memory(ctx)
				if err != nil {
					return err
				}
				ms, err := m.RebuildWithProgress(ctx, a.progress("memory"))
				if err != nil {
					return err
				}
				v.Memories = &ms.Memories
			}
			if a.json {
				return a.printJSON(v)
			}
			fmt.Fprintf(a.stdout, "events replayed  %d\n", v.Events)
			if v.Memories != nil {
				fmt.Fprintf(a.stdout, "memories indexed %d\n", *v.Memories)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&withMemory, "memory", false, "also rebuild the memory index from the log")
	cmd.Flags().BoolVar(&check, "check", false, "change nothing: fail if a rebuild from the log would differ from the projections")
	jsonFlag(cmd, a)
	return cmd
}

// runCheck is rebuild --check: a read-only comparison of the projections
// with a rebuild of the log, as of one snapshot.
func runCheck(ctx context.Context, a *app, rt *rath.Runtime) error {
	rep, err := projections.Check(ctx, rt.Store(), projections.CheckOptions{Max: maxDiffs})
	if err != nil {
		return err
	}
	v := rebuildView{Events: rep.Seq, Checked: true}
	for _, d := range rep.Differences {
		v.Differences = append(v.Differences, d.Error())
	}
	if a.json {
		if err := a.printJSON(v); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "events replayed  %d (into a scratch database; the store is unchanged)\n", v.Events)
		if len(v.Differences) == 0 {
			fmt.Fprintln(a.stdout, "check           projections equal a rebuild from the log")
		}
		for _, d := range v.Differences {
			fmt.Fprintf(a.stdout, "differs         %s\n", d)
		}
	}
	if len(v.Differences) > 0 {
		return fmt.Errorf("rebuild --check: the projections differ from a rebuild of the log (%d differences shown; rath rebuild repairs them): %w",
			len(v.Differences), rep.Differences[0])
	}
	return nil
}
