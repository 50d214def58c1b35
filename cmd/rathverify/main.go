// Command rathverify checks a rath run bundle without rath and without
// trusting anything the bundle ships:
//
//	go run github.com/gorath/rath/cmd/rathverify@VERSION [-log-key FILE] [-witness FILE]... DIR
//
// -log-key is the signer's note verifier key as its owner published it
// (default: the bundle's own verifier.vkey, which proves only consistency);
// each -witness is a witness's note verifier key the auditor trusts, of
// which at least one must have cosigned the checkpoint. Only the standard
// library and golang.org/x/mod.
package main

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func must(err error, what string) { // stops: nothing further can be checked
	if err != nil {
		fmt.Printf("FAIL: %s: %v\n", what, err)
		os.Exit(1)
	}
}

// keys is a repeatable flag of key files.
type keys []string

func (k *keys) String() string     { return strings.Join(*k, ",") }
func (k *keys) Set(f string) error { *k = append(*k, f); return nil }

// parseKey reads a note verifier key (name+hash+base64(algorithm byte, Ed25519 key); the base64
// may hold '+') and names it by the SHA-256 of its PKIX DER, a fixed prefix then the key (RFC 8410).
func parseKey(text string) (note.Verifier, ed25519.PublicKey, string, error) {
	text = strings.TrimSpace(text)
	v, err := note.NewVerifier(text)
	if err != nil {
		return nil, nil, "", err
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.SplitN(text, "+", 3)[2])
	pub := ed25519.PublicKey(raw[1:])
	return v, pub, fmt.Sprintf("%x", sha256.Sum256(append([]byte("\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00"), pub...))), nil
}

func main() {
	var pins keys
	logKeyFile := flag.String("log-key", "", "the signer's note verifier key FILE, as its owner published it")
	flag.Var(&pins, "witness", "a witness's note verifier key FILE you trust (repeatable); one of them must have cosigned")
	flag.Parse()
	failures, dir := 0, cmp.Or(flag.Arg(0), ".")
	fail := func(format string, args ...any) { failures++; fmt.Printf("FAIL: "+format+"\n", args...) }
	hexSum := func(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }
	fsys, err := os.OpenRoot(dir) // no name in the bundle reads outside it; a missing file reads as empty
	read := func(name string) []byte { b, _ := fsys.ReadFile(filepath.FromSlash(name)); return b }
	vkeyText, err2 := os.ReadFile(cmp.Or(*logKeyFile, filepath.Join(dir, "verifier.vkey")))
	signer, pub, keyID, err3 := parseKey(string(vkeyText))
	must(cmp.Or(err, err2, err3), "bundle directory or log key")
	if *logKeyFile != "" {
		fmt.Printf("log key %s (key %s): pinned\n", signer.Name(), keyID)
	} else {
		fmt.Printf("log key %s (key %s): NOT pinned, the bundle's own verifier.vkey: compare it with the published key, or pass that with -log-key\n", signer.Name(), keyID)
	}
	// The attestation: a DSSE envelope of an in-toto Statement, Ed25519 over its PAE.
	var env struct {
		Payload, PayloadType string
		Signatures           []struct{ KeyID, Sig string }
	}
	must(json.Unmarshal(read("attestation.dsse.json"), &env), "attestation.dsse.json")
	body, _ := base64.StdEncoding.DecodeString(env.Payload) // if not base64, no signature verifies
	pae, signed := fmt.Appendf(nil, "DSSEv1 %d %s %d %s", len(env.PayloadType), env.PayloadType, len(body), body), false
	for _, s := range env.Signatures {
		sig, _ := base64.StdEncoding.DecodeString(s.Sig)
		signed = signed || s.KeyID == keyID && ed25519.Verify(pub, pae, sig)
	}
	if !signed || env.PayloadType != "application/vnd.in-toto+json" {
		must(fmt.Errorf("no valid signature by key %s (%s)", keyID, signer.Name()), "attestation.dsse.json")
	}
	var st struct {
		Subject []struct {
			Name   string
			Digest struct{ SHA256 string }
		}
		Predicate struct {
			Run                       string
			FirstSeq, LastSeq, Events int64
			Redacted                  []int64
		}
	}
	must(json.Unmarshal(body, &st), "statement")
	pred, listed := st.Predicate, map[string]bool{"attestation.dsse.json": true}
	for _, s := range st.Subject {
		if listed[s.Name] = true; hexSum(read(s.Name)) != s.Digest.SHA256 {
			fail("%s: missing, or its SHA-256 is not the attested one", s.Name)
		}
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			fail("%s: a symbolic link", rel) // a bundle is written without any
		} else if err == nil && !d.IsDir() && !listed[filepath.ToSlash(rel)] {
			fail("%s: not attested", rel)
		}
		return err
	})
	// The checkpoint: a C2SP signed note, by the signer, by every witness the bundle lists and,
	// when the auditor pinned witnesses, by at least one of them. Each key is shown by its key id:
	// a name can be copied by anyone who makes a key.
	vs, ids, pinned := []note.Verifier{signer}, []string{keyID}, map[string]bool{}
	for _, w := range strings.Fields(string(read("witnesses.vkey"))) {
		v, _, id, err := parseKey(w)
		must(err, "witnesses.vkey")
		vs, ids = append(vs, v), append(ids, id)
	}
	listedWitnesses := len(vs) - 1
	for _, f := range pins {
		b, err := os.ReadFile(f)
		v, _, id, err2 := parseKey(string(b))
		must(cmp.Or(err, err2), "-witness "+f)
		if pinned[id] = true; !slices.Contains(ids, id) {
			vs, ids = append(vs, v), append(ids, id)
		}
	}
	n, err := note.Open(read("checkpoint"), note.VerifierList(vs...))
	must(err, "checkpoint signature")
	cosigned := map[string]bool{}
	for _, s := range n.Sigs {
		for i, v := range vs {
			cosigned[ids[i]] = cosigned[ids[i]] || s.Name == v.Name() && s.Hash == v.KeyHash()
		}
	}
	pinnedCosigned := 0
	for i, v := range vs[1:] {
		id := ids[i+1]
		switch {
		case !cosigned[id] && i < listedWitnesses:
			fail("checkpoint: no valid cosignature by witness %s (key %s), which witnesses.vkey lists", v.Name(), id)
		case !cosigned[id]:
			fmt.Printf("witness %s (key %s): pinned, did not cosign\n", v.Name(), id)
		case pinned[id]:
			pinnedCosigned++
			fmt.Printf("witness %s (key %s): cosigned, pinned\n", v.Name(), id)
		default:
			fmt.Printf("witness %s (key %s): cosigned, NOT pinned\n", v.Name(), id)
		}
	}
	switch {
	case len(pins) == 0:
		fmt.Println("no witness pinned: the witnesses above are the bundle's own word; pass the keys you trust with -witness FILE")
	case pinnedCosigned == 0:
		fail("checkpoint: no pinned witness cosigned it")
	}
	if !cosigned[keyID] {
		fail("checkpoint: no valid signature by the log key %s (key %s)", signer.Name(), keyID)
	}
	ck := append(strings.Split(n.Text, "\n"), "", "")
	size, err := strconv.ParseInt(ck[1], 10, 64)
	root, err2 := tlog.ParseHash(ck[2])
	must(cmp.Or(err, err2), "checkpoint body")
	// Each line's leaf is in the checkpoint's tree; each payload and salt match its line's commitment.
	lines := bytes.Split(bytes.TrimSuffix(read("events.jsonl"), []byte("\n")), []byte("\n"))
	var proofs []struct{ Hashes []tlog.Hash } // and an "index", the leaf's: seq-1
	must(json.Unmarshal(read("proofs.json"), &proofs), "proofs.json")
	if len(proofs) != len(lines) || int64(len(lines)) != pred.Events {
		fail("events.jsonl has %d lines, proofs.json %d proofs, the attestation says %d events", len(lines), len(proofs), pred.Events)
	}
	var named [][]byte // the payloads and blobs, which name blobs
	for i := 0; i < min(len(lines), len(proofs)); i++ {
		var l struct {
			Leaf, Seq int64
			Payload   string
		}
		if err := json.Unmarshal(lines[i], &l); err != nil {
			fail("events.jsonl line %d: not a leaf line", i+1)
			continue
		}
		if err := tlog.CheckRecord(proofs[i].Hashes, size, root, l.Seq-1, tlog.RecordHash(lines[i])); err != nil {
			fail("seq %d: its leaf is not in the checkpoint's tree: %v", l.Seq, err)
		}
		if l.Leaf == 1 && !slices.Contains(pred.Redacted, l.Seq) { // else a line of the hash chain, or redacted
			p := read(fmt.Sprintf("payloads/%d.json", l.Seq))
			if named = append(named, p); hexSum(append(read(fmt.Sprintf("payloads/%d.salt", l.Seq)), p...)) != l.Payload {
				fail("seq %d: payloads/%d.json and .salt do not match the line's commitment", l.Seq, l.Seq)
			}
		}
	}
	// Each blob is what its name (its SHA-256) says, and a payload or another blob names it.
	blobs, _ := os.ReadDir(filepath.Join(dir, "blobs"))
	for _, e := range blobs {
		named = append(named, read("blobs/"+e.Name()))
	}
	for i, all := 0, bytes.Join(named, nil); i < len(blobs); i++ {
		if name := blobs[i].Name(); hexSum(named[len(named)-len(blobs)+i]) != name {
			fail("blobs/%s: its SHA-256 is not its name", name)
		} else if !bytes.Contains(all, []byte(name)) {
			fail("blobs/%s: no payload names it", name)
		}
	}
	if failures > 0 {
		fmt.Printf("bundle of run %s: %d checks FAILED\n", pred.Run, failures)
		os.Exit(1)
	}
	fmt.Printf("ok: run %s, %d events (seqs %d to %d) in the tree of %s at size %d, signed by %s (key %s), %d pinned witnesses of %d cosigned\n",
		pred.Run, len(lines), pred.FirstSeq, pred.LastSeq, ck[0], size, signer.Name(), keyID, pinnedCosigned, len(pins))
}
