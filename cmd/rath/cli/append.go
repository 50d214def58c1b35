package cli

import (
	"errors"
	"fmt"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
	"github.com/spf13/cobra"
)

func newAppendCmd(a *app) *cobra.Command {
	var c events.Chunk
	cmd := &cobra.Command{
		Use:   "append ID --role ROLE TEXT...",
		Short: "Append one chunk to the head of a session and print the new version",
		Long: `append loads the head of session ID, appends one chunk and prints the
session's new version. TEXT "-" reads the text from stdin. Roles: system,
user, assistant, tool_result (needs --tool-call-id), summary, memory.`,
		Example: `rath append s-0123456789abcdef0123 --role assistant "Done."`,
		Args:    args(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			text, err := textArg(a.stdin, argv[1:])
			if err != nil {
				return err
			}
			c.Content = text
			if err := c.Validate(); err != nil {
				return usagef(cmd, "%v", err)
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			s, err := rt.Session(ctx, argv[0])
			if err != nil {
				return err
			}
			s, err = s.Append(ctx, c)
			if errors.Is(err, session.ErrStale) {
				return fmt.Errorf("%w (another writer appended meanwhile; run the command again)", err)
			}
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(createdView{ID: s.ID(), Version: s.Version(), Chunks: s.Len()})
			}
			_, err = fmt.Fprintln(a.stdout, s.Version())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.Role, "role", events.RoleUser, "chunk role: system, user, assistant, tool_result, summary or memory")
	f.StringVar(&c.Author, "author", "", "module path of the writer (like root.reviewer)")
	f.StringVar(&c.Name, "name", "", "tool name, for tool_result chunks")
	f.StringVar(&c.ToolCallID, "tool-call-id", "", "the call a tool_result answers")
	jsonFlag(cmd, a)
	return cmd
}
