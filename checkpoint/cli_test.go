package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/signkey"

	"github.com/gorath/rath/internal/rathbin"
)

// bin is the rath binary, built once for the package's tests.
var bin rathbin.Shared

// rathBinary returns the rath binary.
func rathBinary(t *testing.T) string {
	t.Helper()
	return bin.Path(t)
}

// cli runs the rath binary in dir with env added; it returns stdout,
// stderr and the exit code.
func cli(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), rathBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func mustCLI(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	out, errs, code := cli(t, dir, env, args...)
	if code != 0 {
		t.Fatalf("rath %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// The path users take, in separate processes: keys, appends that sign,
// a witness that cosigns, verify that says what is attested; then the
// operator rewrites the history and re-signs it with the log's own key:
// verify of the rewritten store alone cannot tell, the witness refuses it.
func TestCLI_SignWitnessVerifyAndARewrittenHistory(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		work := t.TempDir()
		mustCLI(t, work, nil, "keys", "generate", "--out", "log", "--name", "log.example")
		mustCLI(t, work, nil, "keys", "generate", "--out", "witness", "--name", "witness.example")
		honest, rewritten := b.new(t), b.new(t)
		storeEnv := func(tg target, dir string) []string {
			if tg.dsn != "" {
				return []string{"RATH_DSN=" + tg.dsn, "RATH_DIR=" + filepath.Join(work, dir)}
			}
			return []string{"RATH_DIR=" + filepath.Dir(tg.path)}
		}
		storeArg := func(tg target) string {
			if tg.dsn != "" {
				return tg.dsn
			}
			return filepath.Dir(tg.path)
		}
		signing := "RATH_SIGNING_KEY=" + filepath.Join(work, "log", signkey.SignerFile)
		env := append(storeEnv(honest, "h"), signing)
		for _, text := range []string{"one", "two", "three"} {
			mustCLI(t, work, env, "new", text)
		}
		// Each process signed its last head on exit.
		out := mustCLI(t, work, env, "checkpoint")
		vkey, _ := os.ReadFile(filepath.Join(work, "log", signkey.VerifierFile))
		v, _, err := signkey.ParseVerifierKey(string(vkey))
		if err != nil {
			t.Fatal(err)
		}
		n, err := note.Open([]byte(out), note.VerifierList(v))
		if err != nil {
			t.Fatalf("rath checkpoint printed %q: %v", out, err)
		}
		if _, head, err := checkpoint.ParseBody(n.Text); err != nil || head.Size != 3 {
			t.Fatalf("checkpoint body %q: %v", n.Text, err)
		}
		witness := []string{"witness", "--store", storeArg(honest), "--key", filepath.Join(work, "witness", signkey.SignerFile),
			"--log-key", filepath.Join(work, "log", signkey.VerifierFile), "--state", filepath.Join(work, "witness.state")}
		if out := mustCLI(t, work, nil, witness...); !strings.Contains(out, "cosigned size 3 ") {
			t.Fatalf("witness: %s", out)
		}
		out = mustCLI(t, work, env, "verify", "--log-key", filepath.Join(work, "log", signkey.VerifierFile))
		if !strings.Contains(out, "attested: 3 checkpoints signed by log.example, latest size 3, witnessed by witness.example (key ") ||
			!strings.Contains(out, "up to size 3, NOT pinned); no witness pinned") {
			t.Fatalf("verify:\n%s", out)
		}
		// Unsigned, a store says so.
		plain := storeEnv(rewritten, "r")
		mustCLI(t, work, plain, "new", "other")
		if out := mustCLI(t, work, plain, "verify"); !strings.Contains(out, "checkpoints     locally consistent, not attested") {
			t.Fatalf("verify of an unsigned store:\n%s", out)
		}

		// The rewrite: the operator writes another history under the
		// honest store's origin and signs it with the log key.
		hs := open(t, honest, eventlog.Options{})
		id := strings.TrimPrefix(mustOrigin(t, hs), checkpoint.OriginPrefix)
		rewritten.exec(t, `UPDATE store_meta SET value = '`+id+`' WHERE key = 'store_id'`)
		renv := append(plain, signing)
		for _, text := range []string{"x", "y", "z"} {
			mustCLI(t, work, renv, "new", text)
		}
		if out := mustCLI(t, work, renv, "verify"); !strings.Contains(out, "attested: ") {
			t.Fatalf("the rewritten store verifies on its own:\n%s", out)
		}
		witness[2] = storeArg(rewritten)
		out, errs, code := cli(t, work, nil, witness...)
		if code != 3 || !strings.Contains(errs, "fork: the checkpoint at size 3") || !strings.Contains(errs, "this witness cosigned at size 3") {
			t.Fatalf("witness of the rewritten history: exit %d\n%s%s", code, out, errs)
		}

		// A checkpoint the log contradicts, signed with the log key: verify
		// names its size.
		mustCLI(t, work, storeEnv(honest, "h"), "new", "four") // not signed
		key, err := signkey.Load(filepath.Join(work, "log", signkey.SignerFile))
		if err != nil {
			t.Fatal(err)
		}
		forged := tlog.Hash{7}
		signed, _ := note.Sign(&note.Note{Text: checkpoint.Body(checkpoint.OriginPrefix+id, eventlog.TreeHead{Size: 4, Root: forged})}, key.NoteSigner())
		if err := hs.Exclusive(t.Context(), func(_ context.Context, tx *eventlog.Tx) error {
			_, err := tx.Exec(`INSERT INTO checkpoints (size, root, key_name, verifier_key, note, signed_at) VALUES (4, ?, ?, ?, ?, 0)`, forged[:], key.Name(), key.VerifierKey(), signed)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		out, errs, code = cli(t, work, storeEnv(honest, "h"), "verify")
		if code != 3 || !strings.Contains(errs, "checkpoint at size 4") || !strings.Contains(errs, "the log was rewritten") {
			t.Fatalf("verify of a forged checkpoint: exit %d\n%s%s", code, out, errs)
		}
	})
}
