package rath

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gorath/rath/eventlog"
	"github.com/gorath/rath/migrations"
	"github.com/jackc/pgx/v5/stdlib"
)

// Migrate applies pending migrations to the database at target: a SQLite
// file's path, or a PostgreSQL DSN (postgres://…).
func Migrate(ctx context.Context, target string) error {
	db, err := openMigrationDB(target)
	if err != nil {
		return err
	}
	defer db.Close()
	return migrateDB(ctx, db, target)
}

// migrateDB applies pending migrations through db, open on target.
func migrateDB(ctx context.Context, db *sql.DB, target string) error {
	if _, err := migrations.Up(ctx, db); err != nil {
		return fmt.Errorf("rath: migrate %s: %w", describeTarget(target), err)
	}
	return nil
}

// describeTarget names a migration target without its password.
func describeTarget(target string) string {
	if !eventlog.IsPostgresDSN(target) {
		return target
	}
	cfg, err := eventlog.ParsePostgresDSN(target)
	if err != nil {
		return "PostgreSQL"
	}
	return fmt.Sprintf("PostgreSQL at %s:%d database %s", cfg.Host, cfg.Port, cfg.Database)
}

// MigrationStatus lists the schema migrations of the database at target
// (a SQLite file's path or a PostgreSQL DSN).
func MigrationStatus(ctx context.Context, path string) ([]migrations.Migration, error) {
	db, err := openMigrationDB(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return migrations.Status(ctx, db)
}

func openMigrationDB(path string) (*sql.DB, error) {
	if eventlog.IsPostgresDSN(path) {
		cfg, err := eventlog.ParsePostgresDSN(path)
		if err != nil {
			return nil, err
		}
		db := stdlib.OpenDB(*cfg)
		db.SetMaxOpenConns(2)
		return db, nil
	}
	db, err := sql.Open("sqlite", eventlog.DSN(path, false, "busy_timeout(10000)", "journal_mode(WAL)")+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("rath: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}
