package bundle

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/gorath/rath/signkey"
)

// VERIFY.md's text. A bundle ships no code: the verifier is the auditor's
// (cmd/rathverify, from the rath module at a version they choose).
//
//go:embed verify_tmpl.md
var verifyMD string

// addVerifier adds VERIFY.md, which says where to get a verifier and the
// keys to trust. The key's name must be plain (it is also a note key
// name); names from the log have anything else replaced.
func addVerifier(f *files, p Predicate, key *signkey.Key) error {
	if plain(key.Name()) != key.Name() {
		return fmt.Errorf("bundle: key name %q: VERIFY.md shows it as is, so letters, digits and ._:/@- only", key.Name())
	}
	md := strings.NewReplacer(
		"{{RUN}}", plain(p.Run),
		"{{EVENTS}}", strconv.Itoa(p.Events),
		"{{FIRST}}", strconv.FormatInt(p.FirstSeq, 10),
		"{{LAST}}", strconv.FormatInt(p.LastSeq, 10),
		"{{ORIGIN}}", plain(p.Checkpoint.Origin),
		"{{SIZE}}", strconv.FormatInt(p.Checkpoint.Size, 10),
		"{{KEYNAME}}", key.Name(),
		"{{KEYID}}", key.KeyID(),
		"{{PREDICATE_TYPE}}", PredicateType,
	).Replace(verifyMD)
	f.add(VerifyMDFile, []byte(md))
	return nil
}

// plain returns s with every character but letters, digits and ._:/@-
// replaced by '?': what VERIFY.md may show of names from the log.
func plain(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:/@-", r) {
			return r
		}
		return '?'
	}, s)
}
