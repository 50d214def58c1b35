package memory

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/gorath/rath/events"
	"github.com/gorath/rath/session"
)

// DefaultK is the number of hits Recall returns when asked for k <= 0.
const DefaultK = 5

// Namespaces group memories. Any non-empty string is a namespace; these
// helpers spell the conventional ones.
const ResourcesNamespace = "resources"

// UserNamespace is the namespace of what is remembered about a user.
func UserNamespace(name string) string { return "user/" + name }

// AgentNamespace is the namespace of an agent, by module path
// (like "root.coder").
func AgentNamespace(path string) string { return "agent/" + path }

// SessionNamespace is the namespace scoped to one session.
func SessionNamespace(id string) string { return "session/" + id }

// Memory is long-term memory shared by the agents of a program. Every
// write is an event in the log; recalls made for an agent are recorded on
// the agent's session so a replay can answer from the log.
//
// Implementations are safe for concurrent use.
type Memory interface {
	// Remember stores text with optional metadata in namespace ns and
	// returns the memory's id. It returns once the write is durable.
	Remember(ctx context.Context, ns, text string, meta map[string]string) (string, error)
	// Recall returns up to k memories of ns that best match query, best
	// first (k <= 0 means DefaultK). It sees every memory remembered or
	// forgotten before the call, and records nothing.
	Recall(ctx context.Context, ns, query string, k int) ([]Hit, error)
	// RecallFor is Recall on behalf of the agent working on s: it records a
	// memory.recalled event with the hits on s's stream and returns the new
	// handle. A stale s fails with session.ErrStale and records nothing.
	RecallFor(ctx context.Context, s *session.Session, ns, query string, k int, opts ...RecallOption) (*session.Session, []Hit, error)
	// Commit stores what session s taught into ns and records a
	// memory.committed event, atomically. Without an extractor it archives
	// each user and assistant chunk's text; with one (WithExtractor) it
	// stores the extracted memos. It returns the new memories' ids.
	Commit(ctx context.Context, ns string, s *session.Session, opts ...CommitOption) ([]string, error)
	// Forget records a tombstone for memory id of ns: it is never recalled
	// again. The text stays in the event log (forgetting is not erasure).
	// ErrNotFound if id is not a live memory of ns.
	Forget(ctx context.Context, ns, id string) error
	// List returns the live memories of ns in the order they were
	// remembered.
	List(ctx context.Context, ns string) ([]Item, error)
}

// Hit is one recalled memory.
type Hit struct {
	ID        string            `json:"id"`
	Namespace string            `json:"namespace"`
	Text      string            `json:"text"`
	Meta      map[string]string `json:"meta,omitempty"`
	// Score is the BM25 score, or the cosine similarity to the query when
	// embeddings re-ranking is on. Higher is better; scores compare only
	// within one recall.
	Score float64 `json:"score"`
	// URI and Level are set by backends that address contexts by URI
	// (OpenViking: a viking:// URI; level 0 abstract, 1 overview, 2
	// content). ID is then the URI.
	URI   string `json:"uri,omitempty"`
	Level *int   `json:"level,omitempty"`
}

// Item is one stored memory, as listed.
type Item struct {
	ID        string            `json:"id"`
	Namespace string            `json:"namespace"`
	Text      string            `json:"text"`
	Meta      map[string]string `json:"meta,omitempty"`
	// Session is the session the memory was committed from, if any.
	Session string `json:"session,omitempty"`
	// Seq is the log position of its memory.remembered event.
	Seq int64 `json:"seq"`
}

// Extractor turns a session into short memos, typically with one recorded
// model call. Package flow provides one; tests use fakes.
type Extractor interface {
	Extract(ctx context.Context, s *session.Session) (Extraction, error)
}

// Extraction is what an Extractor produced.
type Extraction struct {
	// Model names the model that wrote the memos; it is recorded in the
	// memory.committed event.
	Model string
	Memos []string
}

// ExtractorFunc adapts a function to Extractor.
type ExtractorFunc func(ctx context.Context, s *session.Session) (Extraction, error)

// Extract calls f.
func (f ExtractorFunc) Extract(ctx context.Context, s *session.Session) (Extraction, error) {
	return f(ctx, s)
}

// CommitOption configures one Commit call.
type CommitOption func(*commitOptions)

type commitOptions struct {
	extractor Extractor
}

// WithExtractor makes Commit store the memos e extracts instead of
// archiving the transcript.
func WithExtractor(e Extractor) CommitOption {
	return func(o *commitOptions) { o.extractor = e }
}

// RecallOption configures one RecallFor call.
type RecallOption func(*recallOptions)

type recallOptions struct {
	agent string
}

// WithAgent records the module path of the agent the recall was made for.
func WithAgent(path string) RecallOption {
	return func(o *recallOptions) { o.agent = path }
}

// RecallAgent returns the agent path opts record (WithAgent), for
// backends outside this package.
func RecallAgent(opts ...RecallOption) string {
	var o recallOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o.agent
}

// DeriveID returns the id of the memory stored by the event at version of
// namespace ns's stream. Ids are derived, not random, so a replayed run
// produces the same ids.
func DeriveID(ns string, version int64) string {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(ns)))
	h.Write(n[:])
	h.Write([]byte(ns))
	binary.BigEndian.PutUint64(n[:], uint64(version))
	h.Write(n[:])
	return "m-" + hex.EncodeToString(h.Sum(nil))[:20]
}

func checkNamespace(ns string) error {
	if ns == "" || strings.TrimSpace(ns) != ns {
		return invalidf("namespace %q: want a non-empty name without surrounding spaces", ns)
	}
	return nil
}

// eventHits converts hits to their recorded form.
func eventHits(hits []Hit) []events.MemoryHit {
	out := make([]events.MemoryHit, len(hits))
	for i, h := range hits {
		out[i] = EventHit(h)
	}
	return out
}
