package cli

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/gorath/rath"
	"github.com/gorath/rath/flow"
	"github.com/spf13/cobra"
)

// configView is the resolved provider as "rath config" shows it. It never
// holds a secret: the key is masked.
type configView struct {
	ConfigFile     string `json:"config_file"`
	Provider       string `json:"provider,omitempty"`
	Kind           string `json:"kind"`
	Model          string `json:"model,omitempty"`
	BaseURL        string `json:"base_url,omitempty"`
	APIKey         string `json:"api_key"`
	MaxAttempts    int    `json:"max_attempts"`
	InitialBackoff string `json:"initial_backoff"`
	MaxBackoff     string `json:"max_backoff"`
}

func newConfigCmd(a *app) *cobra.Command {
	var name, modelName string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the model provider rath run would use, resolved, with its key masked",
		Long: `config resolves the provider as "rath run" does: the flags first, then the
selected provider of the config file ($RATH_HOME/config.json, or its
default), then the environment (OPENAI_API_KEY, OPENAI_BASE_URL,
OPENAI_DEFAULT_MODEL, and the ANTHROPIC_ ones), then the defaults. The key
and the base URL come as a pair. The key is never printed: at most its
last 4 characters.`,
		Example: "rath config --provider local --json",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := flow.DefaultConfigPath(os.Getenv)
			p, err := flow.ResolveProviderConfig(flow.Provider{Name: name, Model: modelName}, flow.ResolveOptions{ConfigPath: path, Models: rath.Models()})
			if errors.Is(err, flow.ErrNoProviderKind) {
				return usagef(cmd, "no model provider: pass --provider NAME (from %s), or set OPENAI_API_KEY or ANTHROPIC_API_KEY", path)
			}
			if err != nil {
				return err
			}
			v := configView{ConfigFile: path, Provider: p.Name, Kind: p.Vendor, Model: p.Model, BaseURL: p.BaseURL,
				APIKey: maskSecret(p.APIKey), MaxAttempts: p.Retry.MaxAttempts,
				InitialBackoff: p.Retry.InitialBackoff.String(), MaxBackoff: p.Retry.MaxBackoff.String()}
			if v.Provider == "" {
				// Without --provider the file's default is the selected one.
				if cf, err := flow.LoadConfig(path); err == nil {
					if _, ok := cf.Providers[cf.Default]; ok {
						v.Provider = cf.Default
					}
				}
			}
			if a.json {
				return a.printJSON(v)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			for _, row := range [][2]string{
				{"config file", v.ConfigFile}, {"provider", orDash(v.Provider)}, {"kind", v.Kind},
				{"model", orDash(v.Model)}, {"base url", orDash(v.BaseURL)}, {"api key", v.APIKey},
				{"retry", fmt.Sprintf("%d attempts, backoff %s up to %s", v.MaxAttempts, v.InitialBackoff, v.MaxBackoff)},
			} {
				// Config values are the user's, but may hold anything.
				fmt.Fprintf(tw, "%s\t%s\n", row[0], termSafe(row[1]))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&name, "provider", "", "provider name from the config file")
	cmd.Flags().StringVar(&modelName, "model", "", "model name")
	jsonFlag(cmd, a)
	return cmd
}

// maskSecret shows that a key is set and, when it is long enough for that
// to give nothing away, its last 4 characters.
func maskSecret(key string) string {
	switch r := []rune(key); {
	case len(r) == 0:
		return "(none)"
	case len(r) < 16:
		return "[set]"
	default:
		return "[set] …" + string(r[len(r)-4:])
	}
}
