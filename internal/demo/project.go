package demo

import (
	"fmt"
	"os"
	"path/filepath"
)

// The project the agents work on: a tiny Python module and its tests.
// Python because its tests run in milliseconds in a fresh sandbox.
var projectFiles = map[string]string{
	"ISSUE.md": `# Issue 17: add slugify to textkit

Add a function slugify(title) to textkit.py that turns a title into a URL
slug: lowercase words joined by single hyphens, with punctuation dropped.

    slugify("Hello World") == "hello-world"

Run the tests with: python3 -m unittest -q
`,
	"textkit.py": `"""Small text helpers."""


def shout(text):
    """Return text in upper case with an exclamation mark."""
    return text.upper() + "!"
`,
	"test_textkit.py": `import unittest

import textkit


class TextkitTest(unittest.TestCase):
    def test_shout(self):
        self.assertEqual(textkit.shout("hi"), "HI!")

    def test_slugify(self):
        self.assertEqual(textkit.slugify("Hello World"), "hello-world")


if __name__ == "__main__":
    unittest.main()
`,
}

// SetupWorkspace writes the project into dir, replacing what was there.
func SetupWorkspace(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("demo: reset workspace: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("demo: workspace: %w", err)
	}
	for name, body := range projectFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("demo: write %s: %w", name, err)
		}
	}
	return nil
}
