package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorath/rath/flow/model/modeltest"
)

// recipeURL is the server address docs/CONFIG.md's local-model recipe
// writes; the test puts its own server's in its place.
const recipeURL = "http://localhost:8000/v1"

// docs/CONFIG.md's "A local or self-hosted model" blocks, pasted in one
// shell as a user would (environment variables, then a config file in
// ~/.rath, each rath a process of its own), against an OpenAI-compatible
// server on loopback: both runs reach that server with the model and key
// the recipe sets, and rath config shows the server and the model
// without the key.
func TestConfig_LocalModelRecipe(t *testing.T) {
	t.Parallel()
	var blocks []string
	for _, b := range fencedBlocks(t, "docs/CONFIG.md", "sh") {
		if strings.Contains(b, recipeURL) {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) != 2 {
		t.Fatalf("docs/CONFIG.md has %d sh blocks naming %s, want the recipe's two (environment, config file)", len(blocks), recipeURL)
	}
	const (
		envKey, fileKey = "local-key-0123456789abcd", "file-key-0123456789wxyz"
		model           = "qwen2.5-7b-instruct"
	)
	for _, b := range blocks {
		for _, want := range []string{model, "rath config", "rath run "} {
			if !strings.Contains(b, want) {
				t.Fatalf("a recipe block lacks %q:\n%s", want, b)
			}
		}
	}
	if !strings.Contains(blocks[0], envKey) || !strings.Contains(blocks[1], fileKey) {
		t.Fatalf("the recipe's keys are not %q and %q:\n%s", envKey, fileKey, strings.Join(blocks, "\n"))
	}
	srv := modeltest.NewOpenAI(t)
	srv.Push(modeltest.Reply{Content: "Hello from the environment's server."},
		modeltest.Reply{Content: "Hello from the config file's server."})

	bin, home := t.TempDir(), t.TempDir()
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "rath")); err != nil {
		t.Fatal(err)
	}
	script := make([]string, 0, 2*len(blocks))
	for i, b := range blocks {
		script = append(script, "echo '--- block "+string(rune('1'+i))+"'", strings.ReplaceAll(b, recipeURL, srv.URL()))
	}
	env := append(cleanEnv(), mainEnv+"=1", "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+home)
	out := pasteInShell(t, t.TempDir(), env, script)
	envOut, fileOut, ok := strings.Cut(out, "--- block 2\n")
	if !ok {
		t.Fatalf("no second block in the output:\n%s", out)
	}

	for _, c := range []struct {
		name, out, provider, key, reply string
	}{
		{"environment", envOut, "provider     -", envKey, "Hello from the environment's server."},
		{"config file", fileOut, "provider     local", fileKey, "Hello from the config file's server."},
	} {
		for _, want := range []string{c.provider, "kind         openai", "model        " + model,
			"base url     " + srv.URL(), "api key      [set] …" + c.key[len(c.key)-4:], c.reply} {
			if !strings.Contains(c.out, want) {
				t.Errorf("%s: the output lacks %q:\n%s", c.name, want, c.out)
			}
		}
		if strings.Contains(c.out, c.key) {
			t.Errorf("%s: the key was printed:\n%s", c.name, c.out)
		}
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the server got %d requests, want one per run", len(reqs))
	}
	for i, key := range []string{envKey, fileKey} {
		if got, want := reqs[i].Header.Get("Authorization"), "Bearer "+key; got != want {
			t.Errorf("request %d: Authorization %q, want %q", i+1, got, want)
		}
		var body struct {
			Model string `json:"model"`
		}
		if err := reqs[i].Decode(&body); err != nil {
			t.Fatal(err)
		}
		if body.Model != model {
			t.Errorf("request %d: model %q, want %q", i+1, body.Model, model)
		}
	}
}
