package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/spf13/cobra"
)

type copyView struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Events int64  `json:"events"`
	Blobs  int64  `json:"blobs"`
	// Head is the head both logs verify to.
	Head string `json:"head,omitempty"`
}

func newCopyCmd(a *app) *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "copy --from DIR|DSN --to DIR|DSN",
		Short: "Copy a whole log to another store, event for event (SQLite ⇄ PostgreSQL)",
		Long: `copy moves a whole event log between stores: a runtime directory (the
embedded SQLite store) or a PostgreSQL DSN (postgres://…) on either side.
It verifies the source first, copies every event (same seqs, hashes and
times) and blob in one transaction, rebuilds the destination's
projections, and verifies the destination: both print the same head.
The destination must be empty. A keyed chain needs its key in
$RATH_HMAC_KEY; the copy keeps the key.`,
		Example: "rath copy --from ./.rath --to postgres://rath@db.internal:5432/rath",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usagef(cmd, "both --from and --to are required")
			}
			if from == to {
				return usagef(cmd, "--from and --to are the same store")
			}
			ctx := cmd.Context()
			src, err := a.openStoreAt(ctx, from, false)
			if err != nil {
				return err
			}
			defer src.close()
			rep, err := src.rt.Store().Verify(ctx, eventlog.VerifyOptions{})
			if err != nil {
				return err
			}
			if !rep.OK() {
				return fmt.Errorf("the source does not verify, nothing copied: %w", rep.Failure)
			}
			dst, err := a.openStoreAt(ctx, to, true)
			if err != nil {
				return err
			}
			defer dst.close()
			stats, err := dst.rt.Store().CopyFrom(ctx, src.rt.Store(), a.progress("copy"))
			if err != nil {
				if errors.Is(err, eventlog.ErrNotEmpty) {
					return fmt.Errorf("%s already holds a log: %w", describeTarget(to), err)
				}
				return err
			}
			if _, err := dst.rt.Rebuild(ctx, nil); err != nil {
				return fmt.Errorf("rebuild the destination's projections: %w", err)
			}
			after, err := dst.rt.Verify(ctx, eventlog.VerifyOptions{Head: &stats.Head})
			if err != nil {
				return err
			}
			if !after.OK() {
				return fmt.Errorf("the copy does not verify: %w", after.Failure)
			}
			v := copyView{From: describeTarget(from), To: describeTarget(to), Events: stats.Events, Blobs: stats.Blobs}
			if stats.Head.Seq > 0 {
				v.Head = stats.Head.String()
			}
			if a.json {
				return a.printJSON(v)
			}
			fmt.Fprintf(a.stdout, "copied %d events and %d blobs from %s to %s\n", v.Events, v.Blobs, v.From, v.To)
			if v.Head != "" {
				fmt.Fprintf(a.stdout, "head on both     %s\n", v.Head)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the source: a runtime directory or a postgres:// DSN")
	cmd.Flags().StringVar(&to, "to", "", "the destination (empty): a runtime directory or a postgres:// DSN")
	jsonFlag(cmd, a)
	return cmd
}

// describeTarget names a directory or a DSN (without its password).
func describeTarget(t string) string {
	if eventlog.IsPostgresDSN(t) {
		return describeDSN(t)
	}
	return t
}

// openedStore is a runtime opened on a store other than the app's own.
type openedStore struct {
	rt      *rath.Runtime
	scratch string // a per-process directory made for a DSN's runtime
}

func (o *openedStore) close() {
	o.rt.Close()
	if o.scratch != "" {
		os.RemoveAll(o.scratch)
	}
}

// openStoreAt opens the store at target (a runtime directory or a DSN);
// without create it must exist already.
func (a *app) openStoreAt(ctx context.Context, target string, create bool) (*openedStore, error) {
	other := &app{dir: target, hmacKey: a.hmacKey}
	o := &openedStore{}
	if eventlog.IsPostgresDSN(target) {
		dir, err := os.MkdirTemp("", "rath-copy-")
		if err != nil {
			return nil, err
		}
		other.dir, other.dsn, o.scratch = dir, target, dir
	} else if !create {
		if _, err := os.Stat(filepath.Join(target, rath.DBFile)); err != nil {
			return nil, fmt.Errorf("no rath store in %s", target)
		}
	}
	if !create {
		if err := other.existing(); err != nil {
			os.RemoveAll(o.scratch)
			return nil, err
		}
	}
	rt, err := rath.OpenWith(ctx, rath.Options{Dir: other.dir, DSN: other.dsn, HMACKey: a.hmacKey})
	if err != nil {
		os.RemoveAll(o.scratch)
		return nil, fmt.Errorf("open %s: %w", describeTarget(target), err)
	}
	o.rt = rt
	return o, nil
}
