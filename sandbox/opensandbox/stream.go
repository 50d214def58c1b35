package opensandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// event is one frame of execd's command stream. Fields are omitted when
// empty.
type event struct {
	Type          string     `json:"type"`
	Text          string     `json:"text"`
	ExecutionTime int64      `json:"execution_time"` // milliseconds
	Error         *execError `json:"error"`
}

type execError struct {
	Name      string   `json:"ename"`
	Value     string   `json:"evalue"`
	Traceback []string `json:"traceback"`
}

// frameReader reads execd's stream: one JSON object per line, frames
// separated by blank lines, no "data:" prefix in practice (one is stripped
// if present) and SSE comment or field lines skipped, as the official SDK
// does.
//
// A frame longer than max is not decoded: it is skipped to its end and
// reported to oversize with its length and its first and last bytes
// (between them they hold the event type, wherever the server put the
// field), so a command printing one enormous line cannot make the client
// buffer it.
type frameReader struct {
	r        *bufio.Reader
	max      int
	line     []byte
	tail     []byte
	oversize func(head, tail []byte, n int64)
}

func newFrameReader(r io.Reader, max int, oversize func(head, tail []byte, n int64)) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max, oversize: oversize}
}

// next returns the next event, or io.EOF at the end of the stream.
func (f *frameReader) next() (event, error) {
	for {
		line, err := f.readLine()
		if err != nil {
			return event{}, err
		}
		line = bytes.TrimSpace(line)
		switch {
		case len(line) == 0, line[0] == ':',
			bytes.HasPrefix(line, []byte("event:")),
			bytes.HasPrefix(line, []byte("id:")),
			bytes.HasPrefix(line, []byte("retry:")):
			continue
		}
		line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("data:")))
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			return event{}, errors.Join(errors.New("decode stream frame"), err)
		}
		return ev, nil
	}
}

// headLen is how much of each end of an oversize frame is kept for
// oversize: enough to read the event type.
const headLen = 256

// readLine returns one line without its terminator, skipping (and
// reporting) lines longer than max.
func (f *frameReader) readLine() ([]byte, error) {
	f.line = f.line[:0]
	var n int64 // length of the current line so far
	over := false
	for {
		chunk, err := f.r.ReadSlice('\n')
		n += int64(len(chunk))
		if !over && n > int64(f.max) {
			over = true
			f.line = f.line[:min(len(f.line), headLen)]
		}
		switch {
		case !over:
			f.line = append(f.line, chunk...)
		case len(f.line) < headLen:
			f.line = append(f.line, chunk[:min(len(chunk), headLen-len(f.line))]...)
		}
		if over {
			f.tail = append(f.tail, chunk...)
			if len(f.tail) > headLen {
				f.tail = append(f.tail[:0], f.tail[len(f.tail)-headLen:]...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the line goes on
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if over {
			if f.oversize != nil {
				f.oversize(f.line, f.tail, n)
			}
			if err != nil {
				return nil, err
			}
			f.line, f.tail, n, over = f.line[:0], f.tail[:0], 0, false
			continue
		}
		if len(f.line) == 0 && err != nil {
			return nil, io.EOF
		}
		// A complete line, or a last line without a newline (the next
		// call then reports io.EOF).
		return f.line, nil
	}
}
