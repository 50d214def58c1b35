package cli

import (
	"github.com/gorath/rath/events"
	"github.com/spf13/cobra"
)

// tenantFlag declares --tenant (one tenant; empty means the default
// tenant's), checked before the store is touched.
func tenantFlag(cmd *cobra.Command, v *string, usage string) {
	cmd.Flags().StringVar(v, "tenant", "", usage+" (default: "+events.DefaultTenant+")")
	pre := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, argv []string) error {
		if err := events.CheckTenant(*v); err != nil {
			return usagef(cmd, "--tenant: %v", err)
		}
		if pre != nil {
			return pre(cmd, argv)
		}
		return nil
	}
}
