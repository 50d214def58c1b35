package events

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// DecodeChunkAppended decodes a chunk.appended payload stored at
// typeVersion. It returns exactly what Decode returns (a fuzz test holds
// it to that), several times faster: reading a session reads its chunks
// from the log, one payload per chunk, so this is the hot path of every
// session load. It recognises the payload as Canonical writes it (keys in
// declaration order, no spaces); anything else goes through Decode.
func DecodeChunkAppended(payload []byte, typeVersion int) (ChunkAppended, error) {
	var ca ChunkAppended
	if typeVersion <= 1 {
		// A payload that fails validation goes through Decode too, for
		// its error.
		if canonicalChunkAppended(payload, nil, &ca) && ca.Validate() == nil {
			return ca, nil
		}
	}
	p, err := Decode(TypeChunkAppended, typeVersion, payload)
	if err != nil {
		return ChunkAppended{}, err
	}
	d, ok := p.(*ChunkAppended)
	if !ok {
		return ChunkAppended{}, fmt.Errorf("events: %s decoded as %T", TypeChunkAppended, p)
	}
	return *d, nil
}

// DecodeStoredChunkAppended decodes a chunk.appended payload as its row
// in stream stores it (see ExpandStored) without expanding it first: what
// DecodeChunkAppended(ExpandStored(stream, …)) returns, with less copying.
func DecodeStoredChunkAppended(stream string, stored []byte, typeVersion int) (ChunkAppended, error) {
	// A stream that is not valid UTF-8 reads back changed from the
	// expanded payload; Decode says how.
	if typeVersion <= 1 && !bytes.HasPrefix(stored, sessionKey) && utf8.ValidString(stream) {
		var ca ChunkAppended
		if canonicalChunkAppended(stored, &stream, &ca) && ca.Validate() == nil {
			return ca, nil
		}
	}
	return DecodeChunkAppended(ExpandStored(stream, TypeChunkAppended, stored), typeVersion)
}

// canon reads JSON in exactly the shape Canonical writes; ok turns false
// at the first byte that differs, and the caller falls back to Decode.
type canon struct {
	b  []byte
	ok bool
}

func (c *canon) lit(s string) {
	if c.ok && bytes.HasPrefix(c.b, []byte(s)) {
		c.b = c.b[len(s):]
		return
	}
	c.ok = false
}

// key consumes `,"name":` (or `"name":` first) if it comes next.
func (c *canon) key(name string, first bool) bool {
	if !c.ok {
		return false
	}
	b := c.b
	if !first {
		if len(b) == 0 || b[0] != ',' {
			return false
		}
		b = b[1:]
	}
	if len(b) < len(name)+3 || b[0] != '"' || string(b[1:1+len(name)]) != name || b[1+len(name)] != '"' || b[2+len(name)] != ':' {
		return false
	}
	c.b = b[len(name)+3:]
	return true
}

// str reads a string. One without escapes is copied; one with escapes is
// unquoted by encoding/json, so the result is the same as Decode's.
func (c *canon) str() string {
	if !c.ok || len(c.b) == 0 || c.b[0] != '"' {
		c.ok = false
		return ""
	}
	// The common case: no escape before the closing quote, plain ASCII.
	if end := bytes.IndexByte(c.b[1:], '"') + 1; end > 0 {
		seg := c.b[1:end]
		if bytes.IndexByte(seg, '\\') < 0 && plainASCII(seg) {
			c.b = c.b[end+1:]
			return intern(seg)
		}
	}
	escaped := false
	for i := 1; i < len(c.b); i++ {
		ch := c.b[i]
		switch {
		case ch == '"':
			raw := c.b[:i+1]
			c.b = c.b[i+1:]
			if !escaped && utf8.Valid(raw) {
				return intern(raw[1:i])
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				c.ok = false
			}
			return s
		case ch == '\\':
			escaped = true
			i++
		case ch < 0x20:
			c.ok = false
			return ""
		}
	}
	c.ok = false
	return ""
}

// plainASCII reports whether b holds only printable ASCII and no control
// characters (which a JSON string may not hold raw), eight bytes at a time.
func plainASCII(b []byte) bool {
	const ones, highs, spaces = 0x0101010101010101, 0x8080808080808080, 0x2020202020202020
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		// A byte >= 0x80, or one below 0x20 (x - 0x20 borrows into its high bit).
		if x&highs != 0 || (x-spaces)&^x&highs != 0 {
			return false
		}
		b = b[8:]
	}
	for _, ch := range b {
		if ch < 0x20 || ch >= 0x80 {
			return false
		}
	}
	return true
}

// intern returns the common short values (roles) without allocating.
func intern(b []byte) string {
	if len(b) > len(RoleToolResult) {
		return string(b)
	}
	switch string(b) {
	case RoleUser:
		return RoleUser
	case RoleAssistant:
		return RoleAssistant
	case RoleToolResult:
		return RoleToolResult
	case RoleSystem:
		return RoleSystem
	}
	return string(b)
}

func (c *canon) int() int64 {
	i := 0
	if i < len(c.b) && c.b[i] == '-' {
		i++
	}
	start := i
	for i < len(c.b) && c.b[i] >= '0' && c.b[i] <= '9' {
		i++
	}
	if !c.ok || i == start || (c.b[start] == '0' && i > start+1) {
		c.ok = false
		return 0
	}
	n, err := strconv.ParseInt(string(c.b[:i]), 10, 64)
	c.ok = err == nil
	c.b = c.b[i:]
	return n
}

// nested decodes the array or object that comes next with Decode's rules
// (unknown fields refused).
func (c *canon) nested(v any) {
	if !c.ok {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(c.b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		c.ok = false
		return
	}
	c.b = c.b[dec.InputOffset():]
}

// canonicalChunkAppended recognises a canonical payload or, with a
// session, one stored without its leading session field.
func canonicalChunkAppended(payload []byte, session *string, ca *ChunkAppended) bool {
	c := canon{b: payload, ok: true}
	*ca = ChunkAppended{}
	c.lit("{")
	first := true
	if session != nil {
		ca.Session = *session
	} else if c.key("session", true) {
		ca.Session = c.str()
		first = false
	}
	if c.key("index", first) {
		ca.Index = c.int()
		first = false
	}
	c.ok = c.ok && !first
	c.ok = c.ok && c.key("chunk", false)
	c.lit("{")
	ch := &ca.Chunk
	c.ok = c.ok && c.key("role", true)
	ch.Role = c.str()
	if c.key("content", false) {
		ch.Content = c.str()
	}
	if c.key("name", false) {
		ch.Name = c.str()
	}
	if c.key("tool_call_id", false) {
		ch.ToolCallID = c.str()
	}
	if c.key("tool_calls", false) {
		if len(c.b) == 0 || c.b[0] != '[' {
			c.ok = false
		}
		c.nested(&ch.ToolCalls)
	}
	if c.key("author", false) {
		ch.Author = c.str()
	}
	if c.key("meta", false) {
		if len(c.b) == 0 || c.b[0] != '{' {
			c.ok = false
		}
		c.nested(&ch.Meta)
	}
	c.lit("}}")
	return c.ok && len(c.b) == 0
}
