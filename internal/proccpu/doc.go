// Package proccpu reads the CPU time processes used from Linux's /proc,
// for benchmarks that count another process's CPU: a worker's, or a
// PostgreSQL server's with all its backends.
package proccpu
