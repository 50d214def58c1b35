package cli

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recordedText returns what a store in dir holds and shows: its database
// files, every event as JSON and the run's JSONL and dossier exports.
func recordedText(t *testing.T, env []string, dir, out string) []string {
	t.Helper()
	texts := []string{
		rathProc(t, env, "events", "--json"),
		rathProc(t, env, "export", strings.TrimSpace(lastField(out, "session: "))),
		rathProc(t, env, "dossier", strings.TrimSpace(lastField(out, "run: ")), "--format", "jsonl"),
	}
	return append(texts, dbFiles(t, dir)...)
}

// dbFiles returns the contents of the SQLite files of the store in dir
// (the database, its WAL and shared memory).
func dbFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "rath.db*"))
	if len(files) == 0 {
		t.Fatal("no database files")
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// The OpenTelemetry exporter's headers carry the collector's credentials:
// a local tool that prints rath's environment (/proc/$PPID/environ) has
// them, and the log, its exports and the database hold only markers.
func TestRun_OTLPHeadersNeverReachTheLog(t *testing.T) {
	const token, team, traces = "otlp-5ecret-bearer-0123456789", "hc-5ecret-team-abcdef", "tr-5ecret-traces-zyxwvu"
	dir, work := t.TempDir(), t.TempDir()
	env := []string{"RATH_DIR=" + dir, "RATH_HOME=" + t.TempDir(),
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20" + token + ",x-honeycomb-team=" + team,
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS=x-traces-auth=" + traces}
	cas := shellCassette(t, "env; tr '\\0' '\\n' < /proc/$PPID/environ")
	out := rathProc(t, env, "run", "--cassette", cas, "--workspace", work, "--backend", "local", "--tools", "run_shell_command", "--no-stream", "print the environment")
	texts := recordedText(t, env, dir, out)
	for i, text := range texts {
		for _, v := range []string{token, team, traces, "Bearer%20otlp"} {
			if strings.Contains(text, v) {
				t.Errorf("%q found in recorded text %d (%d bytes)", v, i, len(text))
			}
		}
	}
	if !strings.Contains(texts[0], "OTEL_EXPORTER_OTLP_HEADERS=[redacted:OTEL_EXPORTER_OTLP_HEADERS]") ||
		!strings.Contains(texts[0], "OTEL_EXPORTER_OTLP_TRACES_HEADERS=[redacted:OTEL_EXPORTER_OTLP_TRACES_HEADERS]") {
		t.Error("the tool's output does not show the headers redacted")
	}
}

// The log's signing key is rath's to use, not a tool's to record: a local
// tool that prints the file RATH_SIGNING_KEY names (as text, base64 and
// hex) leaves no trace of it in the database, the exports or the attested
// bundle signed with that key.
func TestRun_SigningKeyNeverReachesTheLog(t *testing.T) {
	dir, work, keys := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "keys")
	env := []string{"RATH_DIR=" + dir, "RATH_HOME=" + t.TempDir()}
	rathProc(t, env, "keys", "generate", "--out", keys)
	keyFile := filepath.Join(keys, "signer.key")
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.TrimSpace(string(raw))
	b64 := strings.SplitN(text, "+", 5)[4] // PRIVATE+KEY+name+hash+payload
	payload, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	seed := payload[1:]
	material := map[string]string{
		"key text": text, "key payload": b64,
		"file base64": base64.StdEncoding.EncodeToString(raw), "file hex": hex.EncodeToString(raw),
		"file hex first line": hex.EncodeToString(raw)[:60], "file base64 first line": base64.StdEncoding.EncodeToString(raw)[:76],
		"seed hex": hex.EncodeToString(seed), "seed base64": base64.StdEncoding.EncodeToString(seed),
	}
	env = append(env, "RATH_SIGNING_KEY="+keyFile)
	cas := shellCassette(t, "cat '"+keyFile+"'", "base64 '"+keyFile+"'; base64 -w0 '"+keyFile+"'", "xxd -p '"+keyFile+"'; xxd -p -c0 '"+keyFile+"'")
	out := rathProc(t, env, "run", "--cassette", cas, "--workspace", work, "--backend", "local", "--tools", "run_shell_command", "--no-stream", "read the key")
	texts := recordedText(t, env, dir, out)
	bundle := filepath.Join(t.TempDir(), "bundle")
	rathProc(t, env, "export", strings.TrimSpace(lastField(out, "run: ")), "--bundle", bundle)
	err = filepath.WalkDir(bundle, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		texts = append(texts, string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		for what, v := range material {
			if strings.Contains(text, v) {
				t.Errorf("the key's %s found in recorded text %d (%d bytes)", what, i, len(text))
			}
		}
	}
	if !strings.Contains(texts[0], "[redacted:RATH_SIGNING_KEY]") {
		t.Error("no marker for the signing key in the events")
	}
}
