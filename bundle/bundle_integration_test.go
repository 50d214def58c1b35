//go:build integration

package bundle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gorath/rath/internal/pgtest"
	"github.com/gorath/rath/signkey"

	"github.com/gorath/rath/internal/rathbin"
)

// The path an auditor takes: a real run made with the rath CLI (the
// offline demo, in a separate process, on each store), exported with
// `rath export RUN --bundle`, then checked where rath is not on PATH with
// the verifiers of cmd/rathverify, the rath module's, never the bundle's:
// the Go verifier, verify.sh (sha256sum and openssl) and verify.py
// (Debian's python3 with securesystemslib).

var (
	pg          *pgtest.Server
	rathBin     string // built once by TestMain, without the race detector
	verifierBin string // cmd/rathverify, built once by TestMain
	scriptDir   string // cmd/rathverify, for verify.sh and verify.py
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rath-bundle-test-")
	if err != nil {
		panic(err)
	}
	var out []byte
	if rathBin, out, err = rathbin.Build(dir); err != nil {
		os.RemoveAll(dir)
		panic("build cmd/rath: " + err.Error() + "\n" + string(out))
	}
	// cmd/rathverify is a module of its own (so `go run …@VERSION` needs
	// nothing else): built offline from its directory.
	if scriptDir, err = filepath.Abs(filepath.Join("..", "cmd", "rathverify")); err != nil {
		panic(err)
	}
	verifierBin = filepath.Join(dir, "rathverify")
	build := exec.Command("go", "build", "-o", verifierBin, ".")
	build.Dir, build.Env = scriptDir, append(os.Environ(), "GOPROXY=off", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("build cmd/rathverify: " + err.Error() + "\n" + string(out))
	}
	pgtest.Main(m, func(s *pgtest.Server) { pg = s }, func() { os.RemoveAll(dir) })
}

// auditorPath is a PATH with the standard tools and go, and no rath.
func auditorPath(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	path := "/usr/bin:/bin:" + filepath.Dir(goBin)
	for _, d := range filepath.SplitList(path) {
		if _, err := os.Stat(filepath.Join(d, "rath")); err == nil {
			t.Fatalf("rath is on the auditor's PATH in %s", d)
		}
	}
	return path
}

// auditorEnv runs the standard tools and an offline go: the module cache
// and build cache of this machine, GOPROXY=off, no rath.
func auditorEnv(t *testing.T) []string {
	env := []string{"PATH=" + auditorPath(t), "HOME=" + t.TempDir(), "GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local"}
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	return env
}

// runRath runs the rath binary with env in dir and fails the test on error.
func runRath(t *testing.T, dir string, env []string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(rathBin, argv...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("rath %s: %v\n%s%s", strings.Join(argv, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// demoRun runs the offline demo in a fresh store (dsn "" for SQLite in
// dir/store) and returns the CLI's environment and the run's id.
func demoRun(t *testing.T, dir, dsn string, extra ...string) ([]string, string) {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "RATH_HOME=" + t.TempDir(), "RATH_DIR=" + filepath.Join(dir, "store")}
	if dsn != "" {
		env = append(env, "RATH_DSN="+dsn)
	}
	env = append(env, extra...)
	var sum struct {
		Run string `json:"run"`
	}
	if err := json.Unmarshal([]byte(runRath(t, dir, env, "demo", "--json")), &sum); err != nil || sum.Run == "" {
		t.Fatalf("demo summary: %v %q", err, sum.Run)
	}
	return env, sum.Run
}

// pins are the keys an auditor got from their holders: the log's note
// verifier key file and the witnesses'.
type pins struct {
	log       string
	witnesses []string
}

// check runs one way of verifying on dir with pins: its exit status and
// output.
type check struct {
	name string
	run  func(dir string, p pins) (ok bool, out string)
}

// checks are the three verifiers of cmd/rathverify, run with env.
func checks(env []string) []check {
	run := func(name string, argv ...string) (bool, string) {
		cmd := exec.Command(name, argv...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return err == nil, string(out)
	}
	flags := func(p pins, logFlag, witnessFlag string) []string {
		var argv []string
		if p.log != "" {
			argv = append(argv, logFlag, p.log)
		}
		for _, w := range p.witnesses {
			argv = append(argv, witnessFlag, w)
		}
		return argv
	}
	return []check{
		{"go verifier", func(dir string, p pins) (bool, string) {
			return run(verifierBin, append(flags(p, "-log-key", "-witness"), dir)...)
		}},
		{"sha256sum+openssl", func(dir string, p pins) (bool, string) {
			return run("bash", append(append([]string{filepath.Join(scriptDir, "verify.sh")}, flags(p, "-l", "-w")...), dir)...)
		}},
		{"python securesystemslib", func(dir string, p pins) (bool, string) {
			return run("/usr/bin/python3", append(append([]string{filepath.Join(scriptDir, "verify.py")}, flags(p, "--log-key", "--witness")...), dir)...)
		}},
	}
}

// copyDir copies a bundle.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "bundle")
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return to
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// firstFile returns the first file in a bundle's subdirectory.
func firstFile(t *testing.T, dir, sub, suffix string) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, sub))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			return sub + "/" + e.Name()
		}
	}
	t.Fatalf("no %s file in %s", suffix, sub)
	return ""
}

// exportAndVerify makes a run on the store, exports its bundle and
// checks it the auditor's ways; it returns the bundle, the checks and the
// key.
func exportAndVerify(t *testing.T, dsn string) (string, []check, string, []string) {
	dir := t.TempDir()
	// A key whose verifier key's base64 holds a '+', the separator of its
	// fields: a verifier that splits on the last '+' reads a wrong key.
	var keys signkey.Files
	for i := 0; ; i++ {
		var err error
		if keys, err = signkey.Generate(filepath.Join(dir, "keys", strconv.Itoa(i)), "rath.test/log"); err != nil {
			t.Fatal(err)
		}
		k, err := signkey.Load(keys.Signer)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.SplitN(k.VerifierKey(), "+", 3)[2], "+") {
			break
		}
	}
	env, run := demoRun(t, dir, dsn)
	out := filepath.Join(t.TempDir(), "bundle")
	runRath(t, dir, append(env, "RATH_SIGNING_KEY="+keys.Signer), "export", run, "--bundle", out)
	cs := checks(auditorEnv(t))
	for _, c := range cs {
		if ok, msg := c.run(out, pins{log: keys.Verifier}); !ok || !strings.Contains(msg, "ok: ") {
			t.Fatalf("%s on the pristine bundle: ok=%v\n%s", c.name, ok, msg)
		}
	}
	return out, cs, keys.Signer, env
}

func TestBundle_VerifiesWithoutRathAndCatchesTampering(t *testing.T) {
	pristine, cs, signer, _ := exportAndVerify(t, "")

	// A rewritten log: another history of the same length, its checkpoint
	// signed with the same key (the key holder rewrote it).
	otherDir := t.TempDir()
	otherEnv, otherRun := demoRun(t, otherDir, "")
	other := filepath.Join(t.TempDir(), "other")
	runRath(t, otherDir, append(otherEnv, "RATH_SIGNING_KEY="+signer), "export", otherRun, "--bundle", other, "--no-replay")

	// Every case runs the Go verifier; the marked ones (one per kind of
	// damage) also run sha256sum+openssl and Python, which cost about a
	// second of CPU each.
	cases := []struct {
		name   string
		tamper func(dir string)
		want   []string // in the Go verifier's output
		all    bool
	}{
		{"flip a byte of events.jsonl", func(d string) { flipByte(t, filepath.Join(d, "events.jsonl")) },
			[]string{"events.jsonl: missing, or its SHA-256 is not the attested one"}, true},
		{"flip a byte of proofs.json", func(d string) { flipByte(t, filepath.Join(d, "proofs.json")) },
			[]string{"proofs.json"}, false},
		{"flip a byte of the checkpoint", func(d string) { flipByte(t, filepath.Join(d, "checkpoint")) },
			[]string{"checkpoint"}, false},
		{"flip a byte of a payload", func(d string) { flipByte(t, filepath.Join(d, firstFile(t, d, "payloads", ".json"))) },
			[]string{"do not match the line's commitment"}, true},
		{"flip a byte of a salt", func(d string) { flipByte(t, filepath.Join(d, firstFile(t, d, "payloads", ".salt"))) },
			[]string{"do not match the line's commitment"}, false},
		{"flip a byte of a blob", func(d string) { flipByte(t, filepath.Join(d, firstFile(t, d, "blobs", ""))) },
			[]string{"its SHA-256 is not its name"}, true},
		{"flip a byte of the attestation", func(d string) { flipByte(t, filepath.Join(d, "attestation.dsse.json")) },
			[]string{"attestation.dsse.json"}, true},
		{"break the attestation's base64", func(d string) {
			p := filepath.Join(d, "attestation.dsse.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"payload":"`), []byte(`"payload":"!`), 1), 0o644)
		}, []string{"attestation.dsse.json"}, true},
		{"break a checkpoint signature's base64", func(d string) {
			p := filepath.Join(d, "checkpoint")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("\u2014 rath.test/log "), []byte("\u2014 rath.test/log !"), 1), 0o644)
		}, []string{"checkpoint"}, true},
		{"flip a byte of public.pem", func(d string) { flipByte(t, filepath.Join(d, "public.pem")) },
			[]string{"public.pem: missing, or its SHA-256 is not the attested one"}, false},
		{"flip a byte of VERIFY.md", func(d string) { flipByte(t, filepath.Join(d, "VERIFY.md")) },
			[]string{"VERIFY.md: missing, or its SHA-256 is not the attested one"}, false},
		{"drop the last event", func(d string) {
			p := filepath.Join(d, "events.jsonl")
			b, _ := os.ReadFile(p)
			lines := bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
			os.WriteFile(p, bytes.Join(lines[:len(lines)-1], nil), 0o644)
		}, []string{"events.jsonl: missing, or its SHA-256 is not the attested one", "events.jsonl has"}, true},
		{"swap in a checkpoint from a rewritten log", func(d string) {
			b, _ := os.ReadFile(filepath.Join(other, "checkpoint"))
			os.WriteFile(filepath.Join(d, "checkpoint"), b, 0o644)
		}, []string{"checkpoint: missing, or its SHA-256 is not the attested one", "its leaf is not in the checkpoint's tree"}, true},
		{"add a file", func(d string) { os.WriteFile(filepath.Join(d, "notes.txt"), []byte("x"), 0o644) },
			[]string{"notes.txt: not attested"}, true},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			dir := copyDir(t, pristine)
			tc.tamper(dir)
			for _, c := range cs {
				if c.name != "go verifier" && !tc.all {
					continue
				}
				ok, out := c.run(dir, pins{})
				if ok || !strings.Contains(out, "FAIL") && !strings.Contains(out, "Failure") {
					t.Errorf("%s passed a bundle after %q:\n%s", c.name, tc.name, out)
					continue
				}
				if c.name != "go verifier" {
					continue
				}
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("go verifier after %q does not say %q:\n%s", tc.name, w, out)
					}
				}
			}
		})
	}
}

func TestBundle_Postgres(t *testing.T) {
	dsn, err := pg.CreateDatabase(context.Background(), "bundle")
	if err != nil {
		t.Fatal(err)
	}
	pristine, cs, _, _ := exportAndVerify(t, dsn)
	dir := copyDir(t, pristine)
	flipByte(t, filepath.Join(dir, firstFile(t, dir, "payloads", ".json")))
	for _, c := range cs {
		if ok, out := c.run(dir, pins{}); ok {
			t.Errorf("%s passed a bundle with a flipped payload byte:\n%s", c.name, out)
		}
	}
}
