package events

import "regexp"

// Event types of who may act and who read what (package access): API
// tokens, created and revoked, and the record of each read of run content
// through the console or its API.
const (
	TypeTokenCreated = "access.token_created"
	TypeTokenRevoked = "access.token_revoked"
	TypeAccessViewed = "access.viewed"
)

// TokenStream is the stream of one API token: access.token_created at
// version 1, access.token_revoked at version 2, so of two revokes exactly
// one lands.
func TokenStream(id string) string { return "token:" + id }

// AccessStream is the stream of the reads of one run's content; reads
// of a memory namespace go on AccessStream("memory:" + namespace), of a
// session no run wrote on AccessStream("session:" + id).
func AccessStream(subject string) string { return "access:" + subject }

// What an access.viewed event says was read.
const (
	ViewedTranscript = "transcript"
	ViewedEvents     = "events"
	ViewedModelCall  = "model_call"
	ViewedToolResult = "tool_result"
	ViewedMemory     = "memory"
	ViewedDossier    = "dossier"
	ViewedBundle     = "bundle"
	ViewedExport     = "export"
	// ViewedApproval is a pending approval shown with its tool's
	// arguments or its question (the console's inbox).
	ViewedApproval = "approval"
)

var viewedKinds = map[string]bool{ViewedTranscript: true, ViewedEvents: true, ViewedModelCall: true, ViewedToolResult: true,
	ViewedMemory: true, ViewedDossier: true, ViewedBundle: true, ViewedExport: true, ViewedApproval: true}

// tokenHash is a SHA-256 in lowercase hex.
var tokenHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// TokenCreated records an API token: who it acts as (Tenant, Role), until
// when (ExpiresAt, Unix nanoseconds; 0 for never), and the SHA-256 of its
// secret (Hash, hex). The secret itself is never stored.
type TokenCreated struct {
	ID        string `json:"id"`
	Hash      string `json:"hash"`
	Tenant    string `json:"tenant"`
	Role      string `json:"role"`
	ExpiresAt int64  `json:"expires_at,omitempty"`
	By        string `json:"by"` // who created it ("os:USER", "token:ID")
}

func (TokenCreated) EventType() string  { return TypeTokenCreated }
func (TokenCreated) EventVersion() int  { return 1 }
func (e TokenCreated) StreamID() string { return TokenStream(e.ID) }
func (e TokenCreated) Validate() error {
	if e.ID == "" || e.Tenant == "" || e.Role == "" || e.By == "" {
		return invalid("access.token_created needs an id, a tenant, a role and who created it")
	}
	if !tokenHash.MatchString(e.Hash) {
		return invalid("access.token_created hash is not a SHA-256 in lowercase hex")
	}
	if e.ExpiresAt < 0 {
		return invalid("access.token_created expires_at %d is negative", e.ExpiresAt)
	}
	return nil
}

// TokenRevoked records that an API token no longer identifies anyone.
type TokenRevoked struct {
	ID string `json:"id"`
	By string `json:"by"`
}

func (TokenRevoked) EventType() string  { return TypeTokenRevoked }
func (TokenRevoked) EventVersion() int  { return 1 }
func (e TokenRevoked) StreamID() string { return TokenStream(e.ID) }
func (e TokenRevoked) Validate() error {
	if e.ID == "" || e.By == "" {
		return invalid("access.token_revoked needs an id and who revoked it")
	}
	return nil
}

// AccessViewed records one read of run content through the console or
// its API: who (Who, the identity's subject, and Issuer), on behalf of
// which tenant, what (What, one of the Viewed kinds; the Run, the Session
// and the seq range FromSeq..ToSeq read, or a memory Namespace; ToSeq 0
// for a live tail, open-ended), through which Route
// and when (At, Unix nanoseconds). Lists of ids and statuses are not
// content and are not recorded.
type AccessViewed struct {
	Who       string `json:"who"`
	Issuer    string `json:"issuer,omitempty"`
	Tenant    string `json:"tenant,omitempty"`
	Run       string `json:"run,omitempty"`
	Session   string `json:"session,omitempty"`
	FromSeq   int64  `json:"from_seq,omitempty"`
	ToSeq     int64  `json:"to_seq,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	What      string `json:"what"`
	Route     string `json:"route"`
	At        int64  `json:"at"`
}

func (AccessViewed) EventType() string { return TypeAccessViewed }
func (AccessViewed) EventVersion() int { return 1 }
func (e AccessViewed) StreamID() string {
	switch {
	case e.Run != "":
		return AccessStream(e.Run)
	case e.Session != "":
		return AccessStream("session:" + e.Session)
	}
	return AccessStream("memory:" + e.Namespace)
}
func (e AccessViewed) Validate() error {
	if e.Who == "" || e.Route == "" {
		return invalid("access.viewed needs who read and the route")
	}
	if !viewedKinds[e.What] {
		return invalid("access.viewed what %q is not one of transcript, events, model_call, tool_result, memory, dossier, bundle, export, approval", e.What)
	}
	if e.Run == "" && e.Session == "" && e.Namespace == "" {
		return invalid("access.viewed needs the run, the session or the memory namespace read")
	}
	if e.FromSeq < 0 || e.ToSeq < e.FromSeq && e.ToSeq != 0 {
		return invalid("access.viewed seq range %d..%d is not a range", e.FromSeq, e.ToSeq)
	}
	return nil
}
