package rath_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// historyRules are phrasings that tell the story of rath's development
// instead of describing the code in front of the reader. History goes to
// CHANGELOG.md and git, so they are not allowed in README.md or docs/.
var historyRules = []struct {
	name string
	re   *regexp.Regexp
}{
	{"a development round", regexp.MustCompile(`(?i)\b((first|second|third|fourth|fifth|sixth|earlier|previous|later|this|that|development|performance) rounds?|rounds? [0-9]+)\b`)},
	{"a session number", regexp.MustCompile(`(?i)\bsessions? [0-9]+`)},
	{"an issue number", regexp.MustCompile(`(?i)(\bissues? #?[0-9]+|(^|[\s(\[])#[0-9]+\b)`)},
	{"a comparison with an earlier version", regexp.MustCompile(`(?i)\b(as before|before this change|the code before|since session|until session)\b`)},
	{"a date", regexp.MustCompile(`\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b`)},
}

// codeSpans matches inline code, whose text is the product's (a
// transcript's "#0 user", a timestamp in an example), not the doc's.
var codeSpans = regexp.MustCompile("`[^`]*`")

// historyFindings returns "file:line: rule: text" for every line of the
// markdown text that breaks one of historyRules, fenced blocks and inline
// code left out.
func historyFindings(name, text string) []string {
	var out []string
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		prose := codeSpans.ReplaceAllString(line, "")
		for _, r := range historyRules {
			if m := r.re.FindString(prose); m != "" {
				out = append(out, name+":"+strconv.Itoa(i+1)+": "+r.name+": "+strings.TrimSpace(m))
			}
		}
	}
	return out
}

// README.md and docs/*.md describe the product as it is: no development
// rounds, session or issue numbers, dated figure sets or "as before".
func TestDocs_DescribeTheProductNotItsHistory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "README.md")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, finding := range historyFindings(f, string(b)) {
			t.Error(finding)
		}
	}
}

// The rules catch what they are for and leave the product's own words
// (a tool round, round trips, the round cap, a transcript's #0) alone.
func TestDocs_HistoryRules(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{"Figures of the second performance round.", true},
		{"### Figures on the development machine (2026-11-27, session 22)", true},
		{"Parallel writers (issue 30): staged appends.", true},
		{"fixed in #30, see there", true},
		{"Logs written before are verified as before.", true},
		{"Unmet since session 18.", true},
		{"The earlier rounds measured less.", true},
		{"A round's calls run in parallel; the round cap stops the loop.", false},
		{"Two round trips a commit, one per tool round.", false},
		{"The transcript reads `#0 user` then `#1 assistant`.", false},
		{"A session forks; its sessions merge.", false},
		{"```", false},
	}
	for _, tt := range tests {
		if got := len(historyFindings("x.md", tt.line)) > 0; got != tt.want {
			t.Errorf("%q: found history %v, want %v", tt.line, got, tt.want)
		}
	}
}

// The README is a five-minute read before the first command: what rath
// is, the set-up, one run, replay, the dossier and the library
// quickstart; the longer tour is docs/TOUR.md.
func TestDocs_ReadmeIsShort(t *testing.T) {
	const most = 1300 // words, code blocks included
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(b))); n > most {
		t.Errorf("README.md has %d words, want at most %d: move the longer parts to docs/", n, most)
	}
}
