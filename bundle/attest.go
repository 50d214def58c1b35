package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/events"
	"github.com/gorath/rath/signkey"
)

// The attestation's types (in-toto Statement v1 in a DSSE envelope).
const (
	StatementType = "https://in-toto.io/Statement/v1"
	PayloadType   = "application/vnd.in-toto+json"
	PredicateType = "https://github.com/gorath/rath/attested-run-bundle/v1"
)

// Predicate is what the attestation says about the run. Its JSON keys are
// camelCase, as in-toto predicates spell them.
type Predicate struct {
	Run      string `json:"run"`
	Workflow string `json:"workflow,omitempty"`
	// Status is the run's end as recorded (ok, error), or "unfinished".
	Status   string `json:"status"`
	FirstSeq int64  `json:"firstSeq"`
	LastSeq  int64  `json:"lastSeq"`
	Events   int    `json:"events"`
	// Checkpoint is the tree every line is proven in, and who signed it.
	Checkpoint Checkpoint `json:"checkpoint"`
	Models     []string   `json:"models"` // provider/model of every model call, sorted
	Tools      []string   `json:"tools"`  // names of the tools called, sorted
	Approvals  []Approval `json:"approvals"`
	Replay     Replay     `json:"replay"`
	// Redacted are the seqs whose payloads were deleted (their lines and
	// proofs remain).
	Redacted []int64 `json:"redacted,omitempty"`
	// Erased are the seqs whose payloads are sealed under a subject's key
	// that was erased (docs/EVIDENCE.md, "Erasure by crypto-shredding"):
	// the bundle ships their ciphertext, which their lines commit to and
	// nobody can open. A run whose run.finished is among them has status
	// "erased".
	Erased []int64 `json:"erased,omitempty"`
}

// Approval is one request the run made of a person, and its decision.
type Approval struct {
	ID           string `json:"id"`
	Kind         string `json:"kind"`
	Tool         string `json:"tool,omitempty"`
	RequestedSeq int64  `json:"requestedSeq"`
	Decision     string `json:"decision"` // pending, approved, rejected, answered
	By           string `json:"by,omitempty"`
	DecidedSeq   int64  `json:"decidedSeq,omitempty"`
}

// Replay is a replay verdict as the attestation names it.
type Replay struct {
	// Replayed is false when the run was not replayed for the bundle.
	Replayed bool `json:"replayed"`
	OK       bool `json:"ok"`
	// Verdict is the verdict in one line ("reproduced 91 of 91 events").
	Verdict string `json:"verdict"`
}

// predicate summarises the run's events as the store reads them: a
// sealed payload opened (its leaf and the bundle keep the ciphertext), an
// erased one marked so.
func predicate(runID string, evs []events.Event, ck Checkpoint, opts Options) Predicate {
	p := Predicate{Run: runID, Status: "unfinished", FirstSeq: evs[0].Seq, LastSeq: evs[len(evs)-1].Seq,
		Events: len(evs), Checkpoint: ck, Models: []string{}, Tools: []string{}, Approvals: []Approval{},
		Replay: Replay{Verdict: "not replayed"}}
	if opts.Replay != nil {
		p.Replay = *opts.Replay
		p.Replay.Replayed = true
	}
	if p.Checkpoint.WitnessedBy == nil {
		p.Checkpoint.WitnessedBy = []string{}
	}
	approvals := map[string]int{}
	for _, l := range evs {
		if l.Redacted {
			if string(l.Payload) == events.ErasedMarker {
				p.Erased = append(p.Erased, l.Seq)
				if l.Type == events.TypeRunFinished && l.Stream == runID {
					p.Status = "erased"
				}
			}
			continue
		}
		pl, err := l.Decode()
		if err != nil {
			continue // a type this build does not know says nothing here
		}
		switch e := pl.(type) {
		case *events.RunStarted:
			p.Workflow = e.Workflow
		case *events.RunFinished:
			p.Status = e.Status
		case *events.ProviderCalled:
			p.Models = addSorted(p.Models, joinName(e.Provider, e.Model))
		case *events.ToolCalled:
			p.Tools = addSorted(p.Tools, e.Tool)
		case *events.ApprovalRequested:
			approvals[e.ID] = len(p.Approvals)
			p.Approvals = append(p.Approvals, Approval{ID: e.ID, Kind: e.Kind, Tool: e.Tool, RequestedSeq: l.Seq, Decision: "pending"})
		case *events.ApprovalDecided:
			if i, ok := approvals[e.ID]; ok {
				a := &p.Approvals[i]
				a.Decision, a.By, a.DecidedSeq = e.Decision, e.By, l.Seq
			}
		}
	}
	return p
}

func joinName(provider, model string) string {
	if provider == "" {
		return model
	}
	return provider + "/" + model
}

func addSorted(s []string, v string) []string {
	if i, found := slices.BinarySearch(s, v); !found && v != "" {
		s = slices.Insert(s, i, v)
	}
	return s
}

// statement is an in-toto Statement v1. Each subject's keys are in the
// order VERIFY.md's shell commands read them: name, then digest.
type statement struct {
	Type          string    `json:"_type"`
	Subject       []subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

type subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// envelope is a DSSE envelope.
type envelope struct {
	Payload     string      `json:"payload"`
	PayloadType string      `json:"payloadType"`
	Signatures  []signature `json:"signatures"`
}

type signature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// PAE is DSSE's pre-authentication encoding, what the signature signs:
// "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths in ASCII
// decimal.
func PAE(payloadType string, body []byte) []byte {
	b := []byte("DSSEv1 ")
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, ' ')
	return append(b, body...)
}

// attest signs a statement of every file in f and the predicate.
func attest(f *files, pred Predicate, key *signkey.Key) ([]byte, error) {
	st := statement{Type: StatementType, PredicateType: PredicateType, Predicate: pred}
	for _, name := range f.names() {
		sum := sha256.Sum256(f.m[name])
		st.Subject = append(st.Subject, subject{Name: name, Digest: map[string]string{"sha256": hex.EncodeToString(sum[:])}})
	}
	body, err := marshal(st)
	if err != nil {
		return nil, err
	}
	env := envelope{Payload: base64.StdEncoding.EncodeToString(body), PayloadType: PayloadType,
		Signatures: []signature{{KeyID: key.KeyID(), Sig: base64.StdEncoding.EncodeToString(key.Sign(PAE(PayloadType, body)))}}}
	out, err := marshal(env)
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// marshal encodes v as compact JSON without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("bundle: encode: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// reachableBlobs reads every blob the payloads reference (events.BlobReferrer),
// and every message segment a model request reaches through its
// messages_ref and each segment's prev.
func reachableBlobs(ctx context.Context, st Store, leaves []eventlog.Leaf) (map[string][]byte, error) {
	out := map[string][]byte{}
	var next []string
	from := map[string]int64{} // the seq that first named each blob, for errors
	for _, l := range leaves {
		if l.Payload == nil {
			continue
		}
		pl, err := l.Decode()
		if err != nil {
			continue
		}
		if br, ok := pl.(events.BlobReferrer); ok {
			for _, h := range br.BlobRefs() {
				if !isHash(h) {
					// Never a file name from the log that is not a hash.
					return nil, &eventlog.VerifyError{Seq: l.Seq, Reason: fmt.Sprintf("blob reference %q is not a SHA-256", h)}
				}
				if _, seen := from[h]; !seen {
					from[h] = l.Seq
					next = append(next, h)
				}
			}
		}
	}
	for len(next) > 0 {
		got, err := st.GetBlobs(ctx, next)
		if err != nil {
			return nil, fmt.Errorf("bundle: read blobs: %w", err)
		}
		var more []string
		for _, h := range next {
			b, ok := got[h]
			if !ok {
				return nil, &eventlog.VerifyError{Seq: from[h], Blob: h, Reason: fmt.Sprintf("blob %s is missing", h)}
			}
			out[h] = b
			// A request names its last message segment, a segment the one
			// before it (flow/request.go).
			var chain struct {
				MessagesRef string `json:"messages_ref"`
				Prev        string `json:"prev"`
			}
			if json.Unmarshal(b, &chain) != nil {
				continue
			}
			for _, r := range []string{chain.MessagesRef, chain.Prev} {
				if _, seen := from[r]; r != "" && !seen && isHash(r) {
					from[r] = from[h]
					more = append(more, r)
				}
			}
		}
		next = more
	}
	return out, nil
}

// isHash reports whether s is a blob address: 64 lower-case hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
