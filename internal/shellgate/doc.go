// Package shellgate reads a shell command the way the shell will, so an
// approval rule on run_shell_command can hold against quoting.
//
// Inspect parses the command with a real shell parser (mvdan.cc/sh/v3,
// bash dialect) and returns the text of every simple command it holds —
// in pipelines, lists, subshells, functions, loops, and shell code given
// literally to sh -c or eval — after quote removal and brace expansion, so
// that each of these reads as rm:
//
//	r''m  "r"m  \rm  $'\x72m'  {rm,-f,x}
//
// It also lists what cannot be known before the command runs; a caller
// that gates on the text must ask a person when that list is not empty
// (fail closed):
//
//   - a command or process substitution, $(…), `…`, <(…): its output is
//     only known by running it;
//   - a command name that is not literal: a variable, an arithmetic
//     expansion, a glob (/bin/r?m);
//   - text the shell or a program will run as code a second time: source
//     and ., alias definitions, any word that still holds $( or ` after
//     quote removal (arithmetic subscripts, trap, watch, ssh re-evaluate
//     such text), arithmetic that reads a variable (bash evaluates the
//     variable's value as an expression, subscripts included), and
//     builtins that take variable names (declare, read, printf -v, unset…)
//     given a name that is not literal;
//   - a program that runs code given inline or on its input: a shell
//     reading its commands from stdin (sh, bash -s, echo … | sh), python
//     -c, perl -e, node -e, ruby -e, php -r, awk, and the like, seen
//     through wrappers such as sudo, env, nice, timeout;
//   - a program that runs commands or deletes files for each input it
//     finds: find with -exec, -execdir, -ok, -okdir or -delete; xargs;
//     parallel.
//
// What it cannot see: what a program does. A script file (python3
// x.py, bash x.sh, make, go test) is a program like any other, seen by
// its name and arguments only; so is any program not on the lists above
// that runs its arguments as code. Confining what programs do is a
// sandbox's job, not a pattern's.
package shellgate
