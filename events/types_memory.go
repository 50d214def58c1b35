package events

// Memory event types. A namespace's events live on the stream
// MemoryStream(namespace).
const (
	TypeMemoryRemembered = "memory.remembered"
	TypeMemoryForgotten  = "memory.forgotten"
	TypeMemoryRecalled   = "memory.recalled"
	TypeMemoryCommitted  = "memory.committed"
)

// MemoryStream is the stream holding a memory namespace's events.
func MemoryStream(namespace string) string { return "memory:" + namespace }

// MemoryRemembered stores one memory item.
type MemoryRemembered struct {
	Namespace string            `json:"namespace"`
	ID        string            `json:"id"`
	Text      string            `json:"text"`
	Meta      map[string]string `json:"meta,omitempty"`
	// Session is the session the memory was taken from, if any.
	Session string `json:"session,omitempty"`
	// Backend names the memory backend that stored it when it is not the
	// local index (like "openviking"; ID is then its viking:// URI). The
	// local index skips such memories.
	Backend string `json:"backend,omitempty"`
}

func (MemoryRemembered) EventType() string  { return TypeMemoryRemembered }
func (MemoryRemembered) EventVersion() int  { return 1 }
func (e MemoryRemembered) StreamID() string { return MemoryStream(e.Namespace) }
func (e MemoryRemembered) Validate() error {
	if e.Namespace == "" || e.ID == "" {
		return invalid("memory.remembered needs a namespace and an id")
	}
	return nil
}

// MemoryForgotten is a tombstone: the item must never be recalled again.
type MemoryForgotten struct {
	Namespace string `json:"namespace"`
	ID        string `json:"id"`
	// Reason and By, when given, say why and by whom (the console asks).
	Reason  string `json:"reason,omitempty"`
	By      string `json:"by,omitempty"`
	Backend string `json:"backend,omitempty"` // as in MemoryRemembered
}

func (MemoryForgotten) EventType() string  { return TypeMemoryForgotten }
func (MemoryForgotten) EventVersion() int  { return 1 }
func (e MemoryForgotten) StreamID() string { return MemoryStream(e.Namespace) }
func (e MemoryForgotten) Validate() error {
	if e.Namespace == "" || e.ID == "" {
		return invalid("memory.forgotten needs a namespace and an id")
	}
	return nil
}

// MemoryHit is one recalled item.
type MemoryHit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
	Text  string  `json:"text"`
	// URI and Level are set by backends that address contexts by URI
	// (OpenViking: a viking:// URI, level 0 abstract, 1 overview, 2
	// content).
	URI   string `json:"uri,omitempty"`
	Level *int   `json:"level,omitempty"`
}

// MemoryRecalled records a recall and its hits, so a replay answers from
// the log even if the index changed since. It goes on the stream of the
// session it was made for, or the namespace stream when there is none.
type MemoryRecalled struct {
	Namespace string      `json:"namespace"`
	Query     string      `json:"query"`
	K         int         `json:"k"`
	Hits      []MemoryHit `json:"hits"`
	Session   string      `json:"session,omitempty"`
	Agent     string      `json:"agent,omitempty"`
	// Backend names the backend asked when it is not the local index.
	Backend string `json:"backend,omitempty"`
	// Error is why the recall failed, when the agent went on without its
	// hits (a memory server down, slow or answering nonsense).
	Error string `json:"error,omitempty"`
}

func (MemoryRecalled) EventType() string { return TypeMemoryRecalled }
func (MemoryRecalled) EventVersion() int { return 1 }
func (e MemoryRecalled) Validate() error {
	if e.Namespace == "" {
		return invalid("memory.recalled needs a namespace")
	}
	return nil
}

// MemoryCommitted records that a session was committed to memory and which
// items it produced.
type MemoryCommitted struct {
	Namespace string   `json:"namespace"`
	Session   string   `json:"session"`
	IDs       []string `json:"ids"`
	Model     string   `json:"model,omitempty"` // empty when archived without a model
	// Backend names the backend committed to when it is not the local
	// index; Remote then holds what its server answered.
	Backend string        `json:"backend,omitempty"`
	Remote  *RemoteCommit `json:"remote,omitempty"`
}

// RemoteCommit is a commit to a memory server (OpenViking): the messages
// sent, the server's session and commit answer, and, if the commit's
// background task was polled to its end, what it extracted.
type RemoteCommit struct {
	Messages int    `json:"messages"`
	Digest   string `json:"digest"` // sha256 of the messages sent, as JSON
	Session  string `json:"session,omitempty"`
	Status   string `json:"status,omitempty"` // the commit's: accepted or skipped
	Task     string `json:"task,omitempty"`
	Archive  string `json:"archive,omitempty"`
	// TaskStatus is the task's last polled state (completed, failed,
	// running, pending); empty when not polled.
	TaskStatus string `json:"task_status,omitempty"`
	// Extracted is the completed task's result as the server sent it.
	Extracted string `json:"extracted,omitempty"`
	// Error is why the commit or the poll failed; the agent went on.
	Error string `json:"error,omitempty"`
}

func (MemoryCommitted) EventType() string  { return TypeMemoryCommitted }
func (MemoryCommitted) EventVersion() int  { return 1 }
func (e MemoryCommitted) StreamID() string { return MemoryStream(e.Namespace) }
func (e MemoryCommitted) Validate() error {
	if e.Namespace == "" || e.Session == "" {
		return invalid("memory.committed needs a namespace and a session")
	}
	return nil
}
