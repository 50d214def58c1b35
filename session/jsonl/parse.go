package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/gorath/rath/events"
)

// transcript is one parsed session file, ready to be written.
type transcript struct {
	file        string
	format      string
	id          string
	parents     []string // declared, in order, without duplicates
	lineageKind string
	placement   events.Placement
	chunks      []events.Chunk
	usage       events.Usage
	incomplete  bool
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// parser reads a session file one line at a time: the header first (all
// the import order needs), the rest when the file's turn comes. Any error
// is a *ParseError, except read errors from the reader, which are wrapped
// as they are.
type parser struct {
	file    string
	sc      *bufio.Scanner
	maxLine int
	line    int

	t                *transcript
	headerLine       int
	headerIncomplete bool
}

func newParser(file string, r io.Reader, maxLine int) *parser {
	if maxLine <= 0 {
		maxLine = MaxLineBytes
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, maxLine)), maxLine)
	return &parser{file: file, sc: sc, maxLine: maxLine}
}

func (p *parser) fail(format string, args ...any) error {
	return &ParseError{File: p.file, Line: p.line, Err: fmt.Errorf(format, args...)}
}

// next returns the next non-blank line's record, or nil at the end.
func (p *parser) next() (*record, error) {
	for p.sc.Scan() {
		p.line++
		b := p.sc.Bytes()
		if p.line == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, p.fail("invalid record: %w", err)
			}
			return nil, p.fail("not valid JSON: %w", err)
		}
		return &rec, nil
	}
	if err := p.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			p.line++
			return nil, p.fail("%w: the line is longer than %d bytes", ErrLineTooLong, p.maxLine)
		}
		return nil, fmt.Errorf("jsonl: read %s: %w", p.file, err)
	}
	return nil, nil
}

// header reads up to the header record, which must come first.
func (p *parser) header() (*transcript, error) {
	rec, err := p.next()
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, &ParseError{File: p.file, Err: errors.New("no header record")}
	}
	switch rec.RecordType {
	case RecordHeader:
	case RecordChunk:
		return nil, p.fail("chunk before the header")
	case RecordTrailer:
		return nil, p.fail("trailer before the header")
	case "":
		return nil, p.fail("record without record_type")
	default:
		return nil, p.fail("unknown record_type %q (want header, chunk or trailer)", rec.RecordType)
	}
	t, err := parseHeader(p.file, rec)
	if err != nil {
		return nil, p.fail("header: %w", err)
	}
	p.t, p.headerLine, p.headerIncomplete = t, p.line, rec.Incomplete
	return t, nil
}

// body reads the records after the header and returns the whole
// transcript.
func (p *parser) body() (*transcript, error) {
	t := p.t
	trailerLine := 0
	for {
		rec, err := p.next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		if trailerLine > 0 {
			return nil, p.fail("%q record after the trailer on line %d", rec.RecordType, trailerLine)
		}
		switch rec.RecordType {
		case RecordHeader:
			return nil, p.fail("second header (the first is on line %d)", p.headerLine)
		case RecordChunk:
			c, err := parseChunk(rec, int64(len(t.chunks)))
			if err != nil {
				return nil, p.fail("chunk: %w", err)
			}
			t.chunks = append(t.chunks, c)
		case RecordTrailer:
			if rec.FinalChunkCount == nil {
				return nil, p.fail("trailer without final_chunk_count")
			}
			if n := *rec.FinalChunkCount; n != int64(len(t.chunks)) {
				return nil, p.fail("trailer says final_chunk_count %d, but the file has %d chunks", n, len(t.chunks))
			}
			if u := rec.CumulativeUsage; u != nil {
				if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 || u.Calls < 0 {
					return nil, p.fail("trailer has negative cumulative_usage")
				}
				t.usage = u.usage()
			}
			trailerLine = p.line
		case "":
			return nil, p.fail("record without record_type")
		default:
			return nil, p.fail("unknown record_type %q (want header, chunk or trailer)", rec.RecordType)
		}
	}
	// No trailer means the writer stopped before closing the session. An
	// export of such a session says so in its header, since Export always
	// writes a trailer.
	t.incomplete = trailerLine == 0 || p.headerIncomplete
	return t, nil
}

// parse reads a whole session file.
func parse(file string, r io.Reader, maxLine int) (*transcript, error) {
	p := newParser(file, r, maxLine)
	if _, err := p.header(); err != nil {
		return nil, err
	}
	return p.body()
}

func parseHeader(file string, rec *record) (*transcript, error) {
	if rec.ID == "" {
		return nil, errors.New("missing id")
	}
	if why := reservedID(rec.ID); why != "" {
		return nil, fmt.Errorf("session id %q %s: a session file cannot name it", rec.ID, why)
	}
	t := &transcript{file: file, format: FormatOpenRath, id: rec.ID, lineageKind: rec.LineageKind}
	if rec.Format == FormatExport {
		t.format = FormatExport
	}
	seen := map[string]bool{}
	for i, p := range rec.ParentSessionIDs {
		switch {
		case p == "":
			return nil, fmt.Errorf("parent_session_ids[%d] is empty", i)
		case p == rec.ID:
			return nil, fmt.Errorf("session %s names itself as a parent", p)
		case seen[p]:
			continue
		}
		seen[p] = true
		t.parents = append(t.parents, p)
	}
	spec, err := text(rec.SandboxSpec)
	if err != nil {
		return nil, fmt.Errorf("sandbox_spec: %w", err)
	}
	t.placement = events.Placement{Backend: rec.SandboxBackend, Spec: spec}
	return t, nil
}

func parseChunk(rec *record, want int64) (events.Chunk, error) {
	var c events.Chunk
	if rec.Index == nil {
		return c, errors.New("missing index")
	}
	if *rec.Index != want {
		return c, fmt.Errorf("index %d where %d was expected (indexes run from 0 without gaps)", *rec.Index, want)
	}
	switch rec.Kind {
	case KindSystem, KindUser, KindAssistant, KindToolResult:
		c.Role = rec.Kind
	case "":
		return c, errors.New("missing kind")
	default:
		return c, fmt.Errorf("unknown kind %q (want system, user, assistant or tool_result)", rec.Kind)
	}
	if len(rec.Payload) == 0 || string(rec.Payload) == "null" {
		return c, errors.New("missing payload")
	}
	var p wirePayload
	if err := json.Unmarshal(rec.Payload, &p); err != nil {
		return c, fmt.Errorf("payload: %w", err)
	}
	if p.Content != nil {
		c.Content = *p.Content
	}
	c.Name, c.ToolCallID = p.Name, p.ToolCallID
	for i, tc := range p.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return c, fmt.Errorf("tool_calls[%d]: type %q is not function", i, tc.Type)
		}
		args, err := text(tc.Function.Arguments)
		if err != nil {
			return c, fmt.Errorf("tool_calls[%d] arguments: %w", i, err)
		}
		c.ToolCalls = append(c.ToolCalls, events.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	if x := p.Rath; x != nil {
		if x.Role != "" {
			if !events.ValidRole(x.Role) {
				return c, fmt.Errorf("rath.role %q is not a chunk role", x.Role)
			}
			c.Role = x.Role
		}
		c.Author = x.Author
		if len(x.Meta) > 0 {
			c.Meta = x.Meta
		}
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// text returns a JSON value as text: a string as its contents, null or
// absent as "", and anything else (an object, say) as canonical JSON.
func text(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	b, err := events.CanonicalizeJSON(raw)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// reservedID says why id cannot be an imported session's: it would name
// one of rath's own streams (approval:ID, submit:RUN, lease:RUN,
// resume:RUN, a run, rath-redactions) and pre-empt it, or hold what no
// id should (a control character, space, a path separator).
func reservedID(id string) string {
	switch {
	case strings.Contains(id, ":"):
		return "holds ':', which names rath's typed streams (approval:, submit:, lease:, resume:)"
	case strings.HasPrefix(id, "run-"):
		return "is a run's stream name"
	case strings.HasPrefix(id, "rath-"):
		return "is a name rath keeps for its own streams"
	case strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' || r == '\\' || !unicode.IsGraphic(r) }):
		return "holds a space, a control, a path separator or an invisible character"
	case len(id) > 256:
		return "is longer than 256 bytes"
	}
	return ""
}
