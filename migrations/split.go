package migrations

import (
	"errors"
	"fmt"
	"strings"
)

// ErrMalformedMigration is matched by the errors of a migration file that
// cannot be split into statements: a test finds them before any release.
var ErrMalformedMigration = errors.New("migrations: malformed migration file")

// split returns the statements of one goose SQL migration file, the Up
// section's and the Down section's, read by goose's documented
// annotations: "-- +goose Up" and "-- +goose Down" open the sections;
// outside a "-- +goose StatementBegin" … "-- +goose StatementEnd" block a
// statement ends at a line whose last word before any "--" comment ends
// with ";"; blank lines, and comment lines between statements, are not
// part of any statement. Annotations rath's files do not use (NO
// TRANSACTION, ENVSUB) are refused rather than misread.
//
// goose reads the files itself when given them, but its parser takes a
// 4 MiB scan buffer from a sync.Pool for every line; under the race
// detector the pool drops buffers at random, and migrating a fresh store
// cost about 370 ms of CPU (75 ms without it): a fifth to a quarter of
// the CPU of the race-enabled test packages that open many stores. So rath splits its files here and hands goose each
// migration as a function (provider), which keeps goose's versioning,
// locking and one transaction per migration.
func split(name, src string) (up, down []string, err error) {
	const (
		none = iota
		inUp
		inDown
	)
	section, block := none, false
	var buf strings.Builder
	emit := func() {
		if s := strings.TrimSpace(buf.String()); s != "" {
			if section == inUp {
				up = append(up, s)
			} else {
				down = append(down, s)
			}
		}
		buf.Reset()
	}
	fail := func(line int, format string, args ...any) error {
		return fmt.Errorf("%w: %s line %d: %s", ErrMalformedMigration, name, line, fmt.Sprintf(format, args...))
	}
	pending := func() bool { return strings.TrimSpace(buf.String()) != "" }
	for i, line := range strings.Split(src, "\n") {
		n := i + 1
		line = strings.TrimSuffix(line, "\r")
		t := strings.TrimSpace(line)
		if annotation, ok := strings.CutPrefix(t, "--"); ok && strings.HasPrefix(strings.TrimSpace(annotation), "+goose") {
			switch a := strings.Join(strings.Fields(annotation), " "); a {
			case "+goose Up", "+goose Down":
				if block || pending() {
					return nil, nil, fail(n, "%q inside an unfinished statement", a)
				}
				if section = inUp; a == "+goose Down" {
					section = inDown
				}
			case "+goose StatementBegin":
				if section == none || block || pending() {
					return nil, nil, fail(n, "StatementBegin outside a section or inside a statement")
				}
				block = true
			case "+goose StatementEnd":
				if !block {
					return nil, nil, fail(n, "StatementEnd without StatementBegin")
				}
				emit()
				block = false
			default:
				return nil, nil, fail(n, "annotation %q is not supported here", a)
			}
			continue
		}
		if !block && (t == "" || (!pending() && strings.HasPrefix(t, "--"))) {
			continue
		}
		if section == none {
			return nil, nil, fail(n, "a statement before -- +goose Up")
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		if !block && endsStatement(line) {
			emit()
		}
	}
	switch {
	case block:
		return nil, nil, fail(strings.Count(src, "\n")+1, "StatementBegin without StatementEnd")
	case pending():
		return nil, nil, fail(strings.Count(src, "\n")+1, "a statement without its closing semicolon")
	}
	return up, down, nil
}

// endsStatement reports whether the last word of line before a "--"
// comment ends with a semicolon.
func endsStatement(line string) bool {
	last := ""
	for _, w := range strings.Fields(line) {
		if strings.HasPrefix(w, "--") {
			break
		}
		last = w
	}
	return strings.HasSuffix(last, ";")
}
