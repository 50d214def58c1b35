package cli

import (
	"fmt"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
	"github.com/spf13/cobra"
)

type createdView struct {
	ID      string   `json:"id"`
	Version int64    `json:"version"`
	Chunks  int      `json:"chunks"`
	Parents []string `json:"parents,omitempty"`
}

func newNewCmd(a *app) *cobra.Command {
	var role string
	cmd := &cobra.Command{
		Use:   "new [TEXT...]",
		Short: "Create a root session (a user message, a system prompt, or empty) and print its id",
		Long: `new creates a root session. With TEXT and --role user (the default) it
holds one user message; with --role system it holds an agent's system
prompt; without TEXT it is empty. TEXT "-" reads the text from stdin.
It creates the store if the directory has none.`,
		Example: `rath new "Summarise the README"`,
		Args:    args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if role != events.RoleUser && role != events.RoleSystem {
				return usagef(cmd, "--role %q: a new session starts with a user or a system chunk", role)
			}
			ctx := cmd.Context()
			rt, err := a.create(ctx)
			if err != nil {
				return err
			}
			var s *session.Session
			switch {
			case len(argv) == 0:
				s, err = rt.NewSession(ctx)
			default:
				text, terr := textArg(a.stdin, argv)
				if terr != nil {
					return terr
				}
				if role == events.RoleSystem {
					s, err = rt.NewAgentSession(ctx, text)
				} else {
					s, err = rt.NewUserSession(ctx, text)
				}
			}
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(createdView{ID: s.ID(), Version: s.Version(), Chunks: s.Len()})
			}
			_, err = fmt.Fprintln(a.stdout, s.ID())
			return err
		},
	}
	cmd.Flags().StringVar(&role, "role", events.RoleUser, "role of the first chunk: user or system")
	jsonFlag(cmd, a)
	return cmd
}
