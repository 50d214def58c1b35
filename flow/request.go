package flow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/flow/model"
)

// A recorded request is stored as two kinds of blobs, so that a long
// session does not store its transcript again with every call:
//
//   - the request record: the request without its messages, plus the ref
//     of its message list;
//   - message segments: {"prev": ref, "add": [messages]}, each extending
//     the list ending at prev (the previous call of the same agent loop).
//
// The digest replay compares is sha256(canonical envelope || chain), where
// chain folds sha256 over each message's canonical JSON in order; it
// depends only on the request, however it was segmented.

// requestRecord is the stored form of a request.
type requestRecord struct {
	Agent       string           `json:"agent,omitempty"`
	Model       string           `json:"model"`
	Tools       []model.ToolSpec `json:"tools,omitempty"`
	ToolChoice  string           `json:"tool_choice,omitempty"`
	Sampling    model.Sampling   `json:"sampling"`
	MessagesRef string           `json:"messages_ref"`
	Messages    int              `json:"messages"`
}

type msgSegment struct {
	Prev string          `json:"prev,omitempty"`
	Add  []model.Message `json:"add"`
}

// requestLog remembers how far a conversation's messages were already
// hashed and stored, across the calls of one agent loop. The zero value
// starts from nothing. Callers promise that each request's messages extend
// the previous one's (an append-only session under a fixed head).
type requestLog struct {
	n     int
	chain [sha256.Size]byte
	ref   string
}

// encodedRequest is a request ready to record.
type encodedRequest struct {
	digest string
	ref    string   // blob hash of the request record
	blobs  [][]byte // the record and the new segment
}

func (l *requestLog) encode(req model.Request) (encodedRequest, error) {
	var out encodedRequest
	if l.n > len(req.Messages) {
		*l = requestLog{} // not an extension: start over
	}
	add := req.Messages[l.n:]
	chain := l.chain
	for i := range add {
		raw, err := events.Canonical(add[i])
		if err != nil {
			return out, err
		}
		h := sha256.New()
		h.Write(chain[:])
		m := sha256.Sum256(raw)
		h.Write(m[:])
		h.Sum(chain[:0])
	}
	ref := l.ref
	if len(add) > 0 || l.ref == "" {
		seg, err := events.Canonical(msgSegment{Prev: l.ref, Add: add})
		if err != nil {
			return out, err
		}
		ref = eventlog.BlobHash(seg)
		out.blobs = append(out.blobs, seg)
	}
	envelope := requestRecord{Agent: req.Agent, Model: req.Model, Tools: req.Tools, ToolChoice: req.ToolChoice, Sampling: req.Sampling, Messages: len(req.Messages)}
	env, err := events.Canonical(envelope)
	if err != nil {
		return out, err
	}
	d := sha256.New()
	d.Write(env)
	d.Write(chain[:])
	out.digest = hex.EncodeToString(d.Sum(nil))
	envelope.MessagesRef = ref
	rec, err := events.Canonical(envelope)
	if err != nil {
		return out, err
	}
	out.ref = eventlog.BlobHash(rec)
	out.blobs = append(out.blobs, rec)
	l.n, l.chain, l.ref = len(req.Messages), chain, ref
	return out, nil
}

// RequestDigest returns the digest replay compares for a request.
func RequestDigest(req model.Request) (string, error) {
	var l requestLog
	enc, err := l.encode(req)
	return enc.digest, err
}

// BlobGetter reads blobs; *eventlog.Store is one.
type BlobGetter interface {
	GetBlob(ctx context.Context, hash string) ([]byte, error)
}

// LoadRequest rebuilds a recorded request from its ref (a provider
// event's request_ref), following its message segments. To load many
// requests of one run, use a RequestLoader.
func LoadRequest(ctx context.Context, blobs BlobGetter, ref string) (model.Request, error) {
	return NewRequestLoader(blobs).Load(ctx, ref)
}

// RequestLoader rebuilds recorded requests like LoadRequest, decoding each
// message segment once. Successive calls of an agent loop share all but
// their last segment, so loading every request of a long run this way
// reads and decodes each message once instead of once per later call. It
// is not safe for concurrent use.
type RequestLoader struct {
	blobs BlobGetter
	segs  map[string]msgSegment // decoded segments by blob hash
}

// NewRequestLoader returns a loader reading blobs from blobs.
func NewRequestLoader(blobs BlobGetter) *RequestLoader {
	return &RequestLoader{blobs: blobs, segs: map[string]msgSegment{}}
}

// Load rebuilds the request recorded under ref.
func (l *RequestLoader) Load(ctx context.Context, ref string) (model.Request, error) {
	raw, err := l.blobs.GetBlob(ctx, ref)
	if err != nil {
		return model.Request{}, err
	}
	var rec requestRecord
	if err := strictJSON(raw, &rec); err != nil {
		return model.Request{}, fmt.Errorf("flow: request %s: %w", ref, err)
	}
	var segs [][]model.Message
	total := 0
	for next := rec.MessagesRef; next != ""; {
		s, err := l.segment(ctx, next)
		if err != nil {
			return model.Request{}, err
		}
		segs = append(segs, s.Add)
		total += len(s.Add)
		next = s.Prev
	}
	req := model.Request{Agent: rec.Agent, Model: rec.Model, Tools: rec.Tools, ToolChoice: rec.ToolChoice, Sampling: rec.Sampling}
	req.Messages = make([]model.Message, 0, total)
	for i := len(segs) - 1; i >= 0; i-- {
		req.Messages = append(req.Messages, segs[i]...)
	}
	if len(req.Messages) != rec.Messages {
		return req, fmt.Errorf("flow: request %s: %d messages rebuilt, %d recorded", ref, len(req.Messages), rec.Messages)
	}
	return req, nil
}

// segment returns the decoded segment stored under hash. The cache is
// sound because a blob's hash is its content's.
func (l *RequestLoader) segment(ctx context.Context, hash string) (msgSegment, error) {
	if s, ok := l.segs[hash]; ok {
		return s, nil
	}
	raw, err := l.blobs.GetBlob(ctx, hash)
	if err != nil {
		return msgSegment{}, err
	}
	var s msgSegment
	if err := strictJSON(raw, &s); err != nil {
		return msgSegment{}, fmt.Errorf("flow: request segment %s: %w", hash, err)
	}
	l.segs[hash] = s
	return s, nil
}

func strictJSON(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
