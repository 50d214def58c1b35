package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/signkey"
)

// defaultKeyName names a key when keys generate is given no --name.
const defaultKeyName = "rath-log"

type keysView struct {
	Signer      string `json:"signer"`
	Verifier    string `json:"verifier"`
	PEM         string `json:"pem"`
	Name        string `json:"name"`
	VerifierKey string `json:"verifier_key"`
}

func newKeysCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Make the Ed25519 keys that sign checkpoints (the log's) and cosign them (a witness's)",
		Args:  args(cobra.NoArgs),
	}
	var out, name string
	gen := &cobra.Command{
		Use:   "generate --out DIR",
		Short: "Write a new signing key and its verifier key into DIR",
		Long: `generate writes three files into DIR (created, mode 0700):
  signer.key     the private key (mode 0600): set RATH_SIGNING_KEY to its
                 path and rath signs checkpoints of the log with it, or
                 give it to rath witness --key
  verifier.vkey  the note verifier key: what an auditor or a witness
                 (rath witness --log-key) trusts
  public.pem     the same public key as PEM, for openssl and the like
It never overwrites a signer.key. --name is the name signatures carry
(no spaces or '+'); a log's key may be named after the store's origin,
which rath checkpoint prints.`,
		Example: "rath keys generate --out ./keys --name acme-agents",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef(cmd, "--out DIR is required")
			}
			f, err := signkey.Generate(out, name)
			if err != nil {
				return err
			}
			k, err := signkey.Load(f.Signer)
			if err != nil {
				return err
			}
			v := keysView{Signer: f.Signer, Verifier: f.Verifier, PEM: f.PEM, Name: k.Name(), VerifierKey: k.VerifierKey()}
			if a.json {
				return a.printJSON(v)
			}
			fmt.Fprintf(a.stdout, "signer key    %s (keep it secret: RATH_SIGNING_KEY=%s)\n", v.Signer, v.Signer)
			fmt.Fprintf(a.stdout, "verifier key  %s\n", v.Verifier)
			fmt.Fprintf(a.stdout, "public PEM    %s\n", v.PEM)
			fmt.Fprintf(a.stdout, "%s\n", v.VerifierKey)
			return nil
		},
	}
	gen.Flags().StringVar(&out, "out", "", "directory to write the key files into")
	gen.Flags().StringVar(&name, "name", defaultKeyName, "the key's name, as its signatures carry it")
	jsonFlag(gen, a)
	cmd.AddCommand(gen)
	return cmd
}
