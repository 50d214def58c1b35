package dossier

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/internal/textsafe"
)

//go:embed dossier.html
var pageSource string

//go:embed dossier.css
var pageCSS string

// page is parsed once, on first use, not at init: every rath process
// links this package and most never write a dossier (parsing cost 1.8 ms
// of each process's start). A template is safe for concurrent execution.
var page = sync.OnceValue(func() *template.Template {
	return parsePage()
})

func parsePage() *template.Template {
	return template.Must(template.New("dossier").Funcs(template.FuncMap{
		// Placeholders: each Execute binds the real functions, which need the
		// dossier's options, with Funcs on a clone.
		"clip": func(string) clipped { return clipped{} }, "blob": func([]byte, int) clipped { return clipped{} },
		"session": func(string) string { return "" }, "diffLines": func(FileDiff) []DiffLine { return nil },
	}).Funcs(staticFuncs).Parse(pageSource))
}

var staticFuncs = template.FuncMap{
	"short":  short,
	"stream": shortStream,
	"pretty": prettyJSON,
	"time":   formatTime,
	"css":    func() template.CSS { return template.CSS(pageCSS) },
	"usage":  formatUsage,
	"plural": plural,
	"add":    func(a, b int) int { return a + b },
	"nth": func(l []string, i int) string {
		if i < len(l) {
			return l[i]
		}
		return ""
	},
	"lineY": func(y, i int) int { return y + 19 + 15*i },
	"chosen": func(c string) string {
		if c == "" {
			return "none"
		}
		return c
	},
	"image": imageURL,
	"mhead": func(e MemoryEvent) string { return strings.TrimPrefix(e.Type, "memory.") },
	"status": func(t *ToolCall) string {
		switch {
		case !t.Returned:
			return "never returned"
		case t.ErrorKind != "":
			return "error: " + t.ErrorKind
		case t.IsError:
			return "failed"
		}
		return "ok"
	},
}

// clipped is a text cut to the dossier's limit, with a note saying so.
type clipped struct {
	Text   string
	Note   string
	Binary bool
}

// HTML writes the dossier as one self-contained HTML page: inline CSS and
// SVG, no script, every link a fragment. All log text is escaped by
// html/template.
func (d *Dossier) HTML(w io.Writer) error {
	t, err := page().Clone()
	if err != nil {
		return fmt.Errorf("dossier: html: %w", err)
	}
	limit := d.opts.textLimit()
	t.Funcs(template.FuncMap{
		"clip": func(s string) clipped {
			text, note := clip(s, limit)
			return clipped{Text: text, Note: note}
		},
		"blob": func(b []byte, size int) clipped {
			if b == nil && size > 0 {
				return clipped{Note: fmt.Sprintf("[%d bytes, content missing from the store]", size)}
			}
			if isBinary(b) {
				return clipped{Binary: true, Note: fmt.Sprintf("[binary, %d bytes]", len(b))}
			}
			text, note := clip(string(b), limit)
			return clipped{Text: text, Note: note}
		},
		"session":   d.sessionAnchor,
		"diffLines": d.diffLines,
	})
	// Render to a buffer first so a template error leaves w untouched.
	var buf bytes.Buffer
	if err := t.Execute(&buf, d.view()); err != nil {
		return fmt.Errorf("dossier: html: %w", err)
	}
	// Controls and bidi characters from the log are escaped in the whole
	// page (the template has none): text must not reorder what a reader
	// sees. (Approval requests escape every invisible character besides.)
	_, err = io.WriteString(w, textsafe.Terminal(buf.String()))
	return err
}

// pageView is what the template reads.
type pageView struct {
	*Dossier
	Blocks   map[string][]block // per session id
	Chunks   int
	Failures int
}

func (d *Dossier) view() pageView {
	v := pageView{Dossier: d, Blocks: map[string][]block{}}
	for _, s := range d.Sessions {
		v.Blocks[s.ID] = d.blocks(s)
	}
	for _, p := range d.Providers {
		if p.Failed {
			v.Failures++
		}
	}
	return v
}

// block is one item of a rendered transcript: a chunk, or a run of
// chunks stored in another session of the dossier, shown there.
type block struct {
	Chunk *Chunk
	// For a shared run: chunks From..To of this session are chunks
	// HomeFrom.. of Home.
	From, To, HomeFrom, HomeTo int
	Home, HomeAnchor           string
}

// blocks groups a transcript: consecutive chunks inherited from the same
// session that the dossier shows anyway become one link, which keeps a
// run of many forks from repeating the shared prefix in every session.
func (d *Dossier) blocks(s *Session) []block {
	var out []block
	for i := range s.Chunks {
		c := &s.Chunks[i]
		home, shown := d.bySession[c.Home]
		if c.Home == s.ID || !shown || !home.InRun {
			out = append(out, block{Chunk: c})
			continue
		}
		if n := len(out); n > 0 && out[n-1].Chunk == nil && out[n-1].Home == c.Home && out[n-1].To == i-1 {
			out[n-1].To, out[n-1].HomeTo = i, c.HomeIndex
			continue
		}
		out = append(out, block{From: i, To: i, HomeFrom: c.HomeIndex, HomeTo: c.HomeIndex, Home: c.Home, HomeAnchor: home.Anchor})
	}
	return out
}

// sessionAnchor returns the anchor of a session shown in the dossier, ""
// for one that is not.
func (d *Dossier) sessionAnchor(id string) string {
	if s, ok := d.bySession[id]; ok {
		return s.Anchor
	}
	return ""
}

// diffLines returns the lines of a file diff to show, cut at DiffLimit.
func (d *Dossier) diffLines(f FileDiff) []DiffLine {
	limit := d.opts.diffLimit()
	if limit < 0 || len(f.Lines) <= limit {
		return f.Lines
	}
	out := append([]DiffLine(nil), f.Lines[:limit]...)
	return append(out, DiffLine{Kind: LineNote, Text: fmt.Sprintf(" [%d more diff lines not shown]", len(f.Lines)-limit)})
}

// prettyJSON indents JSON text; other text is returned as is.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(s), "", "  "); err != nil {
		return s
	}
	return buf.String()
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

func formatUsage(u events.Usage) string {
	return fmt.Sprintf("%d prompt + %d completion = %d tokens", u.PromptTokens, u.CompletionTokens, u.TotalTokens)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// imageURL returns a data: URL showing a recorded image inline, or ""
// for a type a browser might run (SVG) or bytes that were not kept.
func imageURL(a Attachment) template.URL {
	switch a.MIME {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		if a.Kind == "image" && len(a.Data) > 0 {
			return template.URL("data:" + a.MIME + ";base64," + base64.StdEncoding.EncodeToString(a.Data))
		}
	}
	return ""
}
