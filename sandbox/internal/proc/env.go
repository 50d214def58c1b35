package proc

import (
	"maps"
	"os"
	"slices"
)

// DefaultPath is the PATH given to commands when the host has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Env builds a command environment from an allow-list instead of the host
// environment, so API keys, tokens and cloud credentials in the host
// environment never reach a command unless a caller names them.
//
// base holds the variables the backend always sets (PATH, HOME, ...); pass
// names host variables to copy when set (LANG, TERM, ...); extra comes last
// and wins. The result is sorted, so the same inputs give the same slice.
func Env(base map[string]string, pass []string, extra ...map[string]string) []string {
	env := maps.Clone(base)
	if env == nil {
		env = make(map[string]string)
	}
	for _, name := range pass {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	for _, m := range extra {
		maps.Copy(env, m)
	}
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
