package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/internal/jsonview"
)

type verifyView = jsonview.Verify

// verifyOut is what verify prints: the log's check and the scores'.
type verifyOut struct {
	jsonview.Verify
	Scores *scoresView `json:"scores,omitempty"`
}

// scoresView is the check of the scores: how many scores and dataset
// items, the events they read, and the first that does not match.
type scoresView struct {
	Scores int `json:"scores"`
	Items  int `json:"items"`
	// Counterfactuals are the counterfactual runs' records of the event
	// they replaced, checked as scores are.
	Counterfactuals int    `json:"counterfactuals,omitempty"`
	Reads           int    `json:"reads"`
	Failure         string `json:"failure,omitempty"`
	ScoreSeq        int64  `json:"score_seq,omitempty"`
	EventSeq        int64  `json:"event_seq,omitempty"`
}

func newVerifyCmd(a *app) *cobra.Command {
	var headFlag, treeFlag string
	var logKeys, witnessKeys []string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Recompute every event's leaf and the Merkle tree, check every blob and the projections; print the heads",
		Long: `verify recomputes every event's Merkle leaf from its row (its header and
its salted payload commitment, or for events written before the Merkle
log their hash chain), checks the hash column of each, recomputes the
Merkle tree and compares every stored tree hash, checks that seqs are
contiguous and that every blob matches its hash, and prints the head as
SEQ:HASH and the tree head as SIZE:ROOT. Keep them somewhere else: "rath
verify --head SEQ:HASH" or "--tree SIZE:ROOT" later proves the log still
holds them, which catches truncation (and, with --tree, a history
rewritten with every hash recomputed).
Then it rebuilds the projections (sessions, chunks, lineage, usage, runs:
what show, sessions, graph, runs and dossiers display) from the log into a
scratch database and compares them row for row with the store's, without
changing the store. Last it checks every signed checkpoint of the log
(rath checkpoint) against the tree at its size, its signature and its
witnesses' cosignatures, and says what they attest: "attested: N
checkpoints signed by KEY, latest size S, witnessed by W", or "locally
consistent, not attested" for a store without checkpoints. Each
checkpoint's signature is checked against the key recorded with it;
--log-key (a verifier.vkey file) makes only that key trusted. Each witness
key that cosigned is shown with its key id (the SHA-256 of its public
key): the store names its witnesses itself, so without --witness-key the
line says "no witness pinned"; with --witness-key FILE (repeatable: the
witnesses' verifier.vkey files, got from the witnesses) verify fails
unless one of those keys cosigned a checkpoint, and says up to which size
they did. Exit code 3 on any failure, naming the first bad seq, the first
differing table and row, the size of the first checkpoint the log
contradicts, or the witness keys that cosigned when no pinned one did.
Scores too: every event a score read (and every run's last event a
dataset item pins, and the event each counterfactual run replaced) must
still hash to the leaf recorded with it; a mismatch names the score's
(or counterfactual's) seq and the event's.`,
		Example: "rath verify --head 42:3f2a...\nrath verify --log-key log.vkey --witness-key witness.vkey",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var opts eventlog.VerifyOptions
			if headFlag != "" {
				h, err := eventlog.ParseHead(headFlag)
				if err != nil {
					return usagef(cmd, "--head: %v", err)
				}
				opts.Head = &h
			}
			if treeFlag != "" {
				h, err := eventlog.ParseTreeHead(treeFlag)
				if err != nil {
					return usagef(cmd, "--tree: %v", err)
				}
				opts.Tree = &h
			}
			if err := a.pinKeys(logKeys, witnessKeys); err != nil {
				return usagef(cmd, "%v", err)
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			rep, err := rt.Verify(ctx, opts)
			if err != nil {
				return err
			}
			// The scores after the log: a failure of the log is named
			// first, and the scores that read the event it names with it.
			scores, err := eval.VerifyScores(ctx, rt)
			if err != nil && rep.OK() {
				return err
			}
			v := verifyOut{Verify: jsonview.VerifyOf(rep)}
			var scoreErr error
			if scores != nil {
				v.Scores = &scoresView{Scores: scores.Scores, Items: scores.Items, Counterfactuals: scores.Counterfactuals, Reads: scores.Reads}
				if f := scores.Failure; f != nil {
					scoreErr = f
					v.Scores.Failure, v.Scores.ScoreSeq, v.Scores.EventSeq = f.Error(), f.ScoreSeq, f.EventSeq
					if v.OK {
						v.OK, v.FailedSeq, v.Failure = false, f.EventSeq, f.Error()
					}
				}
			}
			if a.json {
				if err := a.printJSON(v); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "events checked  %d\n", v.Events)
				fmt.Fprintf(a.stdout, "blobs checked   %d\n", v.Blobs)
				if rt.Store().Sealed() || rep.Sealed > 0 {
					fmt.Fprintf(a.stdout, "content         sealed under subjects' keys: %d events, %d blobs (%d not opened: erased, or no key)\n", rep.Sealed, rep.SealedBlobs, rep.Unopened)
				} else {
					fmt.Fprintln(a.stdout, "content         not encrypted (no key-encryption key: rath keys kek, RATH_KEK_FILE)")
				}
				switch {
				case v.Head != "":
					fmt.Fprintf(a.stdout, "head            %s\n", v.Head)
					fmt.Fprintf(a.stdout, "tree            %s\n", v.Tree)
					if rep.NotInTree > 0 {
						// PostgreSQL builds the tree after the commit; this
						// verify could not build it (a read-only role).
						fmt.Fprintf(a.stdout, "not in the tree %d events after the recorded tree head, their rows checked\n", rep.NotInTree)
					}
				case rep.OK():
					fmt.Fprintln(a.stdout, "head            (empty log)")
				}
				for _, line := range redactionLines(v.Redactions) {
					// By and the reason are whatever the redaction was given.
					fmt.Fprintf(a.stdout, "redacted        %s\n", termSafe(line))
				}
				for _, e := range v.Erasures {
					// The subject, by and reason are whatever the erasure was given.
					fmt.Fprintf(a.stdout, "erased          %s\n", termSafe(e.String()))
				}
				if p := v.Projections; p != nil && p.OK() {
					fmt.Fprintf(a.stdout, "projections     equal a rebuild from the log through seq %d (%d rows)\n", p.Seq, p.Rows)
				}
				if v.Attested != "" {
					fmt.Fprintf(a.stdout, "checkpoints     %s\n", v.Attested)
				}
				if sc := v.Scores; sc != nil && sc.Failure == "" && (sc.Scores > 0 || sc.Items > 0) {
					fmt.Fprintf(a.stdout, "scores          %d scores and %d dataset items match the %d events they read\n", sc.Scores, sc.Items, sc.Reads)
				}
				if sc := v.Scores; sc != nil && sc.Failure == "" && sc.Counterfactuals > 0 {
					fmt.Fprintf(a.stdout, "counterfactuals %d counterfactual runs name the events they replaced as the log holds them\n", sc.Counterfactuals)
				}
				if v.OK {
					fmt.Fprintln(a.stdout, "ok")
				}
			}
			switch {
			case rep.Failure != nil && scoreErr != nil:
				return errors.Join(rep.Failure, scoreErr)
			case rep.Failure != nil:
				return rep.Failure
			}
			return scoreErr
		},
	}
	cmd.Flags().StringVar(&headFlag, "head", "", "a head SEQ:HASH recorded earlier, which the log must still hold")
	cmd.Flags().StringVar(&treeFlag, "tree", "", "a tree head SIZE:ROOT recorded earlier, which the log's tree must still extend")
	cmd.Flags().StringArrayVar(&logKeys, "log-key", nil, "the log's verifier key file (or key text) that must have signed every checkpoint; repeat for a rotation")
	cmd.Flags().StringArrayVar(&witnessKeys, "witness-key", nil, "a witness's verifier key file (or key text) you trust; one of them must have cosigned a checkpoint (repeatable)")
	jsonFlag(cmd, a)
	return cmd
}
