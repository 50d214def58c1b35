package events

// Event types of runs on a worker fleet (package fleet).
const (
	TypeRunSubmitted = "run.submitted"
	TypeRunLeased    = "run.leased"
)

// SubmitStream is the stream of a submitted run's run.submitted event
// (the run's own stream starts with run.started, when a worker starts it).
func SubmitStream(run string) string { return "submit:" + run }

// LeaseStream is the stream of a run's leases: one run.leased per take
// and per renewal.
func LeaseStream(run string) string { return "lease:" + run }

// RunSubmitted records a run put on the queue: what a worker needs to
// start it. Its job is enqueued in the same transaction.
type RunSubmitted struct {
	Run          string            `json:"run"`
	Workflow     string            `json:"workflow"`
	InputSession string            `json:"input_session"`
	Queue        string            `json:"queue"`
	Params       map[string]string `json:"params,omitempty"`
	// Tenant is the tenant the run belongs to (empty: DefaultTenant);
	// only a worker started for it takes the run.
	Tenant string `json:"tenant,omitempty"`
	// Subject is whose content the run is ("user:ID"; empty: its own),
	// under which the worker runs it.
	Subject string `json:"subject,omitempty"`
}

func (RunSubmitted) EventType() string  { return TypeRunSubmitted }
func (RunSubmitted) EventVersion() int  { return 1 }
func (e RunSubmitted) StreamID() string { return SubmitStream(e.Run) }
func (e RunSubmitted) Validate() error {
	if e.Run == "" || e.Workflow == "" || e.InputSession == "" {
		return invalid("run.submitted: run, workflow and input_session are required")
	}
	return checkTenantOf("run.submitted", e.Tenant)
}

// RunLeased records that Worker holds Run until ExpiresAt (Unix
// nanoseconds) under fencing token Token. A take raises the token by one;
// a renewal repeats it with a later expiry. While a token is current, the
// store refuses the run's appends made under any other (see
// eventlog.Scope's Lease).
type RunLeased struct {
	Run       string `json:"run"`
	Worker    string `json:"worker"`
	Token     int64  `json:"token"`
	ExpiresAt int64  `json:"expires_at"`
	Renewal   bool   `json:"renewal,omitempty"`
}

func (RunLeased) EventType() string  { return TypeRunLeased }
func (RunLeased) EventVersion() int  { return 1 }
func (e RunLeased) StreamID() string { return LeaseStream(e.Run) }
func (e RunLeased) Validate() error {
	if e.Run == "" || e.Worker == "" || e.Token < 1 || e.ExpiresAt <= 0 {
		return invalid("run.leased: run, worker, a positive token and an expiry are required")
	}
	return nil
}

// TypeRunResumed is the type of RunResumed.
const TypeRunResumed = "run.resumed"

// ResumeStream is the stream of a run's run.resumed events. They carry no
// run id: they are about the run, not part of what it did, and a replay
// of the run does not expect them.
func ResumeStream(run string) string { return "resume:" + run }

// InterruptedCall is a tool call the record shows started but not
// finished.
type InterruptedCall struct {
	Session string `json:"session"`
	CallID  string `json:"call_id"`
	Tool    string `json:"tool"`
}

// RunResumed records that a run was continued after it stopped
// unfinished (its process or worker died), at head AfterSeq of its
// record. Interrupted are the tool calls that were in flight: they run
// again, so their effects may happen twice (at-least-once).
type RunResumed struct {
	Run         string            `json:"run"`
	AfterSeq    int64             `json:"after_seq"`
	Interrupted []InterruptedCall `json:"interrupted,omitempty"`
}

func (RunResumed) EventType() string  { return TypeRunResumed }
func (RunResumed) EventVersion() int  { return 1 }
func (e RunResumed) StreamID() string { return ResumeStream(e.Run) }
func (e RunResumed) Validate() error {
	if e.Run == "" {
		return invalid("run.resumed: run is required")
	}
	return nil
}
