package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
)

// redactView is what rath redact --json prints.
type redactView struct {
	Record       int64   `json:"record_seq,omitempty"`
	Redacted     []int64 `json:"redacted"`
	Already      []int64 `json:"already,omitempty"`
	PayloadBytes int64   `json:"payload_bytes"`
	Blobs        int64   `json:"blobs"`
	BlobBytes    int64   `json:"blob_bytes"`
}

func newRedactCmd(a *app) *cobra.Command {
	var o rath.RedactOptions
	var as string
	cmd := &cobra.Command{
		Use:   "redact (--event SEQ | --session ID | --memory NS | --run RUN) --reason TEXT [--as WHO]",
		Short: "Delete events' payloads and the blobs only they name, keep their leaves, and record who, when and why",
		Long: `redact deletes the payloads of the events named (their salts too, and
every blob no remaining payload references) and keeps their leaves: each
row keeps its header and its payload commitment, so the Merkle tree, every
proof and every checkpoint verify as before. Who asked (--as, default the
OS user) and why (--reason) are recorded as an evidence.redacted event,
which "rath verify" lists ("seq N: redacted at seq M by WHO: reason").
The projections (and for --memory the memory index) are rebuilt so no
copy of a deleted payload stays in a read model. --run also redacts the
decisions on the run's approval requests. The structure stays: sessions
keep their length and lineage, and the deleted chunks read as [redacted]
in every session that shares them (forks and merges of the run's). A replay of a run with
redacted events exits 6 and says which answers it could not check.

Events written before the Merkle log, and the records of redactions,
cannot be redacted; an event whose row no longer matches its leaf is
refused too (run verify).

On SQLite the deleted bytes are zeroed in rath.db, and redact checkpoints
and truncates its WAL. On PostgreSQL they stay in the WAL, base backups,
replicas and, until VACUUM, the table files: redact says so on stderr.`,
		Example: "rath redact --session s-0123456789abcdef0123 --reason \"erasure request 42\"",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			set := 0
			for _, f := range []string{"event", "session", "memory", "run"} {
				if cmd.Flags().Changed(f) {
					set++
				}
			}
			if set != 1 {
				return usagef(cmd, "name exactly one of --event, --session, --memory and --run")
			}
			if cmd.Flags().Changed("event") && o.Event <= 0 {
				return usagef(cmd, "--event: want a positive seq, got %d", o.Event)
			}
			if o.Reason == "" {
				return usagef(cmd, "--reason is required: it is recorded with the redaction")
			}
			var err error
			if o.By, err = decider(cmd, as); err != nil {
				return err
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			res, err := rt.Redact(ctx, o)
			if err != nil {
				return err
			}
			if len(res.Redacted) > 0 {
				a.afterErasure(ctx, rt, postgresErasureNotice)
			}
			v := redactView{Record: res.Record.Seq, Redacted: res.Redacted, Already: res.Already, PayloadBytes: res.PayloadBytes, Blobs: res.Blobs, BlobBytes: res.BlobBytes}
			if v.Redacted == nil {
				v.Redacted = []int64{}
			}
			if a.json {
				return a.printJSON(v)
			}
			if len(res.Redacted) == 0 {
				_, err := fmt.Fprintf(a.stdout, "nothing to redact: %s already redacted\n", plural(len(res.Already), "event"))
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "redacted %s (%d payload bytes, %s of %d bytes) at seq %d by %s: %s\n",
				plural(len(res.Redacted), "event"), res.PayloadBytes, plural(int(res.Blobs), "blob"), res.BlobBytes, res.Record.Seq, termSafe(o.By), termSafe(o.Reason))
			return err
		},
	}
	cmd.Flags().Int64Var(&o.Event, "event", 0, "the seq of one event")
	cmd.Flags().StringVar(&o.Session, "session", "", "every event of this session")
	cmd.Flags().StringVar(&o.Memory, "memory", "", "every event of this memory namespace")
	cmd.Flags().StringVar(&o.Run, "run", "", "every event this run wrote")
	cmd.Flags().StringVar(&o.Reason, "reason", "", "why (required; recorded and listed by verify)")
	cmd.Flags().StringVar(&as, "as", "", "who asks (default: the OS user)")
	jsonFlag(cmd, a)
	return cmd
}

// postgresErasureNotice is what an operator must know, and do, after a
// redaction on PostgreSQL: the server keeps copies of the deleted bytes
// that no SQL statement rath can run removes.
const postgresErasureNotice = `rath: on PostgreSQL a redaction does not remove the deleted bytes from the
  WAL (pg_wal and any WAL archive), from base backups or from replicas; the
  old row versions also stay in the table files until VACUUM reclaims them.
  To remove them: VACUUM (FULL rewrites the tables) events, blobs and the
  projection tables, and expire the WAL archives, backups and replica copies
  taken before this redaction. docs/EVIDENCE.md says what redaction removes.
`

// afterErasure sees to it, after payloads were deleted, that the bytes
// leave the store's files, or says where they stay. On SQLite the
// writer's connection zeroed them in the pages it wrote (secure_delete),
// but the WAL still holds the pages as they were before, until a
// checkpoint resets it: the last process closing the store does, and
// while others keep it open (a worker, rath serve) a TRUNCATE checkpoint
// here does, unless one of them is reading meanwhile. On PostgreSQL it
// prints pgNotice: what stays in the server's copies.
func (a *app) afterErasure(ctx context.Context, rt *rath.Runtime, pgNotice string) {
	if a.dsn != "" {
		fmt.Fprint(a.stderr, pgNotice)
		return
	}
	var busy, logged, moved int
	err := rt.Store().DB().QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &moved)
	if err != nil || busy != 0 {
		fmt.Fprintf(a.stderr, "rath: another process is reading the store: %s-wal keeps the pages as they were before until a checkpoint resets it (the last process closing the store, or PRAGMA wal_checkpoint(TRUNCATE))\n", rath.DBFile)
	}
}

// redactionLines words verify's redactions, one line per run of
// consecutive seqs one redaction deleted: a retention deletes thousands.
func redactionLines(rs []eventlog.RedactionInfo) []string {
	var out []string
	for i := 0; i < len(rs); {
		j := i + 1
		for j < len(rs) && rs[j].RecordSeq == rs[i].RecordSeq && rs[j].Seq == rs[j-1].Seq+1 {
			j++
		}
		r := rs[i]
		if j-i == 1 {
			out = append(out, r.String())
		} else {
			out = append(out, fmt.Sprintf("seqs %d-%d: redacted at seq %d by %s: %s", r.Seq, rs[j-1].Seq, r.RecordSeq, r.By, r.Reason))
		}
		i = j
	}
	return out
}
