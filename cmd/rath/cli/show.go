package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gorath/rath"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
	"github.com/spf13/cobra"
)

// chunkView is one transcript entry with its index.
type chunkView struct {
	Index int `json:"index"`
	events.Chunk
}

type showView struct {
	Session sessionView `json:"session"`
	// AtSeq is the seq the session was read at (--at), 0 for the head.
	AtSeq  int64       `json:"at_seq,omitempty"`
	Chunks []chunkView `json:"chunks"`
	// Approvals are the requests made on the session (tool calls a person
	// approved or rejected, questions), marked beside their calls.
	Approvals []approvalMark `json:"approvals,omitempty"`
	// Attachments are the tool results' images, resources and structured
	// content.
	Attachments []attachmentView `json:"attachments,omitempty"`
	// Counterfactual says what the session is the fork of a counterfactual
	// run of: the run, the original and what was replaced.
	Counterfactual *events.CounterfactualForked `json:"counterfactual,omitempty"`
}

func newShowCmd(a *app) *cobra.Command {
	var at int64
	var attDir string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's metadata and transcript (roles, authors, tool calls)",
		Example: `rath show s-0123456789abcdef0123
rath show s-0123456789abcdef0123 --at 42 --json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			if cmd.Flags().Changed("at") && at <= 0 {
				return usagef(cmd, "--at must be a positive seq, got %d", at)
			}
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			id := argv[0]
			var s *session.Session
			if at > 0 {
				s, err = rt.SessionAt(ctx, id, at)
			} else {
				s, err = rt.Session(ctx, id)
			}
			if errors.Is(err, session.ErrNotFound) {
				return fmt.Errorf("show: %w (list sessions with \"rath sessions\")", err)
			}
			if err != nil {
				return err
			}
			row, err := rt.Reader().Session(ctx, id)
			if err != nil {
				return err
			}
			// The row is the head; the handle is the state at --at.
			v := showView{Session: newSessionView(row, s.Parents()), AtSeq: at}
			v.Session.Chunks, v.Session.Version = int64(s.Len()), s.Version()
			v.Session.Backend, v.Session.Spec, v.Session.Usage = s.Placement().Backend, s.Placement().Spec, s.Usage()
			for i, c := range s.Chunks() {
				v.Chunks = append(v.Chunks, chunkView{Index: i, Chunk: c})
			}
			if v.Chunks == nil {
				v.Chunks = []chunkView{}
			}
			if v.Approvals, err = approvalMarks(ctx, rt, id); err != nil {
				return err
			}
			if attDir != "" {
				if err := os.MkdirAll(attDir, 0o755); err != nil {
					return err
				}
			}
			if v.Attachments, err = sessionAttachments(ctx, rt, id, at, attDir); err != nil {
				return err
			}
			if v.Counterfactual, err = counterfactualOf(ctx, rt, id); err != nil {
				return err
			}
			if a.json {
				return a.printJSON(v)
			}
			// Transcripts hold model text and tool output: escaped.
			tw := &termWriter{w: a.stdout}
			printShow(tw, v)
			printAttachments(tw, v.Attachments)
			return tw.Flush()
		},
	}
	cmd.Flags().Int64Var(&at, "at", 0, "show the session as it was right after the event at this seq")
	cmd.Flags().StringVar(&attDir, "attachments", "", "write the tool results' images and other kept parts into this directory")
	jsonFlag(cmd, a)
	return cmd
}

// counterfactualOf returns the counterfactual.forked event of the run
// that continued on session id, nil if none did.
func counterfactualOf(ctx context.Context, rt *rath.Runtime, id string) (*events.CounterfactualForked, error) {
	evs, err := rt.Store().Read(ctx, eventlog.Query{Types: []string{events.TypeCounterfactualForked}})
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		p, err := ev.Decode()
		if errors.Is(err, events.ErrRedacted) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if c := p.(*events.CounterfactualForked); c.Session == id {
			return c, nil
		}
	}
	return nil, nil
}

func printShow(w io.Writer, v showView) {
	s := v.Session
	kind := s.Kind
	if s.Origin != "" {
		kind += " (" + s.Origin + ")"
	}
	fmt.Fprintf(w, "session   %s\n", s.ID)
	fmt.Fprintf(w, "kind      %s\n", kind)
	if v.AtSeq > 0 {
		fmt.Fprintf(w, "as of     seq %d\n", v.AtSeq)
	}
	fmt.Fprintf(w, "version   %d\n", s.Version)
	fmt.Fprintf(w, "chunks    %d\n", s.Chunks)
	if s.Backend != "" {
		fmt.Fprintf(w, "placement %s %s\n", s.Backend, s.Spec)
	}
	fmt.Fprintf(w, "parents   %s\n", orDash(strings.Join(s.Parents, ", ")))
	if s.Source != "" {
		fmt.Fprintf(w, "source    %s\n", s.Source)
	}
	if c := v.Counterfactual; c != nil {
		fmt.Fprintf(w, "counterfactual of run %s at seq %d: its %s (leaf %.16s) replaced by blob %.16s, continued by run %s\n",
			c.Original, c.At, strings.ReplaceAll(c.Kind, "_", " "), c.Replaced, c.Replacement, c.Run)
	}
	u := s.Usage
	fmt.Fprintf(w, "usage     %d tokens (%d prompt, %d completion) in %s\n", u.TotalTokens, u.PromptTokens, u.CompletionTokens, plural(int(u.Calls), "model call"))
	if s.Incomplete {
		fmt.Fprintln(w, "status    incomplete (imported without a trailer)")
	}
	for _, c := range v.Chunks {
		fmt.Fprintln(w)
		head := fmt.Sprintf("#%d %s", c.Index, c.Role)
		if c.Name != "" {
			head += " " + c.Name
		}
		if c.ToolCallID != "" {
			head += " for call " + c.ToolCallID
		}
		if c.Author != "" {
			head += " by " + c.Author
		}
		fmt.Fprintln(w, head)
		if c.Content != "" {
			for _, line := range strings.Split(c.Content, "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
		for _, tc := range c.ToolCalls {
			printCall(w, tc.ID, tc.Name, tc.Arguments, v.Approvals)
			printMarks(w, v.Approvals, tc.ID)
		}
	}
	// Questions asked outside a tool call (a workflow step).
	var asked bool
	for _, m := range v.Approvals {
		if m.CallID == "" && !asked {
			fmt.Fprintln(w, "\nquestions")
			asked = true
		}
	}
	printMarks(w, v.Approvals, "")
}
