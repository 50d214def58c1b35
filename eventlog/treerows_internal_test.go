package eventlog

import (
	"bytes"
	"testing"

	"golang.org/x/mod/sumdb/tlog"
)

// Packing the tree hashes of any run of leaves into rows and reading each
// index back through the rows gives every hash tlog stores, whatever the
// row bounds, for logs in the Merkle format from the start, from seq 6
// on (an older log's leaves kept at level 0), and not at all.
func TestTreeRows_PackAndLookUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta storeMeta
	}{
		{"merkle from the start", storeMeta{merkleFrom: 1}},
		{"merkle from seq 6", storeMeta{merkleFrom: 6}},
		{"chain only", storeMeta{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const leaves = 300
			all := map[int64][]byte{}
			var rows []treeRow
			// Commits of 1, 2, 3, ... leaves, as a writer makes them.
			for n, batch := int64(0), int64(1); n < leaves; n, batch = n+batch, batch%97+1 {
				var ids []int64
				var hashes [][]byte
				for l := n; l < min(n+batch, leaves); l++ {
					for id := tlog.StoredHashIndex(0, l); id < tlog.StoredHashCount(l+1); id++ {
						h := tlog.RecordHash([]byte{byte(id), byte(id >> 8)})
						all[id] = h[:]
						if tc.meta.inTreeTable(id) {
							ids, hashes = append(ids, id), append(hashes, h[:])
						}
					}
				}
				rowIDs, packed := packTreeRows(tc.meta, ids, hashes)
				for i := range rowIDs {
					if len(packed[i]) > maxHashesPerRow*tlog.HashSize {
						t.Fatalf("row of %d bytes", len(packed[i]))
					}
					rows = append(rows, treeRow{first: rowIDs[i], hashes: packed[i]})
				}
			}
			kept := 0
			for id, want := range all {
				got, ok := lookupTreeHash(tc.meta, rows, id)
				if !tc.meta.inTreeTable(id) {
					if ok {
						t.Fatalf("index %d, an event's own leaf hash, found in a row", id)
					}
					continue
				}
				kept++
				if !ok || !bytes.Equal(got, want) {
					t.Fatalf("index %d: %x, %v; want %x", id, got, ok, want)
				}
			}
			if len(rows) >= kept {
				t.Fatalf("%d rows for %d hashes: nothing packed", len(rows), kept)
			}
		})
	}
}

func TestTreeRows_MalformedRowsHoldNothing(t *testing.T) {
	m := storeMeta{merkleFrom: 1}
	id := tlog.StoredHashIndex(1, 0)
	for _, r := range []treeRow{
		{first: id, hashes: make([]byte, 31)},
		{first: id, hashes: nil},
		{first: tlog.StoredHashIndex(0, 3), hashes: make([]byte, 32)}, // an event's own leaf
		{first: -5, hashes: make([]byte, 32)},
		{first: 1<<62 + 1, hashes: make([]byte, 32)},
	} {
		if ids, ok := r.ids(m); ok {
			t.Errorf("row %d of %d bytes holds %v", r.first, len(r.hashes), ids)
		}
	}
}

// A tree_hashes row is whatever the database holds: no id or content
// makes reading it panic, and what it yields stays in range.
func FuzzTreeRow(f *testing.F) {
	f.Add(int64(1), make([]byte, 64), int64(1), int64(3))
	f.Add(int64(-5), make([]byte, 32), int64(0), int64(0))
	f.Add(int64(1<<62), make([]byte, 96), int64(6), int64(1<<62+2))
	f.Fuzz(func(t *testing.T, first int64, hashes []byte, merkleFrom, id int64) {
		m := storeMeta{merkleFrom: merkleFrom}
		r := treeRow{first: first, hashes: hashes}
		if ids, ok := r.ids(m); ok {
			if len(ids)*tlog.HashSize != len(hashes) || ids[0] != first {
				t.Fatalf("row %d of %d bytes holds %d ids from %d", first, len(hashes), len(ids), ids[0])
			}
		}
		if h, ok := lookupTreeHash(m, []treeRow{r}, id); ok && len(h) != tlog.HashSize {
			t.Fatalf("a hash of %d bytes", len(h))
		}
	})
}
