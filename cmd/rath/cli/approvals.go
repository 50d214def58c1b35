package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/gorath/rath"
	"github.com/gorath/rath/access"
	"github.com/gorath/rath/approval"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/fleet"
	"github.com/gorath/rath/internal/textsafe"
	"github.com/spf13/cobra"
)

// pendingView is one pending request as `rath approvals --json` prints it.
type pendingView = approval.View

func pending(ctx context.Context, rt *rath.Runtime, run string) ([]pendingView, error) {
	rows, err := rt.Reader().PendingApprovals(ctx)
	if err != nil {
		return nil, err
	}
	// Deadlines are on the fleet's clock (the database's on PostgreSQL):
	// "expired" here must be what a decision would be judged by.
	now, err := fleet.Now(ctx, rt)
	if err != nil {
		return nil, err
	}
	var out []pendingView
	for _, r := range rows {
		if run != "" && r.Run != run {
			continue
		}
		st, err := approval.Load(ctx, rt.Store(), r.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, approval.ViewOf(st, now))
	}
	return out, nil
}

func newApprovalsCmd(a *app) *cobra.Command {
	var run string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List the requests runs wait on: tool calls to approve or reject, questions to answer",
		Long: `approvals lists the pending requests of every run (or of --run): a tool call
that needs approval (with its exact arguments and why), or a question with
the JSON Schema its answer must match. Decide with rath approve, rath
reject or rath answer; the run then continues (a fleet worker takes it up,
or rath resume RUN). -q prints the request ids only, one a line.`,
		Example: "rath approvals --run run-1a2b\nrath approve --as ann $(rath approvals -q --run run-1a2b)\nrath approvals --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			vs, err := pending(ctx, rt, run)
			if err != nil {
				return err
			}
			if a.json {
				if vs == nil {
					vs = []pendingView{}
				}
				return a.printJSON(vs)
			}
			if quiet {
				for _, v := range vs {
					fmt.Fprintln(a.stdout, v.ID)
				}
				return nil
			}
			return printPending(a.stdout, vs)
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "only this run's requests")
	quietFlag(cmd, &quiet, "request")
	jsonFlag(cmd, a)
	return cmd
}

// printPending prints each request as a block: its arguments one field
// a line, in full, with what would not draw as itself escaped and the
// request flagged (approval.Shown): the approver decides on what runs,
// not on how a model made it look.
func printPending(w io.Writer, vs []pendingView) error {
	if len(vs) == 0 {
		_, err := fmt.Fprintln(w, "no pending requests")
		return err
	}
	for i, v := range vs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		sh := v.Shown
		head := fmt.Sprintf("%s  run %s  %s", termSafe(v.ID), orDash(termSafe(v.Run)), v.Kind)
		if v.Kind != events.ApprovalQuestion {
			head += " " + termSafe(v.Tool)
		}
		fmt.Fprintln(w, head)
		if v.Deadline != nil {
			deadline := v.Deadline.Format(time.RFC3339) + " then " + v.Default
			if v.Expired {
				deadline += " (expired)"
			}
			printField(w, "deadline", deadline)
		}
		if sh.Warning != "" {
			printField(w, "WARNING", sh.Warning)
		}
		if sh.Reason != "" {
			printField(w, "why", sh.Reason)
		}
		if v.Kind == events.ApprovalQuestion {
			printField(w, "question", sh.Question)
			if len(v.Schema) > 0 {
				schema, _ := textsafe.Escape(string(v.Schema))
				printField(w, "schema", schema)
			}
			continue
		}
		if len(sh.Fields) == 0 {
			printField(w, "arguments", "(none)")
		}
		for _, f := range sh.Fields {
			name := f.Name
			if name == "" {
				name = "arguments"
			}
			printField(w, name, f.Value)
		}
	}
	return nil
}

// printField prints an escaped name and value, the value's further lines
// indented under its first.
func printField(w io.Writer, name, value string) {
	pad := strings.Repeat(" ", len(name)+4)
	fmt.Fprintf(w, "  %s: %s\n", name, strings.ReplaceAll(value, "\n", "\n"+pad))
}

// printWaiting tells how to answer a run that suspended.
func (a *app) printWaiting(ctx context.Context, rt *rath.Runtime, run string, w io.Writer) {
	vs, err := pending(ctx, rt, run)
	if err != nil {
		return
	}
	fmt.Fprintf(w, "run %s waits for a person (exit code %d):\n", termSafe(run), ExitWaiting)
	printPending(w, vs)
	fmt.Fprintf(w, "decide with: rath approve ID [--note TEXT] | rath reject ID --reason TEXT | rath answer ID [--json '{...}']\n")
	fmt.Fprintf(w, "then continue it with: rath resume %s\n", termSafe(run))
}

// decider is who acts (redact, erase): --as, else the OS user.
func decider(cmd *cobra.Command, as string) (string, error) {
	if as = strings.TrimSpace(as); as != "" {
		return as, nil
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	return "", usagef(cmd, "who decides is required: pass --as NAME")
}

// approver is who decides an approval: --as NAME, else the OS user
// ("os:USER"), established by the CLI on this machine.
func approver(as string) (by, issuer, via string) {
	if as = strings.TrimSpace(as); as != "" {
		return as, access.IssuerLocal, access.ViaCLI
	}
	id := osIdentity()
	return id.Subject, id.Issuer, id.Via
}

func newDecideCmd(a *app, use, short, example string, build func(cmd *cobra.Command, id string) (approval.Decision, error)) (*cobra.Command, *string) {
	var as string
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			d, err := build(cmd, argv[0])
			if err != nil {
				return err
			}
			d.By, d.Issuer, d.Via = approver(as)
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			// The deadline was set on the fleet's clock (the database's on
			// PostgreSQL): judge it on that one, not this machine's.
			at, err := fleet.Now(ctx, rt)
			if err != nil {
				return err
			}
			dec, err := approval.Decide(ctx, rt.Store(), argv[0], d, at)
			if err != nil {
				return err
			}
			return a.printDecided(ctx, rt, dec)
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "who decides (default: the OS user)")
	return cmd, &as
}

func (a *app) printDecided(ctx context.Context, rt *rath.Runtime, dec *events.ApprovalDecided) error {
	if a.json {
		return a.printJSON(dec)
	}
	fmt.Fprintf(a.stdout, "%s %s by %s\n", termSafe(dec.ID), dec.Decision, termSafe(dec.By))
	if dec.Run == "" {
		return nil
	}
	if v, err := rt.Store().StreamVersion(ctx, events.SubmitStream(dec.Run)); err == nil && v > 0 {
		_, err := fmt.Fprintf(a.stdout, "run %s continues on a worker once nothing else is pending\n", termSafe(dec.Run))
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "continue the run with: rath resume %s\n", termSafe(dec.Run))
	return err
}

func newApproveCmd(a *app) *cobra.Command {
	var note, edited string
	cmd, _ := newDecideCmd(a, "approve ID", "Approve a tool call a run waits on (optionally with edited arguments)",
		`rath approve apr-0123456789abcdef --note "looks safe"
rath approve apr-0123456789abcdef --args '{"cmd":"ls"}'`,
		func(*cobra.Command, string) (approval.Decision, error) {
			return approval.Decision{Decision: events.DecisionApproved, Note: note, EditedArguments: edited}, nil
		})
	cmd.Long = `approve records that the tool call of request ID may run, with exactly the
arguments it showed; with --args, with these arguments instead (both are
recorded, and what runs is what was approved).`
	cmd.Flags().StringVar(&note, "note", "", "a remark, recorded with the decision")
	cmd.Flags().StringVar(&edited, "args", "", "approve these arguments (a JSON object) instead")
	jsonFlag(cmd, a)
	return cmd
}

func newRejectCmd(a *app) *cobra.Command {
	var reason string
	cmd, _ := newDecideCmd(a, "reject ID --reason TEXT", "Reject a tool call a run waits on; the model reads the reason as the tool's result",
		`rath reject apr-0123456789abcdef --reason "do not touch production"`,
		func(cmd *cobra.Command, _ string) (approval.Decision, error) {
			if strings.TrimSpace(reason) == "" {
				return approval.Decision{}, usagef(cmd, "--reason is required: the model reads it")
			}
			return approval.Decision{Decision: events.DecisionRejected, Note: reason}, nil
		})
	cmd.Flags().StringVar(&reason, "reason", "", "why (the model reads it as the tool's result)")
	jsonFlag(cmd, a)
	return cmd
}

func newAnswerCmd(a *app) *cobra.Command {
	var answer, note string
	cmd, _ := newDecideCmd(a, "answer ID [--json VALUE]", "Answer a question a run waits on, with JSON matching its schema (asked for at a terminal)",
		`rath answer apr-0123456789abcdef --json '{"branch":"main"}'
rath answer apr-0123456789abcdef`,
		func(cmd *cobra.Command, id string) (approval.Decision, error) {
			if answer == "" {
				if !isTerminal(a.stdin) {
					return approval.Decision{}, usagef(cmd, "--json is required when the input is not a terminal: the answer, as JSON")
				}
				asked, err := a.askAnswer(cmd, id)
				if err != nil {
					return approval.Decision{}, err
				}
				answer = string(asked)
			}
			return approval.Decision{Decision: events.DecisionAnswered, Note: note, Answer: json.RawMessage(answer)}, nil
		})
	cmd.Long = `answer records the answer to question ID, which must match the question's
JSON Schema (rath approvals shows both). With --json the answer is given
whole. Without it, at a terminal, answer asks for it: field by field when
the schema is an object of strings, numbers, integers and booleans, each
checked as it is typed; as typed when the answer is one such value; else
as one JSON value. It then shows the answer as it will be recorded and
records it on "y".`
	// Here --json is the answer: this command prints text only.
	cmd.Flags().StringVar(&answer, "json", "", "the answer, JSON matching the question's schema (without it, at a terminal, answer asks)")
	cmd.Flags().StringVar(&note, "note", "", "a remark, recorded with the decision")
	return cmd
}

// askAnswer asks the person at the terminal for the answer to question
// id (promptAnswer), after checking that it is a question still pending.
func (a *app) askAnswer(cmd *cobra.Command, id string) (json.RawMessage, error) {
	ctx := cmd.Context()
	rt, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	st, err := approval.Load(ctx, rt.Store(), id)
	if err != nil {
		return nil, err
	}
	switch {
	case st.Request.Kind != events.ApprovalQuestion:
		return nil, fmt.Errorf("%s is a tool call, not a question: rath approve or rath reject it", termSafe(id))
	case !st.Pending():
		return nil, fmt.Errorf("%s is decided already: %s by %s", termSafe(id), st.Decision.Decision, termSafe(st.Decision.By))
	}
	return promptAnswer(bufio.NewReader(a.stdin), a.stderr, st.Request)
}
