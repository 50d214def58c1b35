package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// How tree_hashes stores the tree. A row holds one or more hashes: the
// hash of the stored-hash index id, then those of the next indexes the
// table keeps, in order (every index but a Merkle-format event's leaf
// hash, which is its row's hash column). A commit writes its new tree
// hashes as one row, not one row a hash: a row a hash cost a heap tuple
// and an index entry, about 160 bytes of WAL, for every 32-byte hash.
// Rows written one hash each (before schema version 14) read the same.

// maxHashesPerRow bounds a row: 60 hashes are 1,920 bytes, which keeps a
// row under PostgreSQL's TOAST threshold (about 2 kB), in its table page.
const maxHashesPerRow = 60

// inTreeTable reports whether tree_hashes keeps the stored hash id.
func (m storeMeta) inTreeTable(id int64) bool {
	level, n := tlog.SplitStoredHashIndex(id)
	return level != 0 || !m.merkleFormat(n+1)
}

// nextInTreeTable is the first index after id that tree_hashes keeps.
func (m storeMeta) nextInTreeTable(id int64) int64 {
	for id++; !m.inTreeTable(id); id++ {
	}
	return id
}

// packTreeRows groups ids (ascending, each kept by the table) and their
// hashes into rows: a row continues while the next id is the next one the
// table keeps, up to maxHashesPerRow.
func packTreeRows(m storeMeta, ids []int64, hashes [][]byte) (rowIDs []int64, rows [][]byte) {
	for i, id := range ids {
		last := len(rows) - 1
		if last < 0 || len(rows[last]) >= maxHashesPerRow*tlog.HashSize || m.nextInTreeTable(ids[i-1]) != id {
			rowIDs = append(rowIDs, id)
			rows = append(rows, make([]byte, 0, min(len(ids)-i, maxHashesPerRow)*tlog.HashSize))
			last++
		}
		rows[last] = append(rows[last], hashes[i]...)
	}
	return rowIDs, rows
}

// treeRow is a stored row of tree_hashes.
type treeRow struct {
	first  int64
	hashes []byte
}

// maxTreeIndex bounds the indexes a row may claim: tlog's index arithmetic
// assumes non-negative indexes far from overflowing, and a row's id is
// whatever the database holds.
const maxTreeIndex = 1 << 60

// ids lists the indexes the row holds, in order. A row that is not whole
// hashes, starts at an index the table does not keep, or claims indexes
// out of range is malformed.
func (r treeRow) ids(m storeMeta) ([]int64, bool) {
	n := len(r.hashes) / tlog.HashSize
	if n == 0 || len(r.hashes)%tlog.HashSize != 0 || r.first < 0 || r.first > maxTreeIndex-3*int64(n) || !m.inTreeTable(r.first) {
		return nil, false
	}
	out := make([]int64, n)
	id := r.first
	for i := range out {
		out[i] = id
		id = m.nextInTreeTable(id)
	}
	return out, true
}

// hashAt returns the row's hash of index id, if it holds it.
func (r treeRow) hashAt(m storeMeta, id int64) ([]byte, bool) {
	ids, ok := r.ids(m)
	if !ok {
		return nil, false
	}
	i := sort.Search(len(ids), func(i int) bool { return ids[i] >= id })
	if i == len(ids) || ids[i] != id {
		return nil, false
	}
	return r.hashes[i*tlog.HashSize : (i+1)*tlog.HashSize], true
}

// readTreeRows reads, for each index, the row that may hold it: the row
// with the greatest first index at or below it. The result is sorted by
// first index, without repeats.
func readTreeRows(ctx context.Context, q queryer, d dialect, ids []int64) ([]treeRow, error) {
	seen := map[int64]bool{}
	var out []treeRow
	for start := 0; start < len(ids); start += maxHashesPerRead {
		part := ids[start:min(start+maxHashesPerRead, len(ids))]
		var b strings.Builder
		b.WriteString(`SELECT id, hash FROM tree_hashes WHERE id IN (`)
		args := make([]any, len(part))
		for i, id := range part {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`(SELECT MAX(id) FROM tree_hashes WHERE id <= ?)`)
			args[i] = id
		}
		b.WriteByte(')')
		rows, err := q.QueryContext(ctx, d.rebind(b.String()), args...)
		if err != nil {
			return nil, storageErr("read tree hashes", err)
		}
		for rows.Next() {
			var r treeRow
			if err := rows.Scan(&r.first, &r.hashes); err != nil {
				rows.Close()
				return nil, storageErr("read tree hashes", err)
			}
			if !seen[r.first] {
				seen[r.first] = true
				out = append(out, r)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, storageErr("read tree hashes", err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out, nil
}

// lookupTreeHash finds index id in rows (sorted by first index).
func lookupTreeHash(m storeMeta, rows []treeRow, id int64) ([]byte, bool) {
	i := sort.Search(len(rows), func(i int) bool { return rows[i].first > id }) - 1
	if i < 0 {
		return nil, false
	}
	return rows[i].hashAt(m, id)
}

// treeEnd is one past the last index tree_hashes holds (0 when empty), or
// -1 when its last row is malformed.
func treeEnd(ctx context.Context, q queryer, m storeMeta) (int64, error) {
	var r treeRow
	err := q.QueryRowContext(ctx, `SELECT id, hash FROM tree_hashes WHERE id = (SELECT MAX(id) FROM tree_hashes)`).Scan(&r.first, &r.hashes)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, storageErr("read the Merkle tree's end", err)
	}
	ids, ok := r.ids(m)
	if !ok {
		return -1, nil
	}
	return ids[len(ids)-1] + 1, nil
}
