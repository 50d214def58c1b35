package dossier

import (
	"fmt"
	"io"
	"sort"
)

// Formats returns the names Render accepts.
func Formats() []string { return []string{"html", "md", "jsonl"} }

// Render writes the dossier in the named format: html, md (Markdown) or
// jsonl. An unknown name fails with ErrFormat before anything is written.
func (d *Dossier) Render(w io.Writer, format string) error {
	switch format {
	case "html":
		return d.HTML(w)
	case "md", "markdown":
		return d.Markdown(w)
	case "jsonl":
		return d.JSONL(w)
	}
	return fmt.Errorf("%w %q: want html, md or jsonl", ErrFormat, format)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
