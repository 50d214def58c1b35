// Package migrations owns rath's schema: goose SQL migrations embedded with
// embed.FS, one set per dialect (sqlite/ and postgres/, the same versions
// and tables), and the helpers that apply and list them. The dialect is
// taken from the database handle's driver (DialectOf).
//
// The schema has two halves. The events and blobs tables are the source of
// truth and are append-only (triggers refuse UPDATE and DELETE on events);
// store_meta holds facts about the chain (its key fingerprint, the first
// seq of hash format 2) that package events writes and rebuilds keep.
// Everything else (sessions, session_edges, chunks, usage, runs, id_counters,
// projection_checkpoints) is a projection that package projections can drop and
// rebuild from the log at any time.
//
// goose applies the migrations, records their versions and, on
// PostgreSQL, holds its advisory lock while it does; the files are split
// into statements here (split: goose's documented annotations, the ones
// these files use) and handed to goose as one function per migration,
// because goose's own reader was most of the CPU of migrating a fresh
// store. TestSplit_BuildsTheSchemaGooseBuildsFromTheFiles checks, on both
// stores, that every version up and down builds the schema goose builds
// from the files themselves.
//
// Up refuses a database whose recorded version is newer than the highest
// embedded migration (a *SchemaTooNewError): this binary does not know
// that schema.
//
// This package imports no other rath package.
package migrations
