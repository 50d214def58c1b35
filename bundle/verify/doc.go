// Package main is the standalone verifier that every attested run bundle
// ships as verify/main.go (package bundle embeds this file): a program of
// at most 150 lines, the standard library and golang.org/x/mod only, that a
// stranger runs with `go run` to check a bundle without rath. It owns no
// API; it imports nothing from rath, so it builds outside this module.
package main
