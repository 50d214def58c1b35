package cli

import (
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// chainFormat2 is the hash-chain record rath wrote before the Merkle log
// (hash input format 2, unkeyed), computed here independently of package
// events: each field length-prefixed, a NULL run_id as length -1.
func chainFormat2(prev string, seq int64, stream string, version int64, typ string, typeVersion int64, run sql.NullString, payload []byte, at int64) string {
	h := sha256.New()
	num := func(v int64) { h.Write(binary.BigEndian.AppendUint64(nil, uint64(v))) }
	str := func(s string) { num(int64(len(s))); h.Write([]byte(s)) }
	str(prev)
	num(seq)
	str(stream)
	num(version)
	str(typ)
	num(typeVersion)
	if run.Valid {
		str(run.String)
	} else {
		num(-1)
	}
	num(int64(len(payload)))
	h.Write(payload)
	num(at)
	return hex.EncodeToString(h.Sum(nil))
}

// asSchema8 turns a store into what a rath before the Merkle log left:
// every event hash-chained, no salts, no tree, schema version 8.
func asSchema8(t *testing.T, db *sql.DB) {
	t.Helper()
	rows, err := db.Query(`SELECT seq, stream, version, type, type_version, run_id, payload, at FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		seq, version, typeVersion, at int64
		stream, typ                   string
		run                           sql.NullString
		payload                       []byte
	}
	var rs []rec
	for rows.Next() {
		var r rec
		if err := rows.Scan(&r.seq, &r.stream, &r.version, &r.typ, &r.typeVersion, &r.run, &r.payload, &r.at); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	rows.Close()
	exec(t, db, `DROP TRIGGER events_no_update`, `DROP TRIGGER tree_hashes_no_delete`)
	prev := ""
	for _, r := range rs {
		prev = chainFormat2(prev, r.seq, r.stream, r.version, r.typ, r.typeVersion, r.run, r.payload, r.at)
		if _, err := db.Exec(`UPDATE events SET hash = ? WHERE seq = ?`, prev, r.seq); err != nil {
			t.Fatal(err)
		}
	}
	// The schema after 9 goes too (00010: checkpoints; 00011: redactions,
	// whose trigger replaced events_no_update, dropped above; 00012: each
	// worker's dead_after_ms; 00013: staged appends; 00015: a run's
	// state for the fleet; 00016: subjects' data keys; 00017: tokens and
	// access records; 00018: tenants; 00019: blob copies and runs'
	// subjects, whose index of blob addresses 00026 drops; 00020: access
	// records' tenant index, dropped with them; 00021 changes nothing on
	// SQLite, nor does 00025; 00022: the indexes an erasure reads usage
	// and approvals through; 00023: the events an erasure reads, by key,
	// which 00024 fills with model calls and placements too; 00027
	// changes nothing on SQLite; 00028: the index of runs not finished).
	exec(t, db, `DROP INDEX runs_unfinished`, `DROP TABLE sealed_by_key`)
	exec(t, db, `DROP INDEX approvals_session`, `DROP INDEX usage_run`)
	exec(t, db, `DROP INDEX runs_subject`, `ALTER TABLE runs DROP COLUMN subject`)
	exec(t, db, `DROP TABLE memory_namespaces`, `DROP TABLE datasets`, `DROP INDEX approvals_tenant`, `DROP INDEX runs_tenant`,
		`ALTER TABLE approvals DROP COLUMN tenant`, `ALTER TABLE sessions DROP COLUMN tenant`, `ALTER TABLE runs DROP COLUMN tenant`)
	exec(t, db, `DROP TABLE access_records`, `DROP TABLE api_tokens`)
	exec(t, db, `ALTER TABLE runs DROP COLUMN submitted_seq`, `ALTER TABLE runs DROP COLUMN params`,
		`ALTER TABLE run_leases DROP COLUMN version`, `ALTER TABLE run_leases DROP COLUMN taken_at`)
	exec(t, db, `DROP TABLE subject_keys`, `DROP TABLE append_outcomes`, `DROP TABLE append_intents`, `DROP TABLE checkpoint_cosignatures`, `DROP TABLE checkpoints`, `DELETE FROM store_meta WHERE key = 'store_id'`,
		`DROP TABLE redactions`, `ALTER TABLE fleet_workers DROP COLUMN dead_after_ms`)
	exec(t, db, `DELETE FROM tree_hashes`, `DROP TABLE tree_hashes`, `ALTER TABLE events DROP COLUMN salt`,
		`DELETE FROM store_meta WHERE key IN ('merkle_from', 'merkle_head')`, `UPDATE store_meta SET value = '1' WHERE key = 'chain_v2_from'`,
		`DELETE FROM goose_db_version WHERE version_id >= 9`,
		`CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'rath: events are append-only (UPDATE refused)'); END`)
}

var treeLine = regexp.MustCompile(`(?m)^tree\s+(\d+:[A-Za-z0-9+/=]{44})$`)

// `rath migrate up` on a store an older rath wrote says what the Merkle
// migration does and builds the tree over the old events, whose chain
// becomes its first leaves; `rath verify` passes, prints the tree head,
// and `--tree` with it catches a truncated tail later. Each command is a
// process of its own.
func TestRun_MigrateOldChainToMerkleLog(t *testing.T) {
	w := seed(t)
	db := openDB(t, w.dir)
	asSchema8(t, db)
	r := rathExit(t, nil, "--dir", w.dir, "migrate", "up")
	if r.code != 0 {
		t.Fatalf("migrate up: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"applied 00009_merkle_log.sql: the log becomes a Merkle log", "built the Merkle tree over the " + strconv.FormatInt(w.events, 10) + " existing events",
		"applied 00024_sealed_calls_by_key.sql: sealed_by_key also indexes model calls and placements"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("migrate up output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = rathExit(t, nil, "--dir", w.dir, "verify")
	m := treeLine.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil || !strings.HasPrefix(m[1], strconv.FormatInt(w.events, 10)+":") {
		t.Fatalf("verify after migrating: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, m[1]) || !strings.Contains(r.stdout, "projections     equal") {
		t.Fatalf("verify output:\n%s", r.stdout)
	}
	tree := m[1]
	// New events follow in the Merkle format; the old tree head still holds.
	if r := rathExit(t, nil, "--dir", w.dir, "new", "after the migration"); r.code != 0 {
		t.Fatalf("new: exit %d\n%s", r.code, r.stderr)
	}
	if r := rathExit(t, nil, "--dir", w.dir, "verify", "--tree", tree); r.code != 0 {
		t.Fatalf("verify --tree after an append: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var salted int
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE salt IS NOT NULL`).Scan(&salted); err != nil || salted == 0 {
		t.Fatalf("no salted event after the migration (%v)", err)
	}
	// An old event edited behind rath's back is found at its seq.
	exec(t, db, `DROP TRIGGER events_no_update`, `UPDATE events SET payload = replace(payload, 'List the files', 'Delete the files') WHERE seq = 2`)
	r = rathExit(t, nil, "--dir", w.dir, "verify", "--tree", tree)
	if r.code != ExitVerifyFailed || !strings.Contains(r.stderr, "seq 2") {
		t.Fatalf("verify after editing an old event: exit %d\n%s", r.code, r.stderr)
	}
}
