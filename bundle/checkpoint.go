package bundle

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/signkey"
)

// Checkpoint is the body of a C2SP tlog-checkpoint: the log's origin, its
// tree size and root.
type Checkpoint struct {
	Origin string    `json:"origin"`
	Size   int64     `json:"size"`
	Root   tlog.Hash `json:"root"` // base64 in JSON
	// SignedBy is the name of the key that signed it; WitnessedBy the
	// names of the witnesses whose cosignatures verified.
	SignedBy    string   `json:"signedBy"`
	WitnessedBy []string `json:"witnessedBy"`
}

// FormatCheckpoint returns the checkpoint body: "ORIGIN\nSIZE\nROOT\n".
func FormatCheckpoint(origin string, head eventlog.TreeHead) string {
	return origin + "\n" + strconv.FormatInt(head.Size, 10) + "\n" + head.Root.String() + "\n"
}

// SignCheckpoint signs a checkpoint of the store's current tree head with
// key, as a signed note under origin ("" is the key's name).
func SignCheckpoint(ctx context.Context, st Store, key *signkey.Key, origin string) ([]byte, error) {
	head, err := st.TreeHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("bundle: tree head: %w", err)
	}
	if origin == "" {
		origin = key.Name()
	}
	if origin == "" || strings.ContainsAny(origin, "\n") {
		return nil, fmt.Errorf("bundle: checkpoint origin %q: want one non-empty line", origin)
	}
	signed, err := note.Sign(&note.Note{Text: FormatCheckpoint(origin, head)}, key.NoteSigner())
	if err != nil {
		return nil, fmt.Errorf("bundle: sign checkpoint: %w", err)
	}
	return signed, nil
}

// ParseCheckpoint opens a signed checkpoint note with the signer's key and
// the witnesses' (note verifier keys), requiring every one of their
// signatures, and parses its body.
func ParseCheckpoint(signed []byte, signer string, witnesses []string) (Checkpoint, error) {
	var vs []note.Verifier
	for _, k := range append([]string{signer}, witnesses...) {
		v, _, err := signkey.ParseVerifierKey(k)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("%w: verifier key %q: %w", ErrCheckpoint, k, err)
		}
		vs = append(vs, v)
	}
	n, err := note.Open(signed, note.VerifierList(vs...))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	got := map[string]bool{}
	for _, s := range n.Sigs {
		got[s.Name+"+"+strconv.FormatUint(uint64(s.Hash), 16)] = true
	}
	var ck Checkpoint
	for i, v := range vs {
		if !got[v.Name()+"+"+strconv.FormatUint(uint64(v.KeyHash()), 16)] {
			who := "the signer"
			if i > 0 {
				who = "witness " + v.Name()
			}
			return Checkpoint{}, fmt.Errorf("%w: it carries no valid signature by %s", ErrCheckpoint, who)
		}
		if i == 0 {
			ck.SignedBy = v.Name()
		} else {
			ck.WitnessedBy = append(ck.WitnessedBy, v.Name())
		}
	}
	lines := strings.SplitN(n.Text, "\n", 4)
	if len(lines) < 4 {
		return Checkpoint{}, fmt.Errorf("%w: its body is not ORIGIN, SIZE, ROOT", ErrCheckpoint)
	}
	ck.Origin = lines[0]
	if ck.Size, err = strconv.ParseInt(lines[1], 10, 64); err != nil || ck.Size < 1 {
		return Checkpoint{}, fmt.Errorf("%w: size %q", ErrCheckpoint, lines[1])
	}
	if ck.Root, err = tlog.ParseHash(lines[2]); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: root %q", ErrCheckpoint, lines[2])
	}
	return ck, nil
}

// checkpoint gets the signed checkpoint that covers seq last, checks its
// signatures and that its root is the store's tree at its size.
func checkpoint(ctx context.Context, st Store, last int64, opts *Options) (Checkpoint, []byte, error) {
	get := opts.Checkpoint
	if stored := opts.StoredCheckpoint; stored != nil {
		get = func(ctx context.Context, minSize int64) ([]byte, error) {
			signed, witnesses, err := stored(ctx, minSize)
			opts.Witnesses = witnesses
			return signed, err
		}
	}
	if get == nil {
		get = func(ctx context.Context, _ int64) ([]byte, error) {
			return SignCheckpoint(ctx, st, opts.Key, opts.Origin)
		}
	}
	signed, err := get(ctx, last)
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("bundle: checkpoint: %w", err)
	}
	ck, err := ParseCheckpoint(signed, opts.Key.VerifierKey(), opts.Witnesses)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	if ck.Size < last {
		return Checkpoint{}, nil, fmt.Errorf("%w: its tree has %d leaves; the run's last event is seq %d", ErrCheckpoint, ck.Size, last)
	}
	head, err := st.TreeHeadAt(ctx, ck.Size)
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("bundle: tree head at %d: %w", ck.Size, err)
	}
	if head.Root != ck.Root {
		return Checkpoint{}, nil, fmt.Errorf("%w: its root at size %d is %s, the store's tree has %s there: the log was rewritten, or the checkpoint is another log's",
			ErrCheckpoint, ck.Size, ck.Root, head.Root)
	}
	return ck, signed, nil
}
