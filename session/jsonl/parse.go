package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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

// parse reads a whole session file. Any error is a *ParseError, except
// read errors from r, which are wrapped as they are.
func parse(file string, r io.Reader) (*transcript, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var (
		t                *transcript
		headerLine       int
		trailerLine      int
		headerIncomplete bool
		line             int
	)
	fail := func(format string, args ...any) error {
		return &ParseError{File: file, Line: line, Err: fmt.Errorf(format, args...)}
	}
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, utf8BOM)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, fail("invalid record: %w", err)
			}
			return nil, fail("not valid JSON: %w", err)
		}
		if trailerLine > 0 {
			return nil, fail("%q record after the trailer on line %d", rec.RecordType, trailerLine)
		}
		switch rec.RecordType {
		case RecordHeader:
			if t != nil {
				return nil, fail("second header (the first is on line %d)", headerLine)
			}
			h, err := parseHeader(file, &rec)
			if err != nil {
				return nil, fail("header: %w", err)
			}
			t, headerLine, headerIncomplete = h, line, rec.Incomplete
		case RecordChunk:
			if t == nil {
				return nil, fail("chunk before the header")
			}
			c, err := parseChunk(&rec, int64(len(t.chunks)))
			if err != nil {
				return nil, fail("chunk: %w", err)
			}
			t.chunks = append(t.chunks, c)
		case RecordTrailer:
			if t == nil {
				return nil, fail("trailer before the header")
			}
			if rec.FinalChunkCount == nil {
				return nil, fail("trailer without final_chunk_count")
			}
			if n := *rec.FinalChunkCount; n != int64(len(t.chunks)) {
				return nil, fail("trailer says final_chunk_count %d, but the file has %d chunks", n, len(t.chunks))
			}
			if u := rec.CumulativeUsage; u != nil {
				if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 || u.Calls < 0 {
					return nil, fail("trailer has negative cumulative_usage")
				}
				t.usage = u.usage()
			}
			trailerLine = line
		case "":
			return nil, fail("record without record_type")
		default:
			return nil, fail("unknown record_type %q (want header, chunk or trailer)", rec.RecordType)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			line++
			return nil, fail("line longer than %d bytes", MaxLineBytes)
		}
		return nil, fmt.Errorf("jsonl: read %s: %w", file, err)
	}
	if t == nil {
		return nil, &ParseError{File: file, Err: errors.New("no header record")}
	}
	// No trailer means the writer stopped before closing the session. An
	// export of such a session says so in its header, since Export always
	// writes a trailer.
	t.incomplete = trailerLine == 0 || headerIncomplete
	return t, nil
}

func parseHeader(file string, rec *record) (*transcript, error) {
	if rec.ID == "" {
		return nil, errors.New("missing id")
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
