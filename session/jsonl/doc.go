// Package jsonl owns rath's session import and export in the JSON Lines
// record format of OpenRath v1, so sessions move between the Python
// OpenRath and rath in both directions.
//
// # Format
//
// A file holds one session, one JSON object per line. Each object has a
// record_type:
//
//	{"record_type":"header","id":"s1","parent_session_ids":["s0"],"lineage_kind":"fork","sandbox_backend":"local","sandbox_spec":"./work"}
//	{"record_type":"chunk","index":0,"kind":"user","payload":{"content":"hi"}}
//	{"record_type":"chunk","index":1,"kind":"assistant","payload":{"content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}}
//	{"record_type":"chunk","index":2,"kind":"tool_result","payload":{"tool_call_id":"c1","name":"ls","content":"a.txt"}}
//	{"record_type":"trailer","final_chunk_count":3,"cumulative_usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}
//
// The header comes first and once. Chunk indexes run from 0 without gaps.
// Kinds are system, user, assistant and tool_result; they map to the chunk
// roles of the same names. The trailer, written when the session was
// closed cleanly, must agree with the number of chunks. A file without a
// trailer (its writer crashed) is imported with the chunks it has and
// marked incomplete. Unknown fields are ignored, so files from newer
// writers still load; known fields must have the right JSON type.
//
// # Rath extras
//
// [Export] writes the same records, so OpenRath reads them, plus fields
// OpenRath ignores: in the header "format":"rath-export", "version" (the
// export format version, [FormatVersion]), "source" (the session a
// detached or derived session came from, if any), "origin",
// "session_version" and "incomplete"; in a chunk payload a "rath" object
// carrying the author, the meta map and the role when it is not the kind
// (summary and memory chunks are written as kind system, which is what an
// OpenRath reader should send to a model). [Import] reads them back, so an
// export imported into another store gives identical chunks.
//
// # Import guarantees
//
// Each file is imported in one atomic append: an events.SessionImported on
// the session's stream followed by one events.ChunkAppended per chunk. A
// malformed file yields a [*ParseError] naming the file and line, and
// nothing of it is written. Declared parents become graph edges only when
// the parent session is already in the store; all of them are kept in
// SessionImported.DeclaredParents. Files given together are imported
// parents first, whatever the argument order. A session id already in the
// store fails with a [*ExistsError] and the file is skipped; the other
// files are still imported.
//
// Import reads the headers of all files first, since the import order
// depends on them, then reads and writes one file at a time: memory holds
// one session, and no line longer than Options.MaxLineBytes (a longer one
// fails its file with a *ParseError matching [ErrLineTooLong]).
//
// # Placements
//
// A file's sandbox_backend and sandbox_spec say where its tools ran on the
// machine that wrote it. They are not trusted to say where they run here:
// by default the session is imported without a placement, and the
// declared one is kept as provenance (SessionImported.DeclaredPlacement,
// [FileReport]). [Options].Placement accepts the ones a policy allows;
// [UnderRoots] allows local and bwrap workspaces inside given directories.
//
// # Concurrency
//
// Import and Export may be called concurrently; each file's write is one
// transaction of the events store, and a session created by someone else
// between the existence check and the write still fails with an
// [*ExistsError], never a duplicate.
//
// This package imports events, projections and session; nothing imports it
// but the CLI.
package jsonl
