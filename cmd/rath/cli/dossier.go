package cli

import (
	"bytes"
	"github.com/gorath/rath"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gorath/rath/dossier"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/replay"
	"github.com/spf13/cobra"
)

func newDossierCmd(a *app) *cobra.Command {
	var out, format, head, bundleDir string
	var doReplay, noVerify bool
	var logKeys, witnessKeys []string
	cmd := &cobra.Command{
		Use:   "dossier RUN",
		Short: "Write a run's evidence dossier: one self-contained HTML file (or --format md|jsonl)",
		Long: `dossier gathers everything about a run from the log: the session graph
(SVG), transcripts with authors, every tool call with its sandbox, arguments,
output and file diffs, provider calls with usage and latency, memory writes
and recalls, Selector decisions, the verify result and the chain head, and
with --replay the replay verdict. The HTML needs no network.
--bundle DIR verifies the run's attested bundle first and shows what it
attests. --log-key and --witness-key (repeatable) pin the log's key and
the witnesses' keys you trust, got from their holders: the bundle and the
store name their own, so without pins the dossier says "not pinned"; with
them a bundle no pinned witness cosigned, or signed by another key, fails
(exit code 3), naming each witness key it saw by its key id.`,
		Example: "rath dossier run-0123456789abcdef -o run.html --replay\nrath dossier run-0123456789abcdef --format md > run.md",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if !cmd.Flags().Changed("format") && out != "" {
				if e := strings.TrimPrefix(filepath.Ext(out), "."); e == "md" || e == "jsonl" {
					format = e
				}
			}
			if !slices.Contains(dossier.Formats(), format) {
				return usagef(cmd, "--format %q: want html, md or jsonl", format)
			}
			if err := a.pinKeys(logKeys, witnessKeys); err != nil {
				return usagef(cmd, "%v", err)
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			opts := dossier.Options{SkipVerify: noVerify}
			if head != "" {
				h, err := eventlog.ParseHead(head)
				if err != nil {
					return usagef(cmd, "--head: %v", err)
				}
				opts.Head = &h
			}
			if bundleDir != "" {
				if opts.Attestation, err = a.bundleAttestation(bundleDir, argv[0]); err != nil {
					return err
				}
			}
			if doReplay {
				wf, err := a.workflowForRun(ctx, rt, argv[0], rath.ReplayMode)
				if err != nil {
					return err
				}
				if opts.Replay, err = replay.Run(ctx, rt, argv[0], wf, replay.WithProgress(a.progress("replay"))); err != nil {
					return err
				}
				opts.Replay.Notes = append(opts.Replay.Notes, resolutionNotes(ctx, rt, argv[0])...)
			}
			d, err := dossier.Build(ctx, rt, argv[0], opts)
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				err = d.Render(a.stdout, format)
			} else {
				// Render first: a failure leaves no half-written file.
				var buf bytes.Buffer
				if err := d.Render(&buf, format); err != nil {
					return err
				}
				err = os.WriteFile(out, buf.Bytes(), 0o644)
			}
			if err == nil && opts.Replay != nil && !opts.Replay.OK() {
				// The dossier holds the divergence; the exit code says it too.
				return errDiverged
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to FILE instead of stdout (its extension picks md or jsonl)")
	cmd.Flags().StringVar(&format, "format", "html", "html, md or jsonl")
	cmd.Flags().BoolVar(&doReplay, "replay", false, "replay the run first and include the verdict")
	cmd.Flags().StringVar(&bundleDir, "bundle", "", "show the attestation of this run's bundle (rath export RUN --bundle DIR), verified first")
	cmd.Flags().StringArrayVar(&logKeys, "log-key", nil, "the log's verifier key file (or key text) you trust, for the bundle and the store's checkpoints")
	cmd.Flags().StringArrayVar(&witnessKeys, "witness-key", nil, "a witness's verifier key file (or key text) you trust; one must have cosigned (repeatable)")
	cmd.Flags().BoolVar(&noVerify, "no-verify", false, "skip verifying the hash chain")
	cmd.Flags().StringVar(&head, "head", "", "verify against a head SEQ:HASH kept elsewhere")
	return cmd
}
