// Command rath is the command-line interface to a rath runtime directory.
// Everything it does lives in package cli, so that a program can build its
// own rath binary with its workflows registered (see cli.Config).
package main

import "github.com/gorath/rath/cmd/rath/cli"

func main() { cli.Main(cli.Config{}) }
