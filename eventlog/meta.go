package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
)

// Keys of store_meta rows.
const (
	// metaKeyFingerprint holds keyFingerprint of the chain's key.
	metaKeyFingerprint = "chain_key_fingerprint"
	// metaChainV2From holds the first seq hashed with hashFormat2. Stores
	// written before format 2 existed get it with their first write since.
	metaChainV2From = "chain_v2_from"
	// metaMerkleFrom holds the first seq written in the Merkle format
	// (merkle.go): the events before it are of the hash chain. Recorded
	// with the first write of a rath that has the Merkle log.
	metaMerkleFrom = "merkle_from"
	// metaMerkleHead holds the Merkle tree's head as of the last commit,
	// SIZE:ROOT (TreeHead.String), followed with an HMAC key by a space
	// and the hex HMAC-SHA256 of that text under the key (headMAC).
	metaMerkleHead = "merkle_head"
)

// queryer is a connection or a transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type storeMeta struct {
	fingerprint string // "" if not recorded
	v2From      int64  // 0 if not recorded
	merkleFrom  int64  // 0 if not recorded, -1 if not a seq
	merkleHead  string // "" if not recorded
}

func readMeta(ctx context.Context, q queryer) (storeMeta, error) {
	var m storeMeta
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM store_meta WHERE key IN ('`+metaKeyFingerprint+`', '`+metaChainV2From+`', '`+metaMerkleFrom+`', '`+metaMerkleHead+`')`)
	if err != nil {
		return m, storageErr("read store_meta", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return m, storageErr("read store_meta", err)
		}
		switch k {
		case metaKeyFingerprint:
			m.fingerprint = v
		case metaChainV2From:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				// Verify reports the same value as tampering.
				n = -1
			}
			m.v2From = n
		case metaMerkleFrom:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1 {
				n = -1
			}
			m.merkleFrom = n
		case metaMerkleHead:
			m.merkleHead = v
		}
	}
	if err := rows.Err(); err != nil {
		return m, storageErr("read store_meta", err)
	}
	return m, nil
}

// Reasons of a KeyError. They name RATH_HMAC_KEY, where the CLI reads the
// key from, and never the key.
const (
	reasonKeyMissing = "the hash chain is keyed with an HMAC key and none was given: set RATH_HMAC_KEY (Options.HMACKey) to the chain's key"
	reasonKeyWrong   = "the HMAC key given (RATH_HMAC_KEY, Options.HMACKey) is not the key the hash chain was written with"
	reasonKeyUnkeyed = "the hash chain has no HMAC key but one was given: unset RATH_HMAC_KEY (Options.HMACKey); a chain that has events cannot switch to a key"
)

// checkKey compares the store's key with the chain's, for a chain that
// has events. It returns a *KeyError (as the first value) on a mismatch;
// the second value is for I/O errors. A chain written before fingerprints
// were recorded is checked against its first event's hash instead.
func checkKey(ctx context.Context, q queryer, key []byte, m storeMeta) (error, error) {
	if m.fingerprint != "" {
		if m.fingerprint == keyFingerprint(key) {
			return nil, nil
		}
		switch {
		case m.fingerprint == fingerprintUnkeyed:
			return &KeyError{Reason: reasonKeyUnkeyed}, nil
		case len(key) == 0:
			return &KeyError{Reason: reasonKeyMissing}, nil
		}
		return &KeyError{Reason: reasonKeyWrong}, nil
	}
	var r row
	err := q.QueryRowContext(ctx, selectEvents+` ORDER BY seq LIMIT 1`).Scan(&r.Seq, &r.Stream, &r.Version, &r.Type, &r.TypeVersion, &r.RunID, &r.Payload, &r.At, &r.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	r.Hash = hashText(r.Hash)
	if err != nil {
		return nil, storageErr("read first event", err)
	}
	if firstHash(key, m, r) == r.Hash {
		return nil, nil
	}
	switch {
	case len(key) > 0 && firstHash(nil, m, r) == r.Hash:
		return &KeyError{Reason: reasonKeyUnkeyed}, nil
	case len(key) == 0:
		return &KeyError{Reason: reasonKeyMissing + " (or the first event was altered: run verify)"}, nil
	}
	return &KeyError{Reason: reasonKeyWrong + " (or the first event was altered: run verify)"}, nil
}

// firstHash is the hash the first event should have under key.
func firstHash(key []byte, m storeMeta, r row) string {
	format := hashFormat1
	if m.v2From > 0 && r.Seq >= m.v2From {
		format = hashFormat2
	}
	return newChainHasher(key).eventHash(format, "", r.Seq, r.Stream, r.Version, r.Type, r.TypeVersion, r.RunID.String, r.RunID.Valid, []byte(r.Payload), r.At)
}
