// Package textsafe shows text from a model or a tool to a person without
// letting the text change how it looks: what a terminal or a browser
// would act on, or not draw, is replaced by a visible escape.
//
// Two levels. Terminal escapes what a terminal acts on (C0 and C1
// controls but newline and tab, DEL, bytes that are not UTF-8) and what
// reorders or splits a line (the bidi controls U+202A–U+202E,
// U+2066–U+2069, U+200E, U+200F, U+061C, and U+2028, U+2029); emoji and
// other text draw as they are. Escape, for what a person decides on (an
// approval request), escapes all of that and every other character that
// draws as nothing or as a space that is not one: format characters
// (zero-width space and joiners, soft hyphen, tag characters, BOM),
// variation selectors, the combining grapheme joiner, Hangul fillers,
// spaces other than U+0020, private-use and unassigned code points.
//
// Escapes are \xNN for a control below U+0080 or a byte that is not
// UTF-8, \uNNNN, and \UNNNNNNNN above U+FFFF. A literal backslash is left
// alone: the escape is for the eye, and Hidden says whether any was made,
// so a view can flag the text with Warning.
package textsafe
