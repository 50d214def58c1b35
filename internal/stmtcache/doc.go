// Package stmtcache keeps prepared statements for the fixed queries a
// reader runs again and again, so each run skips parsing and planning
// them: with the pure-Go SQLite driver that is about half the cost of a
// one-row lookup (33 vs 15 µs). The database/sql statements it keeps are
// prepared on each pooled connection on first use there, and closed with
// the database.
package stmtcache
