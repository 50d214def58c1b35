package demo

import (
	"fmt"
	"os"
	"path/filepath"
)

// The project the agents work on: a tiny Python module and its tests.
// Python because its tests run in milliseconds in a fresh sandbox. The
// tests run through run_tests.py, which prints the same text for the same
// code on every run (no timings, no paths, no bytecode files written), so
// a replay with live tools (rath replay --live-tools) can compare the
// tools' outputs and file changes exactly.
var projectFiles = map[string]string{
	"ISSUE.md": `# Issue 17: add slugify to textkit

Add a function slugify(title) to textkit.py that turns a title into a URL
slug: lowercase words joined by single hyphens, with punctuation dropped.

    slugify("Hello World") == "hello-world"

Run the tests with: python3 run_tests.py
`,
	"textkit.py": `"""Small text helpers."""


def shout(text):
    """Return text in upper case with an exclamation mark."""
    return text.upper() + "!"
`,
	"run_tests.py": runTests,
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

// runTests runs every test_*.py with unittest and reports each failure by
// test id and message, without the traceback (whose paths name the
// directory the tests ran in) or the time taken.
const runTests = `"""Run the tests; print a summary that is the same on every run."""
import sys
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the workspace


class Result(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.lines = []

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.lines.append("FAIL %s: %s" % (test.id(), err[1]))

    def addError(self, test, err):
        super().addError(test, err)
        self.lines.append("ERROR %s: %s: %s" % (test.id(), err[0].__name__, err[1]))


suite = unittest.defaultTestLoader.discover(".", pattern="test_*.py")
result = Result()
suite.run(result)
for line in result.lines:
    print(line)
print("%d tests, %d failures, %d errors" % (result.testsRun, len(result.failures), len(result.errors)))
print("OK" if result.wasSuccessful() else "FAILED")
sys.exit(0 if result.wasSuccessful() else 1)
`
