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
	var bf bundleFlags
	cmd := &cobra.Command{
		Use:   "export ID",
		Short: "Write a session as OpenRath v1 JSONL (stdout, or -o FILE), or a run's attested bundle (--bundle DIR)",
		Long: `export writes the head of session ID as JSONL records that both OpenRath
and "rath import" read: a header, one chunk per line, a trailer.

With --bundle DIR, ID is a run: export writes its attested bundle, which a
stranger verifies without rath (DIR/VERIFY.md; docs/EVIDENCE.md): the run's
events as the Merkle log commits to them, their payloads, salts and blobs,
a signed checkpoint with an inclusion proof per event, and a DSSE
attestation of every file, signed with the key in --key or
RATH_SIGNING_KEY. The attestation names the verdict of a replay run here
unless --no-replay.`,
		Example: "rath export s-0123456789abcdef0123 > session.jsonl\nrath export run-0123456789abcdef --bundle run-bundle --key keys/signer.key",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			if bf.dir != "" {
				if output != "" {
					return usagef(cmd, "--bundle and -o: a bundle is a directory, give one of them")
				}
				return a.exportBundle(ctx, argv[0], bf)
			}
			if bf.key != "" || bf.noReplay {
				return usagef(cmd, "--key and --no-replay go with --bundle DIR")
			}
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
	cmd.Flags().StringVar(&bf.dir, "bundle", "", "write the attested bundle of run ID into this new directory")
	cmd.Flags().StringVar(&bf.key, "key", "", "signer key file for --bundle (default: $RATH_SIGNING_KEY)")
	cmd.Flags().BoolVar(&bf.noReplay, "no-replay", false, "with --bundle, attest no replay verdict instead of replaying the run")
	return cmd
}
