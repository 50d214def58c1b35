package session

import (
	"fmt"
	"strings"
	"unicode"
)

// Transcript is the session as "rath show" prints it: a header line,
// then each chunk numbered with its role, tool name, call id and author,
// its text indented below and the tool calls it makes as "→ TOOL ARGS".
// Model text and tool output are not trusted: control, invisible and
// direction-changing characters are escaped (\u202e), so printing a
// transcript cannot drive the terminal.
//
//	run, err := rt.Start(ctx, "hello", agent, question)
//	fmt.Print(run.Output.Transcript())
func (s *Session) Transcript() string {
	var b strings.Builder
	u := s.Usage()
	fmt.Fprintf(&b, "session %s: %s, %s in %s\n", s.ID(), count(s.Len(), "chunk"), count(int(u.TotalTokens), "token"), count(int(u.Calls), "model call"))
	for i, c := range s.Chunks() {
		head := fmt.Sprintf("#%d %s", i, c.Role)
		if c.Name != "" {
			head += " " + c.Name
		}
		if c.ToolCallID != "" {
			head += " for call " + c.ToolCallID
		}
		if c.Author != "" {
			head += " by " + c.Author
		}
		fmt.Fprintf(&b, "\n%s\n", escapeText(head))
		if c.Content != "" {
			for _, line := range strings.Split(strings.TrimRight(c.Content, "\n"), "\n") {
				fmt.Fprintf(&b, "  %s\n", escapeText(line))
			}
		}
		for _, tc := range c.ToolCalls {
			fmt.Fprintf(&b, "  → %s %s\n", escapeText(tc.Name), escapeText(tc.Arguments))
		}
	}
	return b.String()
}

// escapeText escapes what would not draw as itself: control characters
// (tabs kept), and format characters such as zero-width and bidi ones.
func escapeText(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hidden(r rune) bool {
	return r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar)
}

// count is n and the noun, plural unless n is 1: "1 chunk", "3 chunks".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
