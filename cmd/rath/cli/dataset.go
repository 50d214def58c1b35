package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gorath/rath/eval"
	"github.com/gorath/rath/internal/jsonview"
)

func newDatasetCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Create, list and show datasets: recorded runs pinned by hash, or cases from JSONL",
		Args:  args(cobra.NoArgs),
	}
	cmd.AddCommand(newDatasetCreateCmd(a), newDatasetListCmd(a), newDatasetShowCmd(a))
	return cmd
}

// itemView is one dataset item as `rath dataset show --json` prints it.
type itemView struct {
	ID           string         `json:"id"`
	Run          string         `json:"run,omitempty"`
	InputSession string         `json:"input_session,omitempty"`
	LastSeq      int64          `json:"last_seq,omitempty"`
	LastLeaf     string         `json:"last_leaf,omitempty"`
	Input        any            `json:"input,omitempty"`
	Ideal        any            `json:"ideal,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Seq          int64          `json:"seq"`
}

type datasetView struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Source     string     `json:"source"`
	CreatedSeq int64      `json:"created_seq"`
	Items      []itemView `json:"items"`
}

func datasetViewOf(ds *eval.Dataset) datasetView {
	v := datasetView{ID: ds.ID, Name: ds.Name, Source: ds.Source, CreatedSeq: ds.CreatedSeq, Items: []itemView{}}
	for _, it := range ds.Items {
		iv := itemView{ID: it.ID, Run: it.Run, InputSession: it.InputSession, LastSeq: it.LastSeq, LastLeaf: it.LastLeaf, Metadata: it.Metadata, Seq: it.Seq}
		if len(it.Input) > 0 {
			iv.Input = it.Input
		}
		if len(it.Ideal) > 0 {
			iv.Ideal = it.Ideal
		}
		v.Items = append(v.Items, iv)
	}
	return v
}

func newDatasetCreateCmd(a *app) *cobra.Command {
	var fromRuns bool
	var workflow, since, jsonl, tenant string
	var status, runs []string
	cmd := &cobra.Command{
		Use:   "create NAME (--runs [--workflow W] [--status S] [--since D] [--run ID ...] | --jsonl FILE)",
		Short: "Record a dataset: recorded runs, each pinned by its last event's leaf hash, or cases from a JSONL file",
		Long: `dataset create records a dataset as events on the stream dataset:NAME.
With --runs it takes the recorded runs that match --workflow, --status
(done, failed, canceled, ...), --since (a duration back from now or a
date) and --run (repeatable: these runs, by id); without --status or
--run only finished runs are taken. Each item pins its run, the run's
input session and the seq and leaf hash of the run's last event, so a
score of it names one exact record.
With --jsonl FILE (- for stdin) each line is a case with no recording
yet: {"input": ..., "ideal": ..., "metadata": {...}}, which is also the
JSONL of OpenAI's evals (input a list of chat messages).
A name already taken is an error: datasets are not rewritten.`,
		Example: "rath dataset create smoke --runs --workflow chat --status done --since 24h\nrath dataset create golden --jsonl golden.jsonl",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if fromRuns == (jsonl != "") {
				return usagef(cmd, "give --runs or --jsonl FILE")
			}
			if jsonl != "" && (workflow != "" || since != "" || len(status) > 0 || len(runs) > 0) {
				return usagef(cmd, "--workflow, --status, --since and --run select runs: they go with --runs")
			}
			sel := eval.RunSelection{Workflow: workflow, Runs: runs, Tenant: tenant}
			for _, st := range status {
				for w := range strings.SplitSeq(st, ",") {
					if !slices.Contains(statusWords, w) {
						return usagef(cmd, "--status %q: want some of %s", w, strings.Join(statusWords, ", "))
					}
					sel.Status = append(sel.Status, jsonview.StatusStored(w))
				}
			}
			after, err := parseSince(since, time.Now())
			if err != nil {
				return usagef(cmd, "--since: %v", err)
			}
			sel.Since = after
			var in io.Reader
			if jsonl != "" {
				if jsonl == "-" {
					in = a.stdin
				} else {
					f, err := os.Open(jsonl)
					if err != nil {
						return usagef(cmd, "--jsonl: %v", err)
					}
					defer f.Close()
					in = f
				}
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			var ds *eval.Dataset
			if in != nil {
				ds, err = eval.CreateFromJSONLIn(ctx, rt, tenant, argv[0], in)
			} else {
				ds, err = eval.CreateFromRuns(ctx, rt, argv[0], sel)
			}
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(datasetViewOf(ds))
			}
			fmt.Fprintf(a.stdout, "dataset %s: %d items (seq %d)\n", termSafe(ds.Name), len(ds.Items), ds.CreatedSeq)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&fromRuns, "runs", false, "take recorded runs (filtered by --workflow, --status, --since, --run)")
	fl.StringVar(&workflow, "workflow", "", "only runs of this workflow")
	fl.StringSliceVar(&status, "status", nil, "only runs with one of these statuses: "+strings.Join(statusWords, ", "))
	fl.StringVar(&since, "since", "", "only runs started within a duration (24h) or after a date (2026-11-25)")
	fl.StringArrayVar(&runs, "run", nil, "this run, by id (repeatable)")
	fl.StringVar(&jsonl, "jsonl", "", "cases from a JSONL file (- for stdin): {\"input\": ..., \"ideal\": ..., \"metadata\": {...}}")
	tenantFlag(cmd, &tenant, "the tenant the dataset belongs to; with --runs, only its runs are taken")
	jsonFlag(cmd, a)
	return cmd
}

func newDatasetListCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the datasets: name, source, items, when created",
		Example: "rath dataset list --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			infos, err := eval.ListDatasets(ctx, rt)
			if err != nil {
				return err
			}
			if a.json {
				if infos == nil {
					infos = []eval.DatasetInfo{}
				}
				return a.printJSON(infos)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tITEMS\tCREATED\tSEQ")
			for _, d := range infos {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", termSafe(d.Name), d.Source, d.Items, d.Created, d.CreatedSeq)
			}
			return tw.Flush()
		},
	}
	jsonFlag(cmd, a)
	return cmd
}

func newDatasetShowCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "show NAME",
		Short:   "Show a dataset's items: run, input session, the pinned last event and its leaf hash",
		Example: "rath dataset show smoke --json",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			ds, err := eval.LoadDataset(ctx, rt, argv[0])
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(datasetViewOf(ds))
			}
			fmt.Fprintf(a.stdout, "dataset %s (%s, %d items, seq %d)\n", termSafe(ds.Name), ds.Source, len(ds.Items), ds.CreatedSeq)
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ITEM\tRUN\tINPUT SESSION\tPINNED\tINPUT")
			for _, it := range ds.Items {
				pinned := "-"
				if it.Run != "" {
					pinned = fmt.Sprintf("%d:%.16s", it.LastSeq, it.LastLeaf)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termSafe(it.ID), orDash(termSafe(it.Run)), orDash(termSafe(it.InputSession)), pinned, clip(string(it.Input), 60))
			}
			return tw.Flush()
		},
	}
	jsonFlag(cmd, a)
	return cmd
}
