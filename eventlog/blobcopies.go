package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/gorath/rath/keyring"
)

// Copies of a blob (seal.go): one row in clear under the bare address,
// or one sealed row per subject under the address and the subject's key
// id. The rows of an address are one range of the primary key, which
// sorts bytewise on both databases (migration 00026): an address is 64
// hex digits and a key is an address alone or followed by "." and a key
// id, so the keys from the address up to the address followed by "/"
// (the byte after ".", and before every hex digit) are its copies and
// no other's. An index of addresses would cost every blob stored an
// index entry and its WAL.

// blobCopy is one row of a blob address.
type blobCopy struct {
	key   string
	bytes []byte
}

// addressRange selects the rows of one address; its arguments are
// addressBounds.
const addressRange = `hash >= ? AND hash < ?`

// addressBounds are the bounds of addr's range of keys, as arguments.
func addressBounds(addr string) []any { return []any{addr, addr + "/"} }

// The statements that read and delete an address's copies.
const (
	copiesOfAddress       = `SELECT hash, bytes FROM blobs WHERE ` + addressRange + ` ORDER BY hash`
	anyCopyOfAddress      = `SELECT 1 FROM blobs WHERE ` + addressRange + ` LIMIT 1`
	deleteCopiesOfAddress = `DELETE FROM blobs WHERE ` + addressRange + ` RETURNING size`
)

// copiesOfAddresses reads the copies of n addresses (2n arguments, each
// address's bounds): a join, which both databases answer with a range
// scan of the primary key an address.
func copiesOfAddresses(n int) string {
	return `WITH wanted (lo, hi) AS (VALUES (?, ?)` + strings.Repeat(", (?, ?)", n-1) + `)
		SELECT b.hash, b.bytes FROM wanted JOIN blobs b ON b.hash >= wanted.lo AND b.hash < wanted.hi ORDER BY b.hash`
}

// blobCopies reads every row stored for addr, the clear one first.
func (s *Store) blobCopies(ctx context.Context, q queryer, addr string) ([]blobCopy, error) {
	rows, err := q.QueryContext(ctx, s.rebind(copiesOfAddress), addressBounds(addr)...)
	if err != nil {
		return nil, storageErr("read blob", err)
	}
	defer rows.Close()
	var out []blobCopy
	for rows.Next() {
		var c blobCopy
		if err := rows.Scan(&c.key, &c.bytes); err != nil {
			return nil, storageErr("read blob", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, storageErr("read blob", err)
	}
	return out, nil
}

// openCopies returns the plaintext of the first copy of addr that opens:
// one in clear, or one sealed under a key that exists. With none, the
// error of the first that did not (keyring.ErrErased when every subject
// holding it was erased), or ErrBlobNotFound when there is no copy.
func (s *Store) openCopies(ctx context.Context, addr string, copies []blobCopy) ([]byte, error) {
	var first error
	for _, c := range copies {
		pt, err := s.openBlob(ctx, addr, c.bytes)
		if err == nil {
			return pt, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		return nil, fmt.Errorf("%w: %s", ErrBlobNotFound, addr)
	}
	return nil, first
}

// HasBlob reports whether any copy of the blob at addr is stored.
func (s *Store) HasBlob(ctx context.Context, addr string) (bool, error) {
	var one int
	err := s.rdb.QueryRowContext(ctx, s.rebind(anyCopyOfAddress), addressBounds(addr)...).Scan(&one)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return false, storageErr("read blob", err)
}

// GetBlob returns the bytes stored under hash, or ErrBlobNotFound; a
// blob every holder of which was erased is keyring.ErrErased.
func (s *Store) GetBlob(ctx context.Context, hash string) ([]byte, error) {
	copies, err := s.blobCopies(ctx, s.rdb, hash)
	if err != nil {
		return nil, fmt.Errorf("eventlog: get blob: %w", err)
	}
	return s.openCopies(ctx, hash, copies)
}

// GetBlobs returns the blobs stored under hashes, in one query per 500;
// missing hashes, and those whose every holder was erased, are absent
// from the map.
func (s *Store) GetBlobs(ctx context.Context, hashes []string) (map[string][]byte, error) {
	found := make(map[string][]blobCopy, len(hashes))
	for len(hashes) > 0 {
		n := min(len(hashes), 500)
		args := make([]any, 0, 2*n)
		for _, h := range hashes[:n] {
			args = append(args, addressBounds(h)...)
		}
		rows, err := s.rdb.QueryContext(ctx, s.rebind(copiesOfAddresses(n)), args...)
		if err != nil {
			return nil, fmt.Errorf("eventlog: get blobs: %w", err)
		}
		for rows.Next() {
			var c blobCopy
			if err := rows.Scan(&c.key, &c.bytes); err != nil {
				rows.Close()
				return nil, fmt.Errorf("eventlog: get blobs: %w", err)
			}
			addr := blobAddress(c.key)
			found[addr] = append(found[addr], c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("eventlog: get blobs: %w", err)
		}
		hashes = hashes[n:]
	}
	// Opened once the cursor is closed: opening may read a key.
	out := make(map[string][]byte, len(found))
	for h, copies := range found {
		pt, err := s.openCopies(ctx, h, copies)
		switch {
		case errors.Is(err, keyring.ErrErased):
			// its subjects': gone, as an erased blob is
		case err != nil:
			return nil, err
		default:
			out[h] = pt
		}
	}
	return out, nil
}

// deleteCopies deletes every row of addr in tx, and says how many and
// their stored size. Nothing stored under addr (a hex string in a
// payload that names no blob) is no error.
func (s *Store) deleteCopies(ctx context.Context, tx *sql.Tx, addr string) (n int64, size int64, err error) {
	rows, err := tx.QueryContext(ctx, s.rebind(deleteCopiesOfAddress), addressBounds(addr)...)
	if err != nil {
		return 0, 0, storageErr("redact: delete a blob", err)
	}
	defer rows.Close()
	for rows.Next() {
		var one int64
		if err := rows.Scan(&one); err != nil {
			return 0, 0, storageErr("redact: delete a blob", err)
		}
		n++
		size += one
	}
	if err := rows.Err(); err != nil {
		return 0, 0, storageErr("redact: delete a blob", err)
	}
	return n, size, nil
}
