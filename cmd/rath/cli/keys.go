package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/keyring"
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
	cmd.AddCommand(gen, newKeysKEKCmd(a))
	return cmd
}

func newKeysKEKCmd(a *app) *cobra.Command {
	var out string
	kek := &cobra.Command{
		Use:   "kek --out FILE",
		Short: "Write a new key-encryption key, which seals the store's content under per-subject keys",
		Long: `kek writes a new random key-encryption key to FILE (mode 0600). Set
RATH_KEK_FILE (or the config file's "kek_file") to its path and rath
seals what it stores (payloads, blobs, the projections' content) under a
data key per subject, each wrapped by this key; rath erase forgets a
subject by deleting its data key (docs/SECURITY.md). It never overwrites
a file: a store sealed under a key-encryption key cannot be read without
it, so keep a copy where the store's backups are not.`,
		Example: "rath keys kek --out ~/.rath/kek && export RATH_KEK_FILE=~/.rath/kek",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef(cmd, "--out FILE is required")
			}
			if err := keyring.GenerateKEKFile(out); err != nil {
				return err
			}
			k, err := keyring.LoadKEKFile(out)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]string{"file": out, "kek_id": k.ID()})
			}
			fmt.Fprintf(a.stdout, "key-encryption key %s written to %s (keep it secret: RATH_KEK_FILE=%s)\n", k.ID(), out, out)
			return nil
		},
	}
	kek.Flags().StringVar(&out, "out", "", "file to write the key-encryption key into (must not exist)")
	jsonFlag(kek, a)
	return kek
}
