package textsplit

import (
	"unicode"
	"unicode/utf8"
)

// Words splits s into pieces that each hold the whitespace before a word
// and the word itself: "Hello big world" gives "Hello", " big", " world".
func Words(s string) []string {
	var out []string
	start, inWord := 0, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if inWord && space {
			out = append(out, s[start:i])
			start = i
		}
		inWord = !space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// Fragments splits s into pieces of at most n bytes (at least one rune
// each).
func Fragments(s string, n int) []string {
	if n < 1 {
		n = 1
	}
	var out []string
	for len(s) > 0 {
		cut := min(n, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
