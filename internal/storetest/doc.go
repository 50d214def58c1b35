// Package storetest is the event store's conformance suite: one set of
// tests (append, concurrent appends from several stores, conflicts,
// tampering and truncation found by verify, keyed chains, rebuild,
// projection checks, subscriptions across stores) that runs unchanged
// against every backend. sqlite_test.go runs it on SQLite files,
// postgres_test.go on a real throwaway PostgreSQL server (package
// pgtest).
//
// A Backend says how to make a fresh, empty, migrated database and how to
// run SQL on it directly, as a person with psql or sqlite3 would: that is
// how the tamper tests edit rows behind the store's back.
//
// This package is for tests only.
package storetest
