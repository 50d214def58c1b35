//go:build !integration

package examples_test

import "testing"

// postgresStore is nil without -tags integration: the replay of the
// examples' runs on PostgreSQL needs a server (make test starts one).
func postgresStore(*testing.T) []string { return nil }

func stopPostgres() {}
