//go:build integration

package dossier_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium finds Debian's chromium. The test fails, not skips, without
// it: `make test` installs it (apt-get install -y chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed; the dossier browser test needs it: apt-get update && apt-get install -y chromium (make deps does this)")
	return ""
}

// headless runs chromium on a local file with networking features off
// and returns its stdout.
func headless(t *testing.T, page string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, extra...)
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, chromium(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
	}
	return stdout.Bytes()
}

func TestHTML_InChromium(t *testing.T) {
	f := mustFixture(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "dossier.html")
	if err := os.WriteFile(page, []byte(render(t, f.d, "html")), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(headless(t, page, "--dump-dom"))
	if !strings.Contains(dom, "</html>") {
		t.Fatalf("no DOM dumped: %.300s", dom)
	}

	t.Run("SVGHasOneNodePerSession", func(t *testing.T) {
		start, end := strings.Index(dom, "<svg"), strings.Index(dom, "</svg>")
		if start < 0 || end < start {
			t.Fatal("no inline SVG in the DOM")
		}
		svg := dom[start:end]
		nodes := regexp.MustCompile(`<g class="node [^"]*" data-session="([^"]+)"`).FindAllStringSubmatch(svg, -1)
		if len(nodes) != len(f.d.Sessions) {
			t.Fatalf("%d SVG nodes for %d sessions", len(nodes), len(f.d.Sessions))
		}
		for _, s := range f.d.Sessions {
			if !strings.Contains(svg, `data-session="`+s.ID+`"`) {
				t.Errorf("session %s has no node", s.ID)
			}
		}
		if n := strings.Count(svg, `<g class="edge `); n != len(f.d.Graph.Edges) {
			t.Fatalf("%d SVG edges, want %d", n, len(f.d.Graph.Edges))
		}
		if strings.Count(dom, "<svg") != 1 || strings.Contains(dom[end:], "data-session=") {
			t.Fatal("a node escaped the SVG: the markup did not parse as written")
		}
	})

	t.Run("SectionsExist", func(t *testing.T) {
		for _, id := range sections {
			if !strings.Contains(dom, `<section id="`+id+`">`) {
				t.Errorf("section %s missing from the DOM", id)
			}
		}
		for _, tc := range f.d.Tools {
			if !strings.Contains(dom, `id="`+tc.Anchor+`"`) {
				t.Errorf("tool call anchor %s missing", tc.Anchor)
			}
		}
	})

	t.Run("ScriptPayloadIsText", func(t *testing.T) {
		if strings.Contains(strings.ToLower(dom), "<script") {
			t.Fatal("the browser built a <script> element from log text")
		}
		// The serializer escapes "<" in text nodes: the payload is text.
		if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Fatal("the payload is not in the DOM as text")
		}
	})

	t.Run("Screenshot", func(t *testing.T) {
		shot := filepath.Join(dir, "dossier.png")
		if keep := os.Getenv("RATH_DOSSIER_SCREENSHOT"); keep != "" {
			shot = keep // to look at it: RATH_DOSSIER_SCREENSHOT=/tmp/d.png
		}
		headless(t, page, "--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars")
		raw, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 2000 {
			t.Fatalf("screenshot is %v", b)
		}
		// A page that did not render is one flat color.
		colors := map[[3]uint32]bool{}
		for y := 0; y < 2000; y += 7 {
			for x := 0; x < 1280; x += 7 {
				r, g, b, _ := img.At(x, y).RGBA()
				colors[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			}
		}
		if len(colors) < 20 {
			t.Fatalf("the screenshot has %d colors: nothing rendered", len(colors))
		}
		t.Logf("screenshot: %s (%d colors sampled)", shot, len(colors))
	})
}
