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
	Reason string `json:"reason,omitempty"`
	By     string `json:"by,omitempty"`
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
