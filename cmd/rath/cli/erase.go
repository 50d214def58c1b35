package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorath/rath"
	"github.com/gorath/rath/keyring"
)

// eraseView is what rath erase --json prints.
type eraseView struct {
	Subject   string `json:"subject"`
	Record    int64  `json:"record_seq"`
	By        string `json:"by"`
	Reason    string `json:"reason"`
	KeyIDHash string `json:"key_id_hash"`
}

func newEraseCmd(a *app) *cobra.Command {
	var o rath.EraseOptions
	var as string
	cmd := &cobra.Command{
		Use:   "erase --subject ID --reason TEXT [--as WHO]",
		Short: "Forget a subject: destroy its data key, so all content sealed under it is unreadable for good, and record who, when and why",
		Long: `erase destroys the data key of a subject (crypto-shredding): everything
sealed under it (the payloads and blobs of its runs' events, tool output,
model answers, memory) stays in the log as ciphertext that no one can open
again, so the log, its Merkle tree, every proof, checkpoint and bundle
still verify. The key's row is deleted and an evidence.erased event
(who: --as, default the OS user; why: --reason; the subject; the SHA-256
of the destroyed key's id) appended in one transaction. The projections
and the memory index are then rebuilt without what can no longer be read.
"rath verify" lists the erasure; a replay of the subject's runs says which
answers it could not check; reading the content says it was erased, in
this process and in every other one on the store (a console, workers):
erase returns once their cached keys are stale.

--subject takes a user id as given to "rath run --subject" (user:ID), or a
whole subject: run:RUNID (a run that named no subject), session:SID or
memory:NAMESPACE. A subject with no key (never sealed for, or already
erased) is an error and changes nothing. erase needs the store's
key-encryption key (RATH_KEK_FILE, or the config file's "kek_file").

What it cannot reach: a copy of the key-encryption key together with a
backup, WAL or replica that still holds the subject's wrapped key, and
plaintext exported before (rath export, bundles, dossiers, spans).`,
		Example: "rath erase --subject alice --reason \"erasure request 42\"",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Subject == "" {
				return usagef(cmd, "--subject is required")
			}
			if o.Reason == "" {
				return usagef(cmd, "--reason is required: it is recorded with the erasure")
			}
			o.Subject = subjectArg(o.Subject)
			var err error
			if o.By, err = decider(cmd, as); err != nil {
				return err
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			res, err := rt.Erase(ctx, o)
			if err != nil {
				return err
			}
			// Other processes (a console, workers) drop the key from their
			// caches within keyring.Freshness of the commit: once erase
			// returns, none of them opens the subject's content.
			time.Sleep(keyring.Freshness)
			a.afterErasure(ctx, rt, postgresKeyNotice)
			v := eraseView{Subject: o.Subject, Record: res.Record.Seq, By: o.By, Reason: o.Reason, KeyIDHash: res.KeyIDHash}
			if a.json {
				return a.printJSON(v)
			}
			_, err = fmt.Fprintf(a.stdout, "erased %s: its key (id hash %s) is destroyed, at seq %d by %s: %s\n",
				termSafe(v.Subject), v.KeyIDHash[:16], v.Record, termSafe(v.By), termSafe(v.Reason))
			return err
		},
	}
	cmd.Flags().StringVar(&o.Subject, "subject", "", "the subject: a user id (as rath run --subject), or user:ID, run:RUNID, session:SID, memory:NS")
	cmd.Flags().StringVar(&o.Reason, "reason", "", "why (required; recorded and listed by verify)")
	cmd.Flags().StringVar(&as, "as", "", "who asks (default: the OS user)")
	jsonFlag(cmd, a)
	return cmd
}

// subjectArg is the subject --subject names: a whole subject when it
// starts with a level keyring knows, else the user of that id, as rath run
// --subject names it.
func subjectArg(s string) string {
	if keyring.ValidSubject(s) == nil {
		return s
	}
	return keyring.LevelUser + ":" + s
}

// postgresKeyNotice is what an operator must know after an erasure on
// PostgreSQL: the deleted key row's bytes, wrapped by the key-encryption
// key, outlive the DELETE in the server's copies.
const postgresKeyNotice = `rath: on PostgreSQL the destroyed key's row (wrapped by the key-encryption
  key) stays in the WAL (pg_wal and any WAL archive), in base backups and on
  replicas, and in the subject_keys table file until VACUUM. It opens only
  with the key-encryption key: the erasure is final once those copies are
  expired, or for anyone without the key-encryption key. docs/EVIDENCE.md
  says what erasure proves.
`
