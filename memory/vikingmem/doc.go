// Package vikingmem is the OpenViking memory backend: a memory.Memory
// kept by an OpenViking server (package memory/openviking is its HTTP
// client), with every operation recorded in rath's event log.
//
// A namespace is a directory of the configured user's space,
// viking://user/{user}/memories/rath/{escaped namespace}/ (or a viking://
// directory URI given as the namespace). Remember writes one file there
// and records memory.remembered with its URI, which is the memory's id;
// Forget deletes it and records memory.forgotten; List folds those
// events. Recall asks search/find under the directory; RecallFor records
// the hits (URIs, levels, scores, the text injected) as memory.recalled.
// Commit sends a session's messages to a server session and commits it;
// the memory.committed event records the messages' digest, the accepted
// task and archive, and what the task extracted if it finished while
// polled. A replay answers recalls from the log and rebuilds commits
// with ReplayCommit: it never calls the server.
//
// Server failures are *memory.BackendError values wrapping the client's
// typed errors; package flow records them and lets the agent go on.
package vikingmem
