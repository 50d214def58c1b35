// Package queryplan reads the plan SQLite or PostgreSQL chooses for a
// statement, for the tests that hold which index a statement searches
// (a statement that scans a table whole grows with the store).
package queryplan
