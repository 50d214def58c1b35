package bundle

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/gorath/rath/signkey"
)

// The standalone verifier shipped in every bundle (verify/main.go there),
// and its module: golang.org/x/mod at the version rath itself builds with
// (a test keeps them equal), so `go run` finds it in a module cache that
// built rath.
var (
	//go:embed verify/main.go
	verifierSource []byte
	//go:embed verify_tmpl.md
	verifyMD string
)

const (
	verifierGoMod = `module rath.bundle/verify

go 1.26.0

require golang.org/x/mod v0.42.0
`
	verifierGoSum = `golang.org/x/mod v0.42.0 h1:ICeL3t2L30ljSPHHxDnR4fqVcBt/zR2zJAb9juavmQg=
golang.org/x/mod v0.42.0/go.mod h1:u5fzIrRInkL8MaO1cbRkUHT64v303YIT5KEqpNr7jRs=
`
)

// addVerifier adds VERIFY.md and the Go verifier. The key's name goes
// into a shell command there, so it must be plain; names in prose have
// anything else replaced.
func addVerifier(f *files, p Predicate, key *signkey.Key) error {
	if plain(key.Name()) != key.Name() {
		return fmt.Errorf("bundle: key name %q: VERIFY.md's commands need letters, digits and ._:/@- only", key.Name())
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
	f.add(VerifierDir+"/main.go", verifierSource)
	f.add(VerifierDir+"/go.mod", []byte(verifierGoMod))
	f.add(VerifierDir+"/go.sum", []byte(verifierGoSum))
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
