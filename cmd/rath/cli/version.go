package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session/jsonl"
	"github.com/spf13/cobra"
)

type versionView struct {
	Version      string         `json:"version"`
	Go           string         `json:"go"`
	ExportFormat int            `json:"export_format"`
	EventTypes   map[string]int `json:"event_types"`
}

func newVersionCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print the rath version, the export format and the event catalogue",
		Example: "rath version --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionView{Version: "(devel)", Go: runtime.Version(), ExportFormat: jsonl.FormatVersion, EventTypes: events.Types()}
			// The module version is stamped by "go install module@version";
			// builds from a checkout say (devel).
			if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
				v.Version = bi.Main.Version
			}
			if a.json {
				return a.printJSON(v)
			}
			fmt.Fprintf(a.stdout, "rath %s (%s)\n", v.Version, v.Go)
			fmt.Fprintf(a.stdout, "export format %d\n", v.ExportFormat)
			names := make([]string, 0, len(v.EventTypes))
			for n := range v.EventTypes {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Fprintf(a.stdout, "event %s v%d\n", n, v.EventTypes[n])
			}
			return nil
		},
	}
	jsonFlag(cmd, a)
	return cmd
}
