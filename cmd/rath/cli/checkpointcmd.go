package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/checkpoint"
)

type checkpointView struct {
	Origin      string   `json:"origin"`
	Size        int64    `json:"size"`
	Root        string   `json:"root"`
	KeyName     string   `json:"key_name"`
	VerifierKey string   `json:"verifier_key"`
	SignedAt    string   `json:"signed_at"`
	CosignedBy  []string `json:"cosigned_by"`
	// Note is the signed note with every cosignature line.
	Note string `json:"note"`
}

func checkpointViewOf(cp *checkpoint.Checkpoint) checkpointView {
	v := checkpointView{Origin: cp.Origin, Size: cp.Size, Root: cp.Root.String(), KeyName: cp.KeyName, VerifierKey: cp.VerifierKey,
		SignedAt: cp.SignedAt.UTC().Format(time.RFC3339Nano), CosignedBy: []string{}, Note: string(cp.Signed())}
	for _, co := range cp.Cosignatures {
		v.CosignedBy = append(v.CosignedBy, co.Name())
	}
	return v
}

func newCheckpointCmd(a *app) *cobra.Command {
	var sign bool
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Print the latest signed checkpoint of the log, or sign one (--sign)",
		Long: `checkpoint prints the latest signed checkpoint of the log: a C2SP
tlog-checkpoint (the store's origin, the tree size and its root in base64)
as a signed note, followed by the cosignatures of the witnesses that
checked it. Processes that append with RATH_SIGNING_KEY set sign one
every 1,000 events, every 10 s while events arrive and at the end of each
run; --sign signs the current tree head now with the key of
RATH_SIGNING_KEY. Verify the note with the log's verifier key (rath keys
generate wrote it) and check it against the log with rath verify.`,
		Example: "RATH_SIGNING_KEY=./keys/signer.key rath checkpoint --sign",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if sign && a.signingKey == "" {
				return usagef(cmd, "--sign needs the signing key: set RATH_SIGNING_KEY to a key file (rath keys generate writes one)")
			}
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			var cp *checkpoint.Checkpoint
			if sign {
				key, err := a.loadSigningKey()
				if err != nil {
					return err
				}
				if cp, err = checkpoint.Sign(ctx, rt.Store(), key); err != nil {
					return err
				}
			} else {
				cp, err = checkpoint.Latest(ctx, rt.Store())
			}
			if errors.Is(err, checkpoint.ErrNone) {
				return fmt.Errorf("no signed checkpoint: the log is not attested (set RATH_SIGNING_KEY and run rath checkpoint --sign): %w", err)
			}
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(checkpointViewOf(cp))
			}
			_, err = a.stdout.Write(cp.Signed())
			return err
		},
	}
	cmd.Flags().BoolVar(&sign, "sign", false, "sign the current tree head with the key of RATH_SIGNING_KEY first")
	jsonFlag(cmd, a)
	return cmd
}
