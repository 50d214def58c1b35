package vikingmem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/memory"
	"github.com/gorath/rath/memory/openviking"
	"github.com/gorath/rath/session"
)

// Name is the backend's name in a memory.BackendConfig.
const Name = "openviking"

// DefaultCommitWait bounds how long Commit polls the server's extraction
// task when Options.CommitWait is zero.
const DefaultCommitWait = 5 * time.Second

// DefaultPollInterval is the pause between two polls of a task.
const DefaultPollInterval = 100 * time.Millisecond

// maxWriteAttempts bounds the retries of a Remember that loses a race for
// its URI or its stream version.
const maxWriteAttempts = 8

// Options configure a Memory.
type Options struct {
	// Client calls the server. Required.
	Client *openviking.Client
	// User is the OpenViking user whose space holds the namespaces
	// (viking://user/{User}/memories/rath/…); empty means "default".
	User string
	// CommitWait bounds how long Commit polls the extraction task; zero
	// means DefaultCommitWait, negative does not poll.
	CommitWait time.Duration
	// PollInterval is the pause between polls; zero means
	// DefaultPollInterval.
	PollInterval time.Duration
}

// Memory is a memory.Memory kept by an OpenViking server, every operation
// recorded in rath's log. It is safe for concurrent use.
type Memory struct {
	store *eventlog.Store
	c     *openviking.Client
	opts  Options

	mu    sync.Mutex // protects locks
	locks map[string]*sync.Mutex
}

var _ memory.Memory = (*Memory)(nil)
var _ memory.CommitReplayer = (*Memory)(nil)

// New returns a Memory recording into store; it makes no request.
func New(store *eventlog.Store, opts Options) (*Memory, error) {
	if store == nil || opts.Client == nil {
		return nil, fmt.Errorf("%w: vikingmem: a store and a client are required", memory.ErrInvalid)
	}
	if opts.User == "" {
		opts.User = "default"
	}
	if strings.ContainsAny(opts.User, "/\\\x00") || strings.TrimSpace(opts.User) != opts.User {
		return nil, fmt.Errorf("%w: vikingmem: user %q", memory.ErrInvalid, opts.User)
	}
	if opts.CommitWait == 0 {
		opts.CommitWait = DefaultCommitWait
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	return &Memory{store: store, c: opts.Client, opts: opts, locks: map[string]*sync.Mutex{}}, nil
}

// Backend returns the memory.Backend that opens a Memory from a config:
// URL, the key from the environment variable APIKeyEnv (added to the
// runtime's secrets), KeyHeader, Account, User, CommitWaitMS, TimeoutMS.
// A missing key is not an error when opening: a replay opens the
// recorded backend without it and makes no request.
func Backend() memory.Backend {
	return memory.BackendFunc(Name, func(_ context.Context, env memory.BackendEnv, cfg memory.BackendConfig) (memory.Memory, error) {
		if cfg.URL == "" {
			return nil, fmt.Errorf("%w: backend %s needs a url", memory.ErrInvalid, Name)
		}
		var key string
		if cfg.APIKeyEnv != "" && env.Getenv != nil {
			key = env.Getenv(cfg.APIKeyEnv)
		}
		if key != "" && env.AddSecret != nil {
			env.AddSecret(key)
		}
		c, err := openviking.New(openviking.Options{URL: cfg.URL, APIKey: key, KeyHeader: cfg.KeyHeader, Agent: "rath",
			Account: cfg.Account, User: cfg.User, Timeout: time.Duration(cfg.TimeoutMS) * time.Millisecond})
		if err != nil {
			return nil, err
		}
		wait := time.Duration(cfg.CommitWaitMS) * time.Millisecond
		if cfg.CommitWaitMS < 0 {
			wait = -1
		}
		return New(env.Store, Options{Client: c, User: cfg.User, CommitWait: wait})
	})
}

// BackendName returns Name: recorded events name the backend.
func (m *Memory) BackendName() string { return Name }

// Root returns the directory URI that holds namespace ns: a namespace
// that is itself a viking:// directory URI is used as it is (so an agent
// can recall from all of a user's memories, viking://user/alice/memories/,
// or viking://~/memories/ for this backend's user's own);
// any other is one escaped directory under
// viking://user/{user}/memories/rath/.
func (m *Memory) Root(ns string) (openviking.URI, error) {
	if err := memory.CheckNamespace(ns); err != nil {
		return openviking.URI{}, err
	}
	if strings.HasPrefix(ns, openviking.Scheme) {
		u, err := openviking.ParseURI(ns)
		if err != nil {
			return u, fmt.Errorf("%w: namespace %q: %v", memory.ErrInvalid, ns, err)
		}
		u.Dir = true
		// The home alias is this backend's user's space: expanded, the
		// namespace's URIs are the ones the server answers with, and
		// the ids rath records are the same however the namespace was
		// spelled.
		return u.ForUser(m.opts.User), nil
	}
	u := openviking.UserMemoriesURI(m.opts.User).Join("rath", escape(ns))
	u.Dir = true
	return u, nil
}

// escape makes a namespace one URI segment: letters, digits, '-', '_'
// and '.' stay; every other byte is %XX, so distinct namespaces never
// share a directory.
func escape(ns string) string {
	var b strings.Builder
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || (c == '.' && ns != "." && ns != "..") {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func (m *Memory) lock(ns string) func() {
	m.mu.Lock()
	l := m.locks[ns]
	if l == nil {
		l = &sync.Mutex{}
		m.locks[ns] = l
	}
	m.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func failed(op string, err error) error {
	if errors.Is(err, openviking.ErrInvalidArgument) || errors.Is(err, memory.ErrInvalid) {
		return fmt.Errorf("%w: %w", memory.ErrInvalid, err)
	}
	return &memory.BackendError{Backend: Name, Op: op, Err: err}
}

// Remember writes text as a new file under the namespace's directory
// (content/write, mode create, waiting for its index) and records a
// memory.remembered event naming its URI, which is the memory's id.
func (m *Memory) Remember(ctx context.Context, ns, text string, meta map[string]string) (string, error) {
	root, err := m.Root(ns)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("%w: remember in %q: empty text", memory.ErrInvalid, ns)
	}
	defer m.lock(ns)()
	stream := events.MemoryStream(ns)
	for range maxWriteAttempts {
		v, err := m.store.StreamVersion(ctx, stream)
		if err != nil {
			return "", fmt.Errorf("memory: remember in %q: %w", ns, err)
		}
		uri := root.Join(memory.DeriveID(ns, v+1) + ".md").String()
		_, err = m.c.Write(ctx, openviking.WriteRequest{URI: uri, Content: text, Mode: openviking.WriteCreate, Wait: true})
		if errors.Is(err, openviking.ErrConflict) {
			// Either another process claimed this version (the stream
			// moved on: retry at the new one) or a write whose event was
			// never recorded left the file behind: no event names it, so
			// it is overwritten.
			if nv, verr := m.store.StreamVersion(ctx, stream); verr == nil && nv == v {
				_, err = m.c.Write(ctx, openviking.WriteRequest{URI: uri, Content: text, Mode: openviking.WriteReplace, Wait: true})
			} else {
				continue
			}
		}
		if err != nil {
			return "", failed("remember", err)
		}
		_, err = m.store.Append(ctx, stream, v, events.MemoryRemembered{Namespace: ns, ID: uri, Text: text, Meta: meta, Backend: Name})
		var ce *eventlog.ConflictError
		if errors.As(err, &ce) {
			continue // another process wrote first; its event names another URI
		}
		if err != nil {
			return "", fmt.Errorf("memory: remember in %q: %w", ns, err)
		}
		return uri, nil
	}
	return "", fmt.Errorf("%w %q", memory.ErrContention, ns)
}

// Recall runs search/find under the namespace's directory and returns
// its hits (memories, resources, skills) best first: ID and URI are the
// context's URI, Text its overview if the server gave one, else its
// abstract. It records nothing.
func (m *Memory) Recall(ctx context.Context, ns, q string, k int) ([]memory.Hit, error) {
	root, err := m.Root(ns)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(q) == "" {
		return nil, fmt.Errorf("%w: recall in %q: empty query", memory.ErrInvalid, ns)
	}
	if k <= 0 {
		k = memory.DefaultK
	}
	res, err := m.c.Find(ctx, openviking.FindRequest{Query: q, TargetURI: root.String(), Limit: k})
	if errors.Is(err, openviking.ErrNotFound) {
		return nil, nil // nothing remembered in ns yet: no directory
	}
	if err != nil {
		return nil, failed("recall", err)
	}
	var all []openviking.Context
	all = append(append(append(all, res.Memories...), res.Resources...), res.Skills...)
	slices.SortStableFunc(all, func(a, b openviking.Context) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.URI, b.URI)
	})
	if len(all) > k {
		all = all[:k]
	}
	var meta map[string]map[string]string // the metadata of memories remembered through rath
	for _, c := range all {
		if strings.HasPrefix(c.URI, root.String()) {
			items, err := memory.ListStream(ctx, m.store, ns, Name)
			if err != nil {
				return nil, fmt.Errorf("memory: recall in %q: %w", ns, err)
			}
			meta = map[string]map[string]string{}
			for _, it := range items {
				meta[it.ID] = it.Meta
			}
			break
		}
	}
	hits := make([]memory.Hit, 0, len(all))
	for _, c := range all {
		text := c.Overview
		if text == "" {
			text = c.Abstract
		}
		level := c.Level
		hits = append(hits, memory.Hit{ID: c.URI, URI: c.URI, Level: &level, Namespace: ns, Text: text, Score: c.Score, Meta: meta[c.URI]})
	}
	return hits, nil
}

// RecallFor recalls and records a memory.recalled event with the hits on
// s's stream.
func (m *Memory) RecallFor(ctx context.Context, s *session.Session, ns, q string, k int, opts ...memory.RecallOption) (*session.Session, []memory.Hit, error) {
	if s == nil {
		return nil, nil, fmt.Errorf("%w: recall in %q: nil session", memory.ErrInvalid, ns)
	}
	if k <= 0 {
		k = memory.DefaultK
	}
	hits, err := m.Recall(ctx, ns, q, k)
	if err != nil {
		return nil, nil, err
	}
	rec := events.MemoryRecalled{Namespace: ns, Query: q, K: k, Session: s.ID(), Agent: memory.RecallAgent(opts...), Backend: Name}
	for _, h := range hits {
		rec.Hits = append(rec.Hits, memory.EventHit(h))
	}
	next, err := s.Emit(ctx, nil, rec)
	if err != nil {
		return nil, nil, fmt.Errorf("memory: record recall in %q: %w", ns, err)
	}
	return next, hits, nil
}

// messages is what a commit sends: the session's user and assistant
// text, in order.
func messages(s *session.Session) []openviking.Message {
	var out []openviking.Message
	for _, c := range s.Chunks() {
		if (c.Role == events.RoleUser || c.Role == events.RoleAssistant) && strings.TrimSpace(c.Content) != "" {
			out = append(out, openviking.Message{Role: c.Role, Content: c.Content})
		}
	}
	return out
}

func digest(msgs []openviking.Message) string {
	raw, _ := json.Marshal(msgs)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// Commit sends session s to the server and commits it there: a server
// session is created, s's user and assistant messages added, and the
// session committed (phase 1: archived; phase 2, the extraction of
// memories, runs as a server task, polled for up to CommitWait). One
// memory.committed event records what was sent and what the server
// answered, failures included. The server extracts the memories itself,
// where its own memory schemas put them (under viking://user/{user}/
// memories/), so an Extractor is not used and no ids are returned.
// Errors: ErrInvalid, or a *memory.BackendError (recorded first) when the
// server failed or the task did not finish in time.
func (m *Memory) Commit(ctx context.Context, ns string, s *session.Session, _ ...memory.CommitOption) ([]string, error) {
	if _, err := m.Root(ns); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, fmt.Errorf("%w: commit to %q: nil session", memory.ErrInvalid, ns)
	}
	msgs := messages(s)
	rc := &events.RemoteCommit{Messages: len(msgs), Digest: digest(msgs)}
	opErr := m.commit(ctx, msgs, rc)
	if opErr != nil {
		rc.Error = opErr.Error()
	}
	ev := events.MemoryCommitted{Namespace: ns, Session: s.ID(), IDs: []string{}, Backend: Name, Remote: rc}
	// In the session's run, as the session's own events are.
	if _, err := m.store.In(s.Manager().Scope()).Append(ctx, events.MemoryStream(ns), eventlog.AnyVersion, ev); err != nil {
		if opErr != nil {
			return nil, fmt.Errorf("memory: record commit to %q: %w (the server's failure: %v)", ns, err, opErr)
		}
		return nil, fmt.Errorf("memory: record commit to %q: %w", ns, err)
	}
	return nil, opErr
}

func (m *Memory) commit(ctx context.Context, msgs []openviking.Message, rc *events.RemoteCommit) error {
	id, err := m.c.CreateSession(ctx)
	if err != nil {
		return failed("commit", err)
	}
	rc.Session = id
	if len(msgs) > 0 {
		if err := m.c.AddMessages(ctx, id, msgs); err != nil {
			return failed("commit", err)
		}
	}
	cm, err := m.c.CommitSession(ctx, id)
	if err != nil {
		return failed("commit", err)
	}
	rc.Status, rc.Task, rc.Archive = cm.Status, cm.TaskID, cm.ArchiveURI
	if cm.TaskID == "" || m.opts.CommitWait < 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, m.opts.CommitWait)
	defer cancel()
	t, err := m.c.WaitTask(wctx, cm.TaskID, m.opts.PollInterval)
	rc.TaskStatus = t.Status
	if err != nil {
		return failed("commit task", err)
	}
	if t.Status == openviking.TaskFailed {
		return failed("commit task", fmt.Errorf("%w: task %s failed: %s", openviking.ErrServer, t.TaskID, t.Error))
	}
	rc.Extracted = string(t.Result)
	return nil
}

// ReplayCommit rebuilds the commit's event for a replay: what would be
// sent comes from s with the replayed code, what the server answered
// from the recorded event. It makes no request.
func (m *Memory) ReplayCommit(_ context.Context, ns string, s *session.Session, recorded *events.MemoryCommitted) ([]events.Payload, error) {
	msgs := messages(s)
	rc := events.RemoteCommit{}
	if recorded != nil && recorded.Remote != nil {
		rc = *recorded.Remote
	}
	rc.Messages, rc.Digest = len(msgs), digest(msgs)
	return []events.Payload{events.MemoryCommitted{Namespace: ns, Session: s.ID(), IDs: []string{}, Backend: Name, Remote: &rc}}, nil
}

// Forget deletes the memory's file on the server and records a
// memory.forgotten tombstone. ErrNotFound if id is not a live memory
// remembered in ns through rath.
func (m *Memory) Forget(ctx context.Context, ns, id string) error {
	if _, err := m.Root(ns); err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("%w: forget in %q: empty id", memory.ErrInvalid, ns)
	}
	defer m.lock(ns)()
	items, err := m.List(ctx, ns)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(items, func(it memory.Item) bool { return it.ID == id }) {
		return fmt.Errorf("%w: %s in %q", memory.ErrNotFound, id, ns)
	}
	if err := m.c.Delete(ctx, id, false); err != nil && !errors.Is(err, openviking.ErrNotFound) {
		return failed("forget", err)
	}
	if _, err := m.store.Append(ctx, events.MemoryStream(ns), eventlog.AnyVersion, events.MemoryForgotten{Namespace: ns, ID: id, Backend: Name}); err != nil {
		return fmt.Errorf("memory: forget in %q: %w", ns, err)
	}
	return nil
}

// List returns the live memories remembered in ns through rath, from the
// log (what the server extracted from committed sessions is found by
// Recall, not listed).
func (m *Memory) List(ctx context.Context, ns string) ([]memory.Item, error) {
	if _, err := m.Root(ns); err != nil {
		return nil, err
	}
	return memory.ListStream(ctx, m.store, ns, Name)
}
