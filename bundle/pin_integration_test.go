//go:build integration

package bundle_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath"
	"github.com/gorath/rath/checkpoint"
	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/signkey"
)

// rathCode runs the rath binary with env in dir: its exit code and
// combined output.
func rathCode(t *testing.T, dir string, env []string, argv ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(rathBin, argv...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// genKeys makes a key with rath keys generate in work/dir.
func genKeys(t *testing.T, work, dir, name string) (signkey.Files, *signkey.Key) {
	t.Helper()
	runRath(t, work, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, "keys", "generate", "--out", dir, "--name", name)
	f := signkey.Files{Signer: filepath.Join(work, dir, signkey.SignerFile), Verifier: filepath.Join(work, dir, signkey.VerifierFile)}
	k, err := signkey.Load(f.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return f, k
}

// storeArg is what rath witness --store takes for a demo store.
func storeArg(dir, dsn string) string {
	if dsn != "" {
		return dsn
	}
	return filepath.Join(dir, "store")
}

// openStore opens a demo store's log (migrating a fresh one).
func openStore(t *testing.T, dir, dsn string) *eventlog.Store {
	t.Helper()
	path := filepath.Join(dir, "store", rath.DBFile)
	where := path
	if dsn != "" {
		where, path = dsn, ""
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rath.Migrate(t.Context(), where); err != nil {
		t.Fatal(err)
	}
	s, err := eventlog.Open(t.Context(), eventlog.Options{Path: path, DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The attack of a holder of the log's signing key: a fresh store with the
// genuine store's id copied in, a run of its own, a witness key of its
// own named like the real witness, cosigned and exported. Each route
// (the three verifiers of cmd/rathverify, rath dossier --bundle, rath
// verify) given the auditor's pinned keys refuses it, naming the key ids
// of the witness keys it saw, and passes the genuine one; without pins
// each says plainly that no witness is pinned. On both stores.
func TestBundle_PinnedWitnessRefusesAForgedWitness(t *testing.T) {
	stores := []struct {
		name string
		dsns func(t *testing.T) (string, string)
	}{
		{"sqlite", func(*testing.T) (string, string) { return "", "" }},
		{"postgres", func(t *testing.T) (string, string) {
			real, err := pg.CreateDatabase(context.Background(), "pin_real")
			if err != nil {
				t.Fatal(err)
			}
			forged, err := pg.CreateDatabase(context.Background(), "pin_forged")
			if err != nil {
				t.Fatal(err)
			}
			return real, forged
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			realDSN, forgedDSN := sc.dsns(t)
			work := t.TempDir()
			logKey, _ := genKeys(t, work, "log", "log.example")
			witnessKey, witness := genKeys(t, work, "witness", "witness.example")
			evilKey, evil := genKeys(t, work, "evil", "witness.example") // the attacker's, named like the real one
			signing := "RATH_SIGNING_KEY=" + logKey.Signer

			// The genuine run, checkpointed, cosigned by the real witness.
			realDir, forgedDir := filepath.Join(work, "real"), filepath.Join(work, "forged")
			for _, d := range []string{realDir, forgedDir} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			realEnv, realRun := demoRun(t, realDir, realDSN, signing)
			runRath(t, work, realEnv, "witness", "--store", storeArg(realDir, realDSN), "--key", witnessKey.Signer,
				"--log-key", logKey.Verifier, "--state", filepath.Join(work, "witness.state"))
			genuine := filepath.Join(work, "genuine.bundle")
			runRath(t, realDir, realEnv, "export", realRun, "--bundle", genuine, "--no-replay")

			// The forgery: the genuine store's id in a fresh store, a run of
			// the attacker's, its own witness.
			rs := openStore(t, realDir, realDSN)
			origin, err := checkpoint.Origin(t.Context(), rs)
			rs.Close()
			if err != nil {
				t.Fatal(err)
			}
			fs := openStore(t, forgedDir, forgedDSN)
			if err := fs.Exclusive(t.Context(), func(_ context.Context, tx *eventlog.Tx) error {
				_, err := tx.Exec(`UPDATE store_meta SET value = ? WHERE key = 'store_id'`, strings.TrimPrefix(origin, checkpoint.OriginPrefix))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			fs.Close()
			forgedEnv, forgedRun := demoRun(t, forgedDir, forgedDSN, signing)
			runRath(t, work, forgedEnv, "witness", "--store", storeArg(forgedDir, forgedDSN), "--key", evilKey.Signer,
				"--log-key", logKey.Verifier, "--state", filepath.Join(work, "evil.state"))
			forged := filepath.Join(work, "forged.bundle")
			runRath(t, forgedDir, forgedEnv, "export", forgedRun, "--bundle", forged, "--no-replay")
			if b, _ := os.ReadFile(filepath.Join(forged, "checkpoint")); !strings.Contains(string(b), origin+"\n") {
				t.Fatalf("the forged checkpoint is not under the genuine origin %s:\n%s", origin, b)
			}

			pinned := pins{log: logKey.Verifier, witnesses: []string{witnessKey.Verifier}}
			for _, c := range checks(auditorEnv(t)) {
				if ok, out := c.run(genuine, pinned); !ok || !strings.Contains(out, "witness.example (key "+witness.KeyID()+"): cosigned, pinned") || !strings.Contains(out, "ok: ") {
					t.Errorf("%s refused the genuine bundle with the pinned keys:\n%s", c.name, out)
				}
				if ok, out := c.run(forged, pinned); ok || !strings.Contains(out, "FAIL: checkpoint: no pinned witness cosigned it") ||
					!strings.Contains(out, "witness.example (key "+evil.KeyID()+"): cosigned, NOT pinned") {
					t.Errorf("%s did not refuse the forged bundle, naming the witness key it saw:\n%s", c.name, out)
				}
				if ok, out := c.run(forged, pins{}); !ok || !strings.Contains(out, "no witness pinned") || !strings.Contains(out, evil.KeyID()) {
					t.Errorf("%s without pins does not say that no witness is pinned:\n%s", c.name, out)
				}
			}

			pinArgs := []string{"--log-key", logKey.Verifier, "--witness-key", witnessKey.Verifier}
			if code, out := rathCode(t, realDir, realEnv, append([]string{"dossier", realRun, "--bundle", genuine, "--format", "md", "--no-verify"}, pinArgs...)...); code != 0 ||
				!strings.Contains(out, "witness.example (key "+witness.KeyID()+", pinned)") {
				t.Errorf("dossier --bundle of the genuine bundle: exit %d\n%s", code, out)
			}
			if code, out := rathCode(t, forgedDir, forgedEnv, append([]string{"dossier", forgedRun, "--bundle", forged, "--format", "md", "--no-verify"}, pinArgs...)...); code != 3 ||
				!strings.Contains(out, "no pinned witness cosigned the checkpoint") || !strings.Contains(out, evil.KeyID()+", not pinned") {
				t.Errorf("dossier --bundle of the forged bundle with pins: exit %d\n%s", code, out)
			}
			if code, out := rathCode(t, forgedDir, forgedEnv, "dossier", forgedRun, "--bundle", forged, "--format", "md", "--no-verify"); code != 0 ||
				!strings.Contains(out, "no witness pinned") || !strings.Contains(out, evil.KeyID()) {
				t.Errorf("dossier --bundle without pins does not say so: exit %d\n%s", code, out)
			}

			if code, out := rathCode(t, realDir, realEnv, append([]string{"verify"}, pinArgs...)...); code != 0 ||
				!strings.Contains(out, "witness.example (key "+witness.KeyID()+", up to size") || !strings.Contains(out, "pinned witnesses cosigned up to size") {
				t.Errorf("verify of the genuine store with pins: exit %d\n%s", code, out)
			}
			if code, out := rathCode(t, forgedDir, forgedEnv, append([]string{"verify"}, pinArgs...)...); code != 3 ||
				!strings.Contains(out, "no pinned witness cosigned a checkpoint") || !strings.Contains(out, evil.KeyID()) {
				t.Errorf("verify of the forged store with pins: exit %d\n%s", code, out)
			}
			if code, out := rathCode(t, forgedDir, forgedEnv, "verify"); code != 0 || !strings.Contains(out, "no witness pinned") || !strings.Contains(out, evil.KeyID()) {
				t.Errorf("verify of the forged store without pins does not say so: exit %d\n%s", code, out)
			}
		})
	}
}

// A bundle ships no code and its VERIFY.md sends the auditor to the rath
// module's verifier. Whoever changes a bundle in transit and adds a
// verifier of their own that prints ok (and a VERIFY.md that says to run
// it) fools only those who run it: the documented route refuses it.
func TestBundle_TheVerifierIsNotTheBundles(t *testing.T) {
	pristine, cs, signer, _ := exportAndVerify(t, "")
	err := filepath.WalkDir(pristine, func(p string, d os.DirEntry, err error) error {
		if err == nil && (d.IsDir() && d.Name() == "verify" || strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".sh") || strings.HasSuffix(p, ".py") || strings.HasSuffix(p, ".mod")) {
			t.Errorf("the bundle ships code: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(pristine, "VERIFY.md"))
	for _, want := range []string{"go run github.com/gorath/rath/cmd/rathverify@VERSION -log-key", "-witness", "Nothing in this directory can vouch for it"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("VERIFY.md does not say %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "go run .") || strings.Contains(string(md), "cd verify") {
		t.Errorf("VERIFY.md has the auditor run code from the bundle:\n%s", md)
	}

	// The tampered bundle: a changed payload, and a verifier of the
	// attacker's that says all is well.
	dir := copyDir(t, pristine)
	flipByte(t, filepath.Join(dir, firstFile(t, dir, "payloads", ".json")))
	fake := filepath.Join(dir, "verify")
	if err := os.MkdirAll(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(fake, "go.mod"), []byte("module fake\n\ngo 1.26.0\n"), 0o644)
	os.WriteFile(filepath.Join(fake, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"ok: run verified\") }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "VERIFY.md"), []byte("# Verifying\n\n```sh\n(cd verify && go run . ..)\n```\n"), 0o644)
	fakeRun := exec.Command("go", "run", ".")
	fakeRun.Dir, fakeRun.Env = fake, auditorEnv(t)
	if out, err := fakeRun.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok: run") {
		t.Fatalf("the attacker's verifier should print ok: %v\n%s", err, out)
	}
	logVkey := filepath.Join(filepath.Dir(signer), signkey.VerifierFile)
	for _, c := range cs {
		ok, out := c.run(dir, pins{log: logVkey})
		if ok || !strings.Contains(out, "FAIL") {
			t.Errorf("%s passed a tampered bundle carrying its own verifier:\n%s", c.name, out)
		}
		if c.name == "go verifier" {
			for _, want := range []string{"verify/main.go: not attested", "VERIFY.md: missing, or its SHA-256 is not the attested one", "its SHA-256 is not the attested one"} {
				if !strings.Contains(out, want) {
					t.Errorf("go verifier does not say %q:\n%s", want, out)
				}
			}
		}
	}
}

// A symbolic link added to a bundle (to a directory inside it, or one
// outside) is refused by all three verifiers, which agree on the good
// bundle too.
func TestBundle_SymlinkedDirectoriesRefusedByEveryRoute(t *testing.T) {
	pristine, cs, _, _ := exportAndVerify(t, "") // checks every route passes the good bundle
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "notes.txt"), []byte("x"), 0o644)
	cases := []struct{ name, target string }{
		{"to a directory inside", "payloads"},
		{"to a directory outside", outside},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			dir := copyDir(t, pristine)
			if err := os.Symlink(tc.target, filepath.Join(dir, "extra")); err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				if ok, out := c.run(dir, pins{}); ok || !strings.Contains(out, "extra") || !strings.Contains(out, "symbolic link") {
					t.Errorf("%s on a bundle with a symlinked directory %s: ok=%v\n%s", c.name, tc.name, ok, out)
				}
			}
		})
	}
}
