package cli

import (
	"fmt"

	"github.com/gorath/rath/projections"
	"github.com/schollz/progressbar/v3"
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
		Short: "Drop the SQL projections and replay the event log into them",
		Long: `rebuild clears every SQL projection and replays the whole log, in one
transaction, showing progress on stderr. With --check it dumps the
projections before and after and fails if they differ: the incrementally
maintained read model must equal the one rebuilt from events. With
--memory it also rebuilds the memory's BM25 index from the log.`,
		Example: "rath rebuild --check",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			var before map[string][]string
			if check {
				if before, err = projections.Dump(ctx, rt.Store().DB()); err != nil {
					return err
				}
			}
			head, err := rt.Store().Head(ctx)
			if err != nil {
				return err
			}
			var progress func(done, total int64)
			if head.Seq > 0 {
				bar := progressbar.NewOptions64(head.Seq,
					progressbar.OptionSetWriter(a.stderr),
					progressbar.OptionSetDescription("rebuild"),
					progressbar.OptionShowCount(),
					progressbar.OptionSetWidth(30),
					progressbar.OptionOnCompletion(func() { fmt.Fprintln(a.stderr) }),
				)
				progress = func(done, total int64) {
					if total != bar.GetMax64() {
						bar.ChangeMax64(total)
					}
					_ = bar.Set64(done) // a progress display error must not fail the rebuild
				}
			}
			stats, err := rt.Rebuild(ctx, progress)
			if err != nil {
				return err
			}
			v := rebuildView{Events: stats.Events, Checked: check}
			if withMemory {
				m, err := rt.Memory(ctx)
				if err != nil {
					return err
				}
				ms, err := m.Rebuild(ctx)
				if err != nil {
					return err
				}
				v.Memories = &ms.Memories
			}
			if check {
				after, err := projections.Dump(ctx, rt.Store().DB())
				if err != nil {
					return err
				}
				v.Differences = diffDumps(before, after)
			}
			if a.json {
				if err := a.printJSON(v); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "events replayed  %d\n", v.Events)
				if v.Memories != nil {
					fmt.Fprintf(a.stdout, "memories indexed %d\n", *v.Memories)
				}
				if check && len(v.Differences) == 0 {
					fmt.Fprintln(a.stdout, "check           projections equal before and after")
				}
				for _, d := range v.Differences {
					fmt.Fprintf(a.stdout, "differs         %s\n", d)
				}
			}
			if len(v.Differences) > 0 {
				return fmt.Errorf("rebuild --check: the rebuilt projections differ from the incremental ones (%d differences shown)", len(v.Differences))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&withMemory, "memory", false, "also rebuild the memory index from the log")
	cmd.Flags().BoolVar(&check, "check", false, "fail if the rebuilt projections differ from the ones before")
	jsonFlag(cmd, a)
	return cmd
}

// diffDumps compares two projection dumps table by table and describes up
// to maxDiffs differing rows.
func diffDumps(before, after map[string][]string) []string {
	var out []string
	for _, t := range projections.Tables {
		b, af := set(before[t]), set(after[t])
		for _, row := range before[t] {
			if !af[row] {
				out = append(out, fmt.Sprintf("%s: only before rebuild: %s", t, row))
			}
		}
		for _, row := range after[t] {
			if !b[row] {
				out = append(out, fmt.Sprintf("%s: only after rebuild: %s", t, row))
			}
		}
		if len(out) >= maxDiffs {
			return out[:maxDiffs]
		}
	}
	return out
}

func set(rows []string) map[string]bool {
	m := make(map[string]bool, len(rows))
	for _, r := range rows {
		m[r] = true
	}
	return m
}
