package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/gorath/rath/memory"
	"github.com/spf13/cobra"
)

func newMemoryCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Add, recall, list and forget long-term memories (namespaces like user/ana, agent/root.coder, resources)",
		Long: `memory works on the memory backend the config file's "memory" entry selects
($RATH_HOME/config.json): by default the runtime's local memory, where every
write is an event in the log and recall searches a BM25 index kept beside the
database (memory.bleve), caught up from the log when opened; or an OpenViking
server ({"memory": {"backend": "openviking", "url": …, "api_key_env": …}}),
each write and forget recorded in the log too. See docs/CONFIG.md.`,
		Example: `rath memory add user/ana "prefers short answers"
rath memory recall user/ana "how should answers look" -k 3`,
		Args: args(cobra.NoArgs),
	}
	cmd.AddCommand(newMemoryAddCmd(a), newMemoryRecallCmd(a), newMemoryListCmd(a), newMemoryForgetCmd(a))
	return cmd
}

// memory opens the runtime (creating the store if create) and the memory
// backend the config file selects.
func (a *app) memory(ctx context.Context, create bool) (memory.Memory, error) {
	cfg, err := configuredMemory()
	if err != nil {
		return nil, err
	}
	open := a.open
	if create {
		open = a.create
	}
	rt, err := open(ctx)
	if err != nil {
		return nil, err
	}
	return rt.OpenMemory(ctx, cfg)
}

func newMemoryAddCmd(a *app) *cobra.Command {
	var meta []string
	cmd := &cobra.Command{
		Use:     "add NS TEXT...",
		Short:   "Remember TEXT in namespace NS and print its id",
		Example: `rath memory add user/ana "prefers short answers" --meta source=chat`,
		Args:    args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			m := map[string]string{}
			for _, kv := range meta {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef(cmd, "--meta %q: want KEY=VALUE", kv)
				}
				m[k] = v
			}
			if len(m) == 0 {
				m = nil
			}
			ctx := cmd.Context()
			mem, err := a.memory(ctx, true)
			if err != nil {
				return err
			}
			text, err := textArg(a.stdin, argv[1:])
			if err != nil {
				return err
			}
			id, err := mem.Remember(ctx, argv[0], text, m)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]string{"id": id, "namespace": argv[0]})
			}
			_, err = fmt.Fprintln(a.stdout, id)
			return err
		},
	}
	cmd.Flags().StringArrayVar(&meta, "meta", nil, "metadata KEY=VALUE (repeatable)")
	jsonFlag(cmd, a)
	return cmd
}

func newMemoryRecallCmd(a *app) *cobra.Command {
	var k int
	cmd := &cobra.Command{
		Use:     "recall NS QUERY...",
		Short:   "Recall the memories of NS that best match QUERY (BM25), best first",
		Example: `rath memory recall user/ana "answer style" -k 3`,
		Args:    args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			mem, err := a.memory(ctx, false)
			if err != nil {
				return err
			}
			hits, err := mem.Recall(ctx, argv[0], strings.Join(argv[1:], " "), k)
			if err != nil {
				return err
			}
			if a.json {
				if hits == nil {
					hits = []memory.Hit{}
				}
				return a.printJSON(hits)
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSCORE\tTEXT")
			for _, h := range hits {
				fmt.Fprintf(tw, "%s\t%.3f\t%s\n", h.ID, h.Score, clip(h.Text, 100))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVarP(&k, "k", "k", memory.DefaultK, "how many memories")
	jsonFlag(cmd, a)
	return cmd
}

func newMemoryListCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list NS",
		Short:   "List the live memories of NS in the order they were remembered",
		Example: "rath memory list user/ana",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			mem, err := a.memory(ctx, false)
			if err != nil {
				return err
			}
			items, err := mem.List(ctx, argv[0])
			if err != nil {
				return err
			}
			if a.json {
				if items == nil {
					items = []memory.Item{}
				}
				return a.printJSON(items)
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSEQ\tSESSION\tTEXT")
			for _, it := range items {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", it.ID, it.Seq, orDash(it.Session), clip(it.Text, 100))
			}
			return tw.Flush()
		},
	}
	jsonFlag(cmd, a)
	return cmd
}

func newMemoryForgetCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "forget NS ID",
		Short: "Record a tombstone for memory ID of NS: it is never recalled again",
		Long: `forget records a memory.forgotten tombstone for memory ID of NS: recall,
list and the memory index drop it, also after rebuilds.

Forgetting is not erasure. The memory's text stays in the event log, in the
memory.remembered event that added it (and in the session it was extracted
from, if any): the log is append-only and hash-chained, so rath events,
rath export of that session and a copy of the store still show it.`,
		Example: "rath memory forget user/ana m-0123456789abcdef",
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			mem, err := a.memory(ctx, false)
			if err != nil {
				return err
			}
			if err := mem.Forget(ctx, argv[0], argv[1]); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]string{"forgotten": argv[1], "namespace": argv[0]})
			}
			_, err = fmt.Fprintf(a.stdout, "forgot %s\n", argv[1])
			return err
		},
	}
	jsonFlag(cmd, a)
	return cmd
}
