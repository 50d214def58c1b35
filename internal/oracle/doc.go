// Package oracle is the protocol between package flow and package replay:
// while a run is replayed, resumed or forked, flow asks the Oracle that
// replay installed in the context (With) to answer each model call, tool
// call, memory recall, memory commit and side effect from the record, or
// to let it go live. It is internal: only flow and replay speak it, so it
// can change with them.
package oracle
