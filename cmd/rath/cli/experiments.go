package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/eval"
)

func newExperimentsCmd(a *app) *cobra.Command {
	var dataset string
	cmd := &cobra.Command{
		Use:   "experiments [--dataset D]",
		Short: "List experiments with each scorer's mean; compare two side by side",
		Long: `experiments lists the experiments (oldest first), with --dataset only
those over that dataset, and each scorer's mean over the items it scored
(the last score of each item and scorer counts).`,
		Example: "rath experiments --dataset smoke\nrath experiments compare baseline candidate",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			xs, err := eval.ListExperiments(ctx, rt, dataset)
			if err != nil {
				return err
			}
			if a.json {
				if xs == nil {
					xs = []*eval.Experiment{}
				}
				return a.printJSON(xs)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "EXPERIMENT\tDATASET\tSCORER\tMEAN\tITEMS")
			for _, x := range xs {
				if len(x.Means) == 0 {
					fmt.Fprintf(tw, "%s\t%s\t-\t-\t0\n", termSafe(x.Name), termSafe(x.Dataset))
				}
				for _, m := range x.Means {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%d\n", termSafe(x.Name), termSafe(x.Dataset), termSafe(m.Scorer), m.Mean, m.Items)
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&dataset, "dataset", "", "only experiments over this dataset")
	jsonFlag(cmd, a)
	cmd.AddCommand(newExperimentsCompareCmd(a))
	return cmd
}

func newExperimentsCompareCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare experiment B with A: per scorer means, per item deltas, the items that flipped",
		Long: `compare sets experiment B beside A: each scorer's mean in both and the
difference, each item's score by each scorer in both (B minus A), and
the items that flipped: passed (a value of 0.5 or more) in one and failed
in the other. Items scored in one experiment only are listed apart.`,
		Example: "rath experiments compare baseline candidate --json",
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			c, err := eval.Compare(ctx, rt, argv[0], argv[1])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(c)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCORER\tMEAN A\tMEAN B\tDELTA")
			for _, s := range c.Scorers {
				fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%+.3f\n", termSafe(s.Scorer), s.MeanA, s.MeanB, s.Delta)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout)
			tw = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ITEM\tSCORER\tA\tB\tDELTA\tFLIPPED")
			for _, d := range c.Items {
				flipped := ""
				if d.Flipped {
					flipped = "flipped"
				}
				fmt.Fprintf(tw, "%s\t%s\t%g\t%g\t%+g\t%s\n", termSafe(d.Item), termSafe(d.Scorer), d.A, d.B, d.Delta, flipped)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%d of %d item scores flipped\n", len(c.Flipped), len(c.Items))
			for _, o := range c.OnlyA {
				fmt.Fprintf(a.stdout, "only in %s: %s\n", termSafe(c.A), termSafe(o))
			}
			for _, o := range c.OnlyB {
				fmt.Fprintf(a.stdout, "only in %s: %s\n", termSafe(c.B), termSafe(o))
			}
			return nil
		},
	}
	jsonFlag(cmd, a)
	return cmd
}
