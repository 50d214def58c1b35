package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/gorath/rath/session/jsonl"
	"github.com/spf13/cobra"
)

func newExportCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "export ID",
		Short: "Write a session as OpenRath v1 JSONL (stdout, or -o FILE)",
		Long: `export writes the head of session ID as JSONL records that both OpenRath
and "rath import" read: a header, one chunk per line, a trailer.`,
		Example: "rath export s-0123456789abcdef0123 > session.jsonl",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			if output == "" {
				return jsonl.Export(ctx, rt.Sessions(), argv[0], a.stdout)
			}
			f, err := os.Create(output)
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			err = jsonl.Export(ctx, rt.Sessions(), argv[0], f)
			err = errors.Join(err, f.Close())
			if err != nil {
				os.Remove(output) // a partial file must not pass for an export
				return err
			}
			fmt.Fprintf(a.stderr, "wrote %s\n", output)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	return cmd
}
