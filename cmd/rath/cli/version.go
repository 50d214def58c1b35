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
			v := versionView{Version: buildVersion(), Go: runtime.Version(), ExportFormat: jsonl.FormatVersion, EventTypes: events.Types()}
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

// buildVersion is the module version stamped by "go install module@version",
// with the VCS revision when the binary was built from a checkout.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if v == "(devel)" && len(rev) >= 12 {
		v += " " + rev[:12] + dirty
	}
	return v
}
