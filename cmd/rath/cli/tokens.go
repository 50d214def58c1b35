package cli

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gorath/rath/access"
	"github.com/gorath/rath/events"
	"github.com/spf13/cobra"
)

// osIdentity is who runs this command: the OS user, on this machine,
// with every role in every tenant (whoever reaches the store does).
func osIdentity() access.Identity { return access.Local(access.ViaCLI) }

func newTokensCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "Create, list and revoke the API tokens rath serve --auth tokens accepts",
		Long: `tokens manages API tokens for automation: each acts for one tenant with one
role (viewer, approver, operator, admin). rath tokens create prints the
token once; the store keeps only its SHA-256. Present it to rath serve
--auth tokens as "Authorization: Bearer TOKEN".`,
		Example: "rath tokens create --tenant acme --role viewer --expires 30d\nrath tokens list\nrath tokens revoke tok-0123456789abcdef",
		Args:    args(cobra.NoArgs),
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newTokensCreateCmd(a), newTokensListCmd(a), newTokensRevokeCmd(a))
	return cmd
}

// tokenCreated is what `rath tokens create --json` prints.
type tokenCreated struct {
	access.Token
	Secret string `json:"token"`
}

func newTokensCreateCmd(a *app) *cobra.Command {
	var tenant, role, expires string
	cmd := &cobra.Command{
		Use:   "create --role ROLE [--tenant T] [--expires D]",
		Short: "Create an API token and print it once",
		Long: `create records a token acting for --tenant (default "default") with --role,
until --expires (a number of days, 30d, or a duration, 12h; default never),
and prints it on stdout once: it cannot be shown again.`,
		Example: "rath tokens create --tenant acme --role approver --expires 30d",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if role == "" {
				return usagef(cmd, "--role is required: viewer, approver, operator or admin")
			}
			r, err := access.ParseRole(role)
			if err != nil {
				return usagef(cmd, "--role: %v", err)
			}
			now := time.Now()
			var until time.Time
			if expires != "" {
				if until, err = parseExpires(expires, now); err != nil {
					return usagef(cmd, "--expires %v", err)
				}
			}
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			plain, tok, err := access.CreateToken(ctx, rt, access.TokenSpec{Tenant: tenant, Role: r, ExpiresAt: until, By: osIdentity().Subject}, now)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(tokenCreated{Token: tok, Secret: plain})
			}
			fmt.Fprintln(a.stdout, plain)
			exp := "never"
			if !tok.ExpiresAt.IsZero() {
				exp = tok.ExpiresAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(a.stderr, "token %s: %s of tenant %s, expires %s; it is shown only now\n", tok.ID, tok.Role, termSafe(tok.Tenant), exp)
			return nil
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", events.DefaultTenant, "the tenant the token acts for")
	cmd.Flags().StringVar(&role, "role", "", "viewer, approver, operator or admin")
	cmd.Flags().StringVar(&expires, "expires", "", "how long it works: 30d, 12h (default: no expiry)")
	jsonFlag(cmd, a)
	return cmd
}

// parseExpires reads --expires: a number of days (30d) or a positive
// duration (12h), from now.
func parseExpires(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.AddDate(0, 0, n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(d), nil
	}
	return time.Time{}, fmt.Errorf("%q: want a number of days (30d) or a positive duration (12h)", s)
}

// tokenView is one token as `rath tokens list --json` prints it.
type tokenView struct {
	access.Token
	Status string `json:"status"`
}

func newTokensListCmd(a *app) *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the API tokens: tenant, role, expiry, whether revoked (never their secrets)",
		Example: "rath tokens list\nrath tokens list --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			ts, err := access.Tokens(ctx, rt)
			if err != nil {
				return err
			}
			now := time.Now()
			vs := make([]tokenView, len(ts))
			for i, t := range ts {
				vs[i] = tokenView{Token: t, Status: t.Status(now)}
			}
			switch {
			case a.json:
				return a.printJSON(vs)
			case quiet:
				for _, v := range vs {
					fmt.Fprintln(a.stdout, v.ID)
				}
				return nil
			case len(vs) == 0:
				_, err := fmt.Fprintln(a.stdout, "no tokens (rath tokens create makes one)")
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTENANT\tROLE\tSTATUS\tCREATED\tEXPIRES\tBY")
			for _, v := range vs {
				exp := "-"
				if !v.ExpiresAt.IsZero() {
					exp = v.ExpiresAt.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, termSafe(v.Tenant), v.Role, v.Status,
					v.CreatedAt.UTC().Format(time.RFC3339), exp, termSafe(v.CreatedBy))
			}
			return tw.Flush()
		},
	}
	quietFlag(cmd, &quiet, "token")
	jsonFlag(cmd, a)
	return cmd
}

func newTokensRevokeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "revoke ID",
		Short:   "Revoke an API token: it identifies no one from now on",
		Example: "rath tokens revoke tok-0123456789abcdef",
		Args:    args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx := cmd.Context()
			rt, err := a.open(ctx)
			if err != nil {
				return err
			}
			if err := access.RevokeToken(ctx, rt, argv[0], osIdentity().Subject); err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "revoked %s\n", termSafe(argv[0]))
			return err
		},
	}
}
