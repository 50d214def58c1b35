package eventlog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// pgBatchInsertOIDs are the types of pgBatchInsert's parameters, in
// order, as the server describes them.
var pgBatchInsertOIDs = []uint32{
	pgtype.TextArrayOID, pgtype.Int8ArrayOID, // blob hashes, sizes
	pgtype.Int8ArrayOID, pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.TextArrayOID, pgtype.Int4ArrayOID, pgtype.TextArrayOID, pgtype.Int8ArrayOID, // seq .. at
	pgtype.ByteaArrayOID, pgtype.ByteaArrayOID, pgtype.ByteaArrayOID, // salt, prefix, suffix
	pgtype.Int8OID,                            // the count
	pgtype.ByteaArrayOID, pgtype.TextArrayOID, // blob bytes, payloads
}

// encodeArgs encodes args as pgx's query builder does: one after the
// other into one buffer, in binary, from a buffer of 256 bytes. It
// returns the encodings and how many times the buffer was reallocated
// after the first argument.
func encodeArgs(t *testing.T, m *pgtype.Map, args []any) (encoded [][]byte, grown int) {
	t.Helper()
	if len(args) != len(pgBatchInsertOIDs) {
		t.Fatalf("%d arguments for %d parameters", len(args), len(pgBatchInsertOIDs))
	}
	buf := make([]byte, 0, 256)
	for i, a := range args {
		c := cap(buf)
		pos := len(buf)
		var err error
		if buf, err = m.Encode(pgBatchInsertOIDs[i], pgtype.BinaryFormatCode, a, buf); err != nil {
			t.Fatalf("argument %d: %v", i+1, err)
		}
		if i > 0 && cap(buf) != c {
			grown++
		}
		encoded = append(encoded, bytes.Clone(buf[pos:]))
	}
	return encoded, grown
}

// pendingBatch is a batch of n events (and a blob) as the writer queues
// them.
func pendingBatch(n int) *pgPending {
	p := &pgPending{}
	p.addBlob(strings.Repeat("ab", 32), bytes.Repeat([]byte("blob "), 400))
	for i := range n {
		run := ""
		if i%2 == 0 {
			run = "run-1"
		}
		payload := fmt.Sprintf(`{"session":"s-%d","index":%d,"chunk":{"content":%q}}`, i, i, strings.Repeat("word ", 20+i))
		p.addEvent(int64(i+1), fmt.Sprintf("s-%d", i), int64(i+1), "chunk.appended", 1, run, []byte(payload), 1e18,
			bytes.Repeat([]byte{7}, 16), []byte("prefix line "), []byte(" suffix of the line"))
	}
	return p
}

// The first argument makes room for all of them: encoding the rest
// reallocates nothing, and each encodes as it does without the wrapper.
func TestBatchArgs_PresizedEncodeAsPlainAndGrowOnce(t *testing.T) {
	for _, n := range []int{0, 1, 15, 200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p := pendingBatch(n)
			m := pgtype.NewMap()
			presize(m)
			got, grown := encodeArgs(t, m, p.batchArgs())
			if grown != 0 {
				t.Errorf("the buffer was reallocated %d times after the first argument (argsSize %d is short)", grown, p.argsSize())
			}
			plain := p.batchArgs()
			plain[0] = plain[0].(presized).value
			want, _ := encodeArgs(t, pgtype.NewMap(), plain)
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("argument %d encodes differently presized", i+1)
				}
			}
		})
	}
}

// Without the wrapper registered, a presized argument is an error, not
// a value sent some other way.
func TestPresized_UnregisteredIsAnError(t *testing.T) {
	_, err := pgtype.NewMap().Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, presized{value: []string{"a"}, size: 10}, nil)
	if err == nil {
		t.Fatal("a presized argument encoded on a map that does not know it")
	}
}
