package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// nearestCommand is the subcommand of root (a name or an alias) closest
// to typed, by the rule of nearest.
func nearestCommand(root *cobra.Command, typed string) string {
	var names []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			names = append(append(names, c.Name()), c.Aliases...)
		}
	}
	return nearest(typed, names)
}

// nearestFlag is the flag of cmd (its own and those it inherits)
// closest to the long flag typed, by the rule of nearest. Hidden and
// deprecated flags are not offered.
func nearestFlag(cmd *cobra.Command, typed string) string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" {
			names = append(names, f.Name)
		}
	})
	return nearest(typed, names)
}

// nearest is the name closest to typed: the one with the fewest edits (a
// swap of two neighbours counts as one), ties going to the longer shared
// prefix. It is "" when even the nearest needs more edits than half the
// typed word.
func nearest(typed string, names []string) string {
	best, bestD, bestP := "", -1, -1
	for _, name := range names {
		d, p := editDistance(typed, name), sharedPrefix(typed, name)
		if bestD < 0 || d < bestD || (d == bestD && p > bestP) {
			best, bestD, bestP = name, d, p
		}
	}
	if bestD < 0 || bestD > max(1, len(typed)/2) {
		return ""
	}
	return best
}

// flagError is cmd's error for a flag it could not parse: for an unknown
// long flag near one of cmd's, it names that one.
func flagError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) && unknown.GetSpecifiedShortnames() == "" {
		if near := nearestFlag(cmd, unknown.GetSpecifiedName()); near != "" {
			err = fmt.Errorf("%w (did you mean --%s?)", err, near)
		}
	}
	return &usageError{err: err, hint: hint(cmd)}
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of adjacent bytes.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func sharedPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
