package shellgate_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gorath/rath/internal/shellgate"
)

// rm is the README's example rule.
var rm = regexp.MustCompile(`\brm\b`)

// gated reports whether a gate on rm asks for cmd: a command's text
// matches, or something cannot be known.
func gated(cmd string) (bool, shellgate.Result) {
	r := shellgate.Inspect(cmd)
	if len(r.Unknown) > 0 || rm.MatchString(cmd) {
		return true, r
	}
	for _, c := range r.Commands {
		if rm.MatchString(c) {
			return true, r
		}
	}
	return false, r
}

func TestInspect_Bypasses(t *testing.T) {
	for _, cmd := range []string{
		`r''m -f important.txt`,
		`"r"m -f important.txt`,
		`\rm -f important.txt`,
		`$'\x72m' -f important.txt`,
		`{r,}m -f important.txt`,
		`{rm,-f,important.txt}`,
		`/bin/r?m -f important.txt`,
		`/bin/r[m] -f important.txt`,
		`$(printf rm) -f important.txt`,
		"`printf rm` -f important.txt",
		`x=rm; $x -f important.txt`,
		`"$X" -f important.txt`,
		`find . -name important.txt -delete`,
		`find . -name important.txt -exec sh -c 'r''m "$1"' _ {} \;`,
		`eval 'r''m -f important.txt'`,
		`bash -c 'r""m -f important.txt'`,
		`sh -ec "r'm' -f important.txt"`,
		`echo 'r''m -f important.txt' | sh`,
		`bash <<< 'r""m -f important.txt'`,
		`python3 -c 'import os; os.remove("important.txt")'`,
		`perl -e 'unlink "important.txt"'`,
		`node -e 'require("fs").unlinkSync("important.txt")'`,
		`awk 'BEGIN{system("r" "m important.txt")}'`,
		`sudo -u nobody sh -c 'r""m important.txt'`,
		`timeout 5 python3 -c 'print(1)'`,
		`env /bin/r?m important.txt`,
		`echo important.txt | xargs r''m`,
		`source ./script.sh`,
		`. ./script.sh`,
		`alias ls='r''m'`,
		`ls() { r''m -f important.txt; }; ls`,
		`(cd /tmp && r''m -f important.txt)`,
		`true || r''m -f important.txt`,
		`cat <(r''m -f important.txt)`,
		`a='a[$'; b='(r''m important.txt)]'; c=$a$b; echo $((c))`,
		`x='a[$(r''m important.txt)]'; [[ $x -eq 1 ]]`,
		`env -S 'r''m important.txt'`,
		`hash -p /bin/r''m ls; ls important.txt`,
		`if true; then r''m important.txt; fi`,
		`for f in important.txt; do r''m "$f"; done`,
		`printf -v "$n" 1`,
		`echo 'unterminated`,
	} {
		t.Run(cmd, func(t *testing.T) {
			if ok, r := gated(cmd); !ok {
				t.Errorf("not gated: %q read as %q, nothing unknown", cmd, r.Commands)
			}
		})
	}
}

func TestInspect_PlainCommands(t *testing.T) {
	for _, cmd := range []string{
		`ls -la`,
		`cat README.md | grep -n rath | head -5`,
		`git status && git diff --stat`,
		`go test ./... 2>&1 | tail -20`,
		`mkdir -p build && cp a.txt build/`,
		`echo "hello $USER" > out.txt`,
		`for f in *.go; do wc -l "$f"; done`,
		`python3 script.py --verbose`,
		`bash ./build.sh`,
		`sed -n '1,10p' file.txt`,
		`grep -r "TODO" . | sort | uniq -c`,
		`find . -name '*.go' -type f`,
		`printf '%s\n' "$HOME"`,
		`[ -f go.mod ] && echo yes`,
		`test -n "$X"`,
		`echo ${arr[@]}`,
	} {
		t.Run(cmd, func(t *testing.T) {
			if ok, r := gated(cmd); ok {
				t.Errorf("gated: %q read as %q, unknown %q", cmd, r.Commands, r.Unknown)
			}
		})
	}
}

func TestInspect_Commands(t *testing.T) {
	r := shellgate.Inspect(`A=1 r''m -f "x y" | {ls,cat} && (bash -c 'git  push')`)
	got := strings.Join(r.Commands, " ; ")
	if want := "A=1 rm -f x y ; ls cat ; bash -c git  push ; git push"; got != want {
		t.Errorf("commands: got %q, want %q", got, want)
	}
	if len(r.Unknown) != 0 {
		t.Errorf("unknown: %q", r.Unknown)
	}
}
