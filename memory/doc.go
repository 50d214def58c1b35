// Package memory owns rath's long-term memory: the [Memory] interface and
// [Local], the memory kept in the event log with a BM25 index beside it.
//
// # Model
//
// A memory is a short text with optional metadata, stored in a namespace:
// [UserNamespace] ("user/<name>"), [AgentNamespace] ("agent/<path>"),
// [SessionNamespace] ("session/<id>"), [ResourcesNamespace], or any other
// name. Memories are remembered, recalled by a text query, committed in bulk
// from a session, forgotten and listed.
//
// # Local memory
//
// Every write is an event in the same log as the sessions, on the stream
// events.MemoryStream(namespace): memory.remembered, memory.forgotten (a
// tombstone) and memory.committed. Ids are derived from the namespace and
// the event's stream version ([DeriveID]), never random.
//
// The search index is a projection of those events: an on-disk bleve
// (scorch) index scored with BM25, at the directory given to [OpenLocal]
// (the runtime uses <rath dir>/memory.bleve). Writes return once their event
// is durable; one background goroutine follows the log and indexes in
// batches, storing its checkpoint inside the index in the same batch as the
// documents. On open the index catches up from that checkpoint; a missing or
// damaged index is rebuilt from the log with a warning; [Local.Rebuild]
// rebuilds on demand. Recall waits until the index has absorbed the log as
// it was when Recall was called, so a program always recalls what it
// remembered, and never returns a forgotten memory.
//
// Batches are handed to bleve with scorch's unsafe_batch: they become
// searchable at once and reach the disk shortly after. A crash loses the
// last batches together with their checkpoint, and the next open indexes
// them again; Close waits for them.
//
// Each namespace is its own corpus: its memories' terms are indexed with
// the namespace as a prefix, so a recall reads the postings of that
// namespace's memories only (not every namespace's, narrowed down), and a
// word's rarity is counted among them. The BM25 statistics (document
// count, mean document length, per namespace) are kept by Local and handed
// to bleve with every search, so an index caught up after a crash ranks
// exactly like a fresh rebuild; bleve's own statistics depend on how its
// segments happen to be merged. An index written by a build before
// namespaces had their own terms (format 1) is rebuilt from the log when
// opened.
//
// # One index, many processes
//
// bleve lets one process at a time open an index, so Local opens its
// index only for the calls that need it (Recall, Forget, Rebuild; writes
// never do) and lets go of it when unused: a call takes a lock file
// beside the index (dir + ".lock"), opens the index and catches it up from
// its checkpoint. A process waiting for the lock holds a shared lock on
// dir + ".want"; the holder checks it whenever its last call ends and
// every 25 ms while idle, and closes the index (indexer stopped, batches
// on disk, lock released) as soon as it is unused and wanted. Unwanted, it
// stays open for [LocalOptions.IdleClose] (five seconds by default), so
// one process's recalls do not pay for reopening. So the console, workers
// and CLI commands on one store take turns call by call, and an idle
// process holds the index only until someone asks. A waiter gives up
// after LockTimeout (five seconds by default, only reached when another
// process keeps the index busy, as a long rebuild does); the *LockedError
// names the holder's pid and command, which the holder writes into the
// lock file. With PostgreSQL each machine keeps its own index beside its
// rath directory, shared this way by that machine's processes, and
// caught up from its own checkpoint when opened.
//
// # Recording recalls
//
// [Memory.RecallFor] recalls for the agent working on a session and records a
// memory.recalled event with the hits on that session's stream, so a replay
// answers from the log even if the index changed since. [Memory.Recall]
// records nothing (the CLI uses it).
//
// # Options
//
// Commit archives user and assistant text by default; [WithExtractor] plugs
// in a model that writes short memos instead. Re-ranking of the BM25
// candidates by embedding similarity is off by default; set
// [LocalOptions.Embedder] (see package memory/openaiembed) to turn it on.
//
// # What it does not own
//
// The event types are declared in package events; sessions in package
// session. Package memory imports events and session, never flow; the flow
// layer plugs agents into it. Package memorytest holds the conformance suite
// every Memory implementation passes.
package memory
