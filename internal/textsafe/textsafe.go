package textsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Warning is the flag a view shows beside text Escape changed.
const Warning = "contains invisible or direction-changing characters (shown escaped)"

// Terminal returns s with what a terminal acts on, or what reorders a
// line, escaped.
func Terminal(s string) string {
	out, _ := escape(s, terminalRune)
	return out
}

// Escape returns s with every character that does not draw as itself
// escaped, and whether there was any.
func Escape(s string) (string, bool) {
	return escape(s, Hidden)
}

func escape(s string, hide func(rune) bool) (string, bool) {
	if utf8.ValidString(s) && strings.IndexFunc(s, hide) < 0 {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for s != "" {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case !hide(r):
			b.WriteString(s[:size])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		s = s[size:]
	}
	return b.String(), true
}

// control reports C0 controls but newline and tab, DEL and C1 controls.
func control(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}

// bidi reports the characters that change the order or the lines in
// which the text around them is drawn.
func bidi(r rune) bool {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069,
		r == 0x200e, r == 0x200f, r == 0x061c, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

func terminalRune(r rune) bool { return control(r) || bidi(r) }

// Hidden reports a character that does not draw as itself: a control
// (newline and tab excepted), a bidi control, a format character, a line
// or paragraph separator, a space other than U+0020, a variation
// selector, a filler, a private-use or unassigned code point.
func Hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t' || r == ' ':
		return false
	case control(r) || bidi(r):
		return true
	case r == 0x034f, // combining grapheme joiner
		r >= 0x180b && r <= 0x180f,                               // Mongolian variation selectors
		r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef, // variation selectors
		r == 0x115f, r == 0x1160, r == 0x3164, r == 0xffa0, // Hangul fillers
		r == 0x2800: // braille blank
		return true
	case unicode.Is(unicode.Zs, r): // a space that is not U+0020
		return true
	}
	// Format (Cf), private use, surrogates, unassigned, separators.
	return !unicode.IsGraphic(r)
}

// Field is one argument of a tool call as a person reads it.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Fields shows a tool call's arguments, a JSON object, one field at a
// time, in the object's order: a string as its text, anything else as
// indented JSON, names and values escaped, nothing cut. Arguments that are
// not an object are one field with no name. The bool reports whether
// anything was escaped.
func Fields(args []byte) ([]Field, bool) {
	raw := bytes.TrimSpace(args)
	if len(raw) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var fields []Field
	ok := func() bool {
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return false
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return false
			}
			name, _ := t.(string)
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return false
			}
			fields = append(fields, Field{Name: name, Value: value(v)})
		}
		_, err := dec.Token()
		return err == nil && !dec.More()
	}()
	if !ok {
		fields = []Field{{Value: value(raw)}}
	}
	hidden := false
	for i, f := range fields {
		var h1, h2 bool
		fields[i].Name, h1 = Escape(f.Name)
		fields[i].Value, h2 = Escape(f.Value)
		hidden = hidden || h1 || h2
	}
	return fields, hidden
}

// value is a JSON value as text: a string's own text, else indented JSON
// (its strings decoded, so an escape in them is drawn, not hidden behind
// JSON's \u).
func value(v []byte) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var x any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber() // 2^53+1 stays itself
	if d.Decode(&x) != nil {
		return string(v)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(x) != nil {
		return string(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
