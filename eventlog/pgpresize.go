package eventlog

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgx encodes a statement's arguments into one buffer that it shrinks
// back to 256 bytes before every statement, appending an array's elements
// one by one; left alone, a batch's arguments (about 0.8 KB an event,
// most of it payloads) grow it in a chain of copies that allocates about
// five times their size, garbage that costs the appending process CPU to
// collect. So the batch's first argument is presized: its encoding first
// grows the buffer by the size of all the arguments, once.

// presized is a statement argument whose encoding makes room for size
// bytes in pgx's buffer before it encodes value. Only a connection that
// registerPresized ran on can encode it. pgx keeps one plan per parameter
// type and Go type, so at a given parameter type value must always be of
// one Go type (pgBatchInsert presizes its first, a []string).
type presized struct {
	value any
	size  int
}

// registerPresized teaches conn's type map to encode presized arguments
// (stdlib.OptionAfterConnect on the writer's pool).
func registerPresized(_ context.Context, conn *pgx.Conn) error {
	presize(conn.TypeMap())
	return nil
}

// presize teaches m to encode presized arguments.
func presize(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapPresized}, m.TryWrapEncodePlanFuncs...)
}

// tryWrapPresized unwraps a presized argument for the plan of its value.
func tryWrapPresized(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if p, ok := value.(presized); ok {
		return &presizedPlan{}, p.value, true
	}
	return nil, nil, false
}

// presizedPlan grows the buffer, then encodes with the value's own plan.
type presizedPlan struct{ next pgtype.EncodePlan }

func (p *presizedPlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *presizedPlan) Encode(value any, buf []byte) ([]byte, error) {
	v := value.(presized)
	return p.next.Encode(v.value, slices.Grow(buf, v.size))
}

// Sizes of PostgreSQL's binary array format: a one-dimensional array's
// header, and each element's length word.
const (
	pgArrayHeader = 20
	pgElemLength  = 4
)

// argsSize is about the size of the batch's arguments in PostgreSQL's
// binary format (pgBatchInsert's order does not matter for it).
func (p *pgPending) argsSize() int {
	n := 14*pgArrayHeader + 8
	texts := func(ss []string) {
		for _, s := range ss {
			n += pgElemLength + len(s)
		}
	}
	bytes := func(bs [][]byte) {
		for _, b := range bs {
			n += pgElemLength + len(b)
		}
	}
	texts(p.blobHash)
	bytes(p.blobBytes)
	texts(p.stream)
	texts(p.typ)
	bytes(p.payload)
	bytes(p.salt)
	bytes(p.prefix)
	bytes(p.suffix)
	for _, r := range p.runID {
		n += pgElemLength
		if r != nil {
			n += len(*r)
		}
	}
	// blobSize, seq, version, at: bigint; typeVersion: int.
	n += (pgElemLength+8)*(len(p.blobSize)+3*len(p.seq)) + (pgElemLength+4)*len(p.typeVersion)
	return n
}
