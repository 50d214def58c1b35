package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/fleet"
	"github.com/spf13/cobra"
)

func newMigrateCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "migrate",
		Short:   "Schema migrations of the store",
		Example: "rath migrate status",
		Args:    args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(argv) > 0 {
				return usagef(cmd, "unknown migrate command %q", argv[0])
			}
			return cmd.Help()
		},
	}
	status := &cobra.Command{
		Use:     "status",
		Short:   "List the schema migrations and whether each is applied",
		Example: "rath migrate status --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Opening the runtime would apply pending migrations; status
			// must report them as they are.
			if err := a.existing(); err != nil {
				return err
			}
			ms, err := rath.MigrationStatus(cmd.Context(), a.target())
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(ms)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tSTATE\tAPPLIED AT\tSOURCE")
			for _, m := range ms {
				state := "pending"
				if m.Applied {
					state = "applied"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Version, state, orDash(m.AppliedAt), m.Source)
			}
			return tw.Flush()
		},
	}
	jsonFlag(status, a)
	up := &cobra.Command{
		Use:     "up",
		Short:   "Apply pending schema migrations (creating the store's tables if needed)",
		Example: "rath --dsn postgres://rath@db:5432/rath migrate up",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.dsn != "" && !eventlog.IsPostgresDSN(a.dsn) {
				return usagef(cmd, "--dsn must be a postgres:// or postgresql:// URL")
			}
			if a.dsn == "" {
				if err := os.MkdirAll(a.dir, 0o755); err != nil {
					return err
				}
			}
			pending := map[int64]bool{}
			if before, err := rath.MigrationStatus(cmd.Context(), a.target()); err == nil {
				for _, m := range before {
					pending[m.Version] = !m.Applied
				}
			}
			if err := rath.Migrate(cmd.Context(), a.target()); err != nil {
				return err
			}
			ms, err := rath.MigrationStatus(cmd.Context(), a.target())
			if err != nil {
				return err
			}
			var v int64
			for _, m := range ms {
				if !m.Applied {
					continue
				}
				v = m.Version
				if pending[m.Version] {
					fmt.Fprintf(a.stdout, "applied %s%s\n", m.Source, migrationNotes[m.Version])
				}
			}
			fmt.Fprintf(a.stdout, "%s is at schema version %d\n", a.where(), v)
			// The job queue's tables too, so no submitter or worker
			// starts by creating them.
			qv, err := fleet.Migrate(cmd.Context(), a.target())
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "its job queue (River) is at version %d\n", qv)
			if pending[merkleMigration] {
				return a.buildTree(cmd)
			}
			return nil
		},
	}
	cmd.AddCommand(status, up)
	return cmd
}

// merkleMigration is the schema version that made the log a Merkle log.
const merkleMigration = 9

// migrationNotes say what a migration does to a store's data, where that
// is more than a schema change.
var migrationNotes = map[int64]string{
	merkleMigration:          ": the log becomes a Merkle log (docs/ARCHITECTURE.md): a salt per new event and the tree_hashes table; the events already in the log keep their hash chain and become the tree's first leaves",
	packedTreeMigration:      ": a tree_hashes row may hold several hashes (docs/ARCHITECTURE.md, \"The tree\"); no row changes, and a rath older than this one refuses the store",
	subjectKeysMigration:     ": the subject_keys table, one data key per subject wrapped by the key-encryption key (docs/EVIDENCE.md, \"Erasure by crypto-shredding\"); no row changes: content stays in clear until RATH_KEK_FILE is set, and is sealed from then on, in the log and in the read models' content columns (rath rebuild seals the columns of content sealed before)",
	blobCopiesMigration:      ": an index of blob addresses, so a sealed blob is kept once per subject and erasing one leaves another's copy readable, and the runs projection's subject column (empty for the runs already there); no event changes",
	sealedByKeyMigration:     ": the sealed_by_key index of the events an erasure reads (those that start or link sessions, and memories), by the key they are sealed under, filled from the payloads already stored; no event changes",
	sessionCountersMigration: ": on PostgreSQL the sessions read model is written again with its counters last, so that an append's update of its session logs fewer bytes (a copy of every session row, once); no event changes",
	sealedCallsMigration:     ": sealed_by_key also indexes model calls and placements, so an erasure recounts the usage and sandbox of the sessions they are in; filled from the payloads already stored, no event changes",
	checkpointsMigration:     ": the store gets its id (the origin of its checkpoints) and the append-only checkpoints and checkpoint_cosignatures tables; nothing is signed until a process appends with RATH_SIGNING_KEY or runs rath checkpoint --sign (docs/EVIDENCE.md)",
}

// checkpointsMigration is the schema version that added signed
// checkpoints.
const checkpointsMigration = 10

// subjectKeysMigration made subject_keys; blobCopiesMigration indexed
// blob addresses for copies per subject; sealedByKeyMigration and
// sealedCallsMigration index sealed events by key for erasures.
const (
	subjectKeysMigration = 16
	blobCopiesMigration  = 19
	sealedByKeyMigration = 23
	sealedCallsMigration = 24
	// sessionCountersMigration rewrote PostgreSQL's sessions table with
	// the columns an append updates last.
	sessionCountersMigration = 27
)

// packedTreeMigration is the schema version whose tree_hashes rows may
// hold several hashes.
const packedTreeMigration = 14

// buildTree opens the store, which builds the Merkle tree over the events
// already in the log, and says so.
func (a *app) buildTree(cmd *cobra.Command) error {
	ctx := cmd.Context()
	rt, err := a.open(ctx)
	if err != nil {
		return err
	}
	head, err := rt.Store().Head(ctx)
	if err != nil {
		return err
	}
	if head.Seq == 0 {
		return nil
	}
	tree, err := rt.Store().TreeHead(ctx)
	if err != nil {
		return err
	}
	if tree.Size < head.Seq {
		fmt.Fprintf(a.stdout, "the Merkle tree over the %d existing events is built when the store is next opened with its HMAC key (RATH_HMAC_KEY)\n", head.Seq)
		return nil
	}
	fmt.Fprintf(a.stdout, "built the Merkle tree over the %d existing events: tree head %s (keep it: rath verify --tree %s)\n", head.Seq, tree, tree)
	return nil
}
