package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/gorath/rath/session/jsonl"
	"github.com/spf13/cobra"
)

type importView struct {
	Imported int                `json:"imported"`
	Failed   int                `json:"failed"`
	Files    []jsonl.FileReport `json:"files"`
}

func newImportCmd(a *app) *cobra.Command {
	var roots []string
	var maxLine int
	cmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Import sessions from OpenRath v1 JSONL files (or rath exports)",
		Long: `import reads each file as one session and writes it in one atomic
append. Parents are imported before children whatever the order of the
files, and become graph edges when present. A malformed file, or one whose
session already exists, is reported and skipped; the others are still
imported, and the exit code is 1. A file without a trailer (its writer
crashed) is imported and marked incomplete. It creates the store if the
directory has none.

A file's sandbox placement is not trusted: it is kept as provenance, and
the session is imported without one, unless --allow-workspace names a
directory the placement's local or bwrap workspace lies in.`,
		Example: "rath import parent.jsonl child.jsonl",
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rt, err := a.create(ctx)
			if err != nil {
				return err
			}
			opts := jsonl.Options{MaxLineBytes: maxLine, Progress: a.progress("import")}
			if len(roots) > 0 {
				opts.Placement = jsonl.UnderRoots(roots...)
			}
			rep, _ := jsonl.ImportWith(ctx, rt.Sessions(), opts, argv...) // per-file errors are in the report
			if err := ctx.Err(); err != nil {
				return err
			}
			v := importView{Imported: rep.Imported(), Failed: len(rep.Files) - rep.Imported(), Files: rep.Files}
			if a.json {
				if err := a.printJSON(v); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "FILE\tSESSION\tCHUNKS\tPARENTS\tSTATUS")
				for _, f := range rep.Files {
					status := "ok"
					switch {
					case f.Err != nil:
						status = "error: " + f.Err.Error()
					case f.Incomplete:
						status = "ok, incomplete (no trailer)"
					}
					if f.Err == nil && f.PlacementRefused != "" {
						status += fmt.Sprintf("; placement %s %s not imported: %s", f.DeclaredPlacement.Backend, f.DeclaredPlacement.Spec, f.PlacementRefused)
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", f.File, orDash(f.Session), f.Chunks, orDash(strings.Join(f.Parents, ",")), status)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if v.Failed > 0 {
				return fmt.Errorf("import: %d of %d files failed", v.Failed, len(rep.Files))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&roots, "allow-workspace", nil, "accept a file's local or bwrap placement inside this directory (repeatable)")
	cmd.Flags().IntVar(&maxLine, "max-line-bytes", jsonl.MaxLineBytes, "refuse a file with a longer line")
	jsonFlag(cmd, a)
	return cmd
}
