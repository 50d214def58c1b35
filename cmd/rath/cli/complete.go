package cli

import (
	"database/sql"
	"net/url"
	"path/filepath"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver for --dsn
	"github.com/jmoiron/sqlx"
	"github.com/spf13/cobra"
)

// completeIDs gives every command whose first argument is a session or a
// run id (as its Use line names it: ID, A, RUN) a completion function that
// lists the ids in the store. Completion reads the projections through a
// read-only connection: pressing TAB never creates, migrates or writes a
// store.
func completeIDs(a *app, root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.ValidArgsFunction == nil {
			switch firstArg(c.Use) {
			case "ID", "A":
				c.ValidArgsFunction = a.completer(`SELECT id FROM sessions WHERE id >= ? ORDER BY updated_seq DESC LIMIT 500`)
			case "RUN":
				c.ValidArgsFunction = a.completer(`SELECT id FROM runs WHERE id >= ? ORDER BY started_seq DESC LIMIT 500`)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// firstArg is the first upper-case placeholder of a Use line ("show ID" ->
// "ID", "merge A B..." -> "A"), or "".
func firstArg(use string) string {
	for _, f := range strings.Fields(use)[1:] {
		f = strings.TrimSuffix(strings.Trim(f, "[]"), "...")
		if f != "" && f == strings.ToUpper(f) && !strings.HasPrefix(f, "-") {
			return f
		}
	}
	return ""
}

func (a *app) completer(query string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		ids := a.ids(query, prefix)
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

// ids runs a completion query; any failure (no store, an old schema) just
// completes nothing.
func (a *app) ids(query, prefix string) []string {
	if a.existing() != nil {
		return nil
	}
	var db *sql.DB
	if a.dsn != "" {
		var err error
		if db, err = sql.Open("pgx", a.dsn); err != nil {
			return nil
		}
		query = sqlx.Rebind(sqlx.DOLLAR, query)
	} else {
		path, err := filepath.Abs(a.dbPath())
		if err != nil {
			return nil
		}
		u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&_pragma=busy_timeout(1000)"}
		if db, err = sql.Open("sqlite", u.String()); err != nil {
			return nil
		}
	}
	defer db.Close()
	rows, err := db.Query(query, prefix)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil && strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	return out
}
