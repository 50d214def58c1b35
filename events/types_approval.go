package events

// Event types of a person in the loop: a run asks (a tool call that needs
// approval, a question), a person decides later, from anywhere.
const (
	TypeApprovalRequested = "approval.requested"
	TypeApprovalDecided   = "approval.decided"
)

// ApprovalStream is the stream of one request: approval.requested at
// version 1, approval.decided at version 2. Deciders append the decision
// at expected version 1, so of two concurrent deciders exactly one lands.
func ApprovalStream(id string) string { return "approval:" + id }

// Approval request kinds.
const (
	ApprovalTool     = "tool"     // a tool call waits for approve or reject
	ApprovalQuestion = "question" // a question waits for an answer
)

// Approval decisions.
const (
	DecisionApproved = "approved"
	DecisionRejected = "rejected"
	DecisionAnswered = "answered"
)

// DecidedByDeadline is the decider of a request whose deadline passed
// undecided: its default decision is recorded under this name.
const DecidedByDeadline = "deadline"

// ApprovalRequested records that a run waits for a person: to approve or
// reject a tool call (Tool, Arguments and their hash), or to answer a
// question (Question, with Schema the answer must match). It is written
// by the run (it carries the run id), so a replay produces it again.
type ApprovalRequested struct {
	ID      string `json:"id"`
	Run     string `json:"run,omitempty"`
	Session string `json:"session"`
	Agent   string `json:"agent,omitempty"` // module path
	CallID  string `json:"call_id,omitempty"`
	Kind    string `json:"kind"` // tool, question
	Tool    string `json:"tool,omitempty"`
	// Arguments are the exact arguments that will run if approved, and
	// ArgsHash their SHA-256 (hex): a decision is bound to it.
	Arguments string `json:"arguments,omitempty"`
	ArgsHash  string `json:"args_hash,omitempty"`
	Reason    string `json:"reason,omitempty"` // why approval is needed (the policy that matched)
	Question  string `json:"question,omitempty"`
	Schema    string `json:"schema,omitempty"` // JSON Schema of the answer, canonical JSON
	// Deadline (Unix nanoseconds, 0 for none) after which Default is
	// recorded as the decision, by DecidedByDeadline.
	Deadline int64  `json:"deadline,omitempty"`
	Default  string `json:"default,omitempty"` // approved or rejected; for a question, answered with DefaultAnswer
	// DefaultAnswer is a question's answer when its deadline passes.
	DefaultAnswer string `json:"default_answer,omitempty"`
}

func (ApprovalRequested) EventType() string  { return TypeApprovalRequested }
func (ApprovalRequested) EventVersion() int  { return 1 }
func (e ApprovalRequested) StreamID() string { return ApprovalStream(e.ID) }
func (e ApprovalRequested) Validate() error {
	if e.ID == "" || e.Session == "" {
		return invalid("approval.requested needs an id and a session")
	}
	switch e.Kind {
	case ApprovalTool:
		if e.Tool == "" || e.ArgsHash == "" {
			return invalid("approval.requested of a tool call needs the tool and the hash of its arguments")
		}
	case ApprovalQuestion:
		if e.Question == "" {
			return invalid("approval.requested of a question needs the question")
		}
	default:
		return invalid("approval.requested kind %q is not tool or question", e.Kind)
	}
	switch e.Default {
	case "", DecisionApproved, DecisionRejected, DecisionAnswered:
	default:
		return invalid("approval.requested default %q is not approved, rejected or answered", e.Default)
	}
	if e.Deadline < 0 || (e.Deadline > 0) != (e.Default != "") {
		return invalid("approval.requested needs a deadline and a default decision together")
	}
	return nil
}

// ApprovalDecided records a person's decision on a request: approved
// (possibly with edited arguments: EditedArguments and their hash EditedHash
// are what runs), rejected (the note reaches the model as the tool's
// result), or answered (Answer, JSON matching the request's schema). It is
// written outside the run (no run id): it is what the world told the run,
// which a replay reads from the record and never produces.
//
// By is who decided: the subject of the identity the decision was made
// as ("alice@example.com", "token:ID", "os:USER"), vouched for by Issuer
// and established Via ("oidc", "token", "loopback", "cli"); version 2
// added Issuer and Via, which a version 1 record lacks.
type ApprovalDecided struct {
	ID       string `json:"id"`
	Run      string `json:"run,omitempty"`
	Decision string `json:"decision"`
	By       string `json:"by"`
	Issuer   string `json:"issuer,omitempty"`
	Via      string `json:"via,omitempty"`
	Note     string `json:"note,omitempty"`
	// ArgsHash is the hash of the arguments the decider saw (the
	// request's); a decision on other arguments is refused.
	ArgsHash        string `json:"args_hash,omitempty"`
	EditedArguments string `json:"edited_arguments,omitempty"`
	EditedHash      string `json:"edited_hash,omitempty"`
	Answer          string `json:"answer,omitempty"` // canonical JSON
}

func (ApprovalDecided) EventType() string  { return TypeApprovalDecided }
func (ApprovalDecided) EventVersion() int  { return 2 }
func (e ApprovalDecided) StreamID() string { return ApprovalStream(e.ID) }
func (e ApprovalDecided) Validate() error {
	if e.ID == "" || e.By == "" {
		return invalid("approval.decided needs an id and who decided")
	}
	switch e.Decision {
	case DecisionApproved, DecisionRejected, DecisionAnswered:
	default:
		return invalid("approval.decided decision %q is not approved, rejected or answered", e.Decision)
	}
	if (e.EditedArguments != "") != (e.EditedHash != "") {
		return invalid("approval.decided needs edited arguments and their hash together")
	}
	return nil
}
