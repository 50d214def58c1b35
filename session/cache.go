package session

import (
	"container/list"
	"sync"
)

// DefaultChunkCacheBytes bounds the chunks a Manager keeps for sessions it
// has read or written (see WithChunkCache).
const DefaultChunkCacheBytes = 64 << 20

// chunkCache keeps, per session, the chunk log of its latest handle this
// process read or wrote, least recently used first out when the chunks
// held pass a byte budget. A cached view is never stale: the first n
// chunks of a session never change once stored, so the state of a session
// at any seq, and its latest state, cost a lookup once it was read here;
// only chunks stored since (by another process) are read from the store.
type chunkCache struct {
	mu    sync.Mutex
	epoch uint64 // the store's key epoch the chunks were read at
	max   int64
	bytes int64
	lru   *list.List // of *cached, most recently used at the front
	byID  map[string]*list.Element
}

type cached struct {
	id    string
	log   *chunkLog
	n     int
	bytes int64
}

func newChunkCache(max int64) *chunkCache {
	if max <= 0 {
		return nil
	}
	return &chunkCache{max: max, lru: list.New(), byID: map[string]*list.Element{}}
}

// sync drops every cached session when the store's key epoch moved on
// from the one they were read at: an erasure may have made some of their
// chunks unreadable, and the cache does not know whose they are.
func (c *chunkCache) sync(epoch uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch == c.epoch {
		return
	}
	c.epoch = epoch
	c.lru.Init()
	clear(c.byID)
	c.bytes = 0
}

// get returns the cached log of session id and how many of its entries are
// the session's.
func (c *chunkCache) get(id string) (*chunkLog, int, bool) {
	if c == nil {
		return nil, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[id]
	if !ok {
		return nil, 0, false
	}
	c.lru.MoveToFront(el)
	e := el.Value.(*cached)
	return e.log, e.n, true
}

// extended records that a handle whose chunks were the cached view (prev,
// prevN) of session id wrote more: the session's chunks are now the first
// n entries of log. Only views read from the store enter the cache, so a
// handle built from a caller's chunks (which the store may have redacted)
// never does.
func (c *chunkCache) extended(id string, prev *chunkLog, prevN int, log *chunkLog, n int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	el, ok := c.byID[id]
	same := ok && el.Value.(*cached).log == prev && el.Value.(*cached).n == prevN
	epoch := c.epoch
	c.mu.Unlock()
	if same {
		c.put(epoch, id, log, n)
	}
}

// put records that the first n entries of log are session id's chunks, as
// read from the store at key epoch. A shorter view than the cached one is
// ignored (an older handle), and so is one read at an epoch the cache
// has left: an erasure since may have made it unreadable.
func (c *chunkCache) put(epoch uint64, id string, log *chunkLog, n int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return
	}
	if el, ok := c.byID[id]; ok {
		e := el.Value.(*cached)
		if n < e.n {
			return
		}
		// The first e.n entries are the same chunks in either log.
		add := entriesBytes(log.view(n)[e.n:])
		e.log, e.n, e.bytes = log, n, e.bytes+add
		c.bytes += add
		c.lru.MoveToFront(el)
	} else {
		e := &cached{id: id, log: log, n: n, bytes: entriesBytes(log.view(n))}
		c.byID[id] = c.lru.PushFront(e)
		c.bytes += e.bytes
	}
	// Evict from the back, never the entry just put.
	for c.bytes > c.max && c.lru.Len() > 1 {
		el := c.lru.Back()
		e := el.Value.(*cached)
		c.lru.Remove(el)
		delete(c.byID, e.id)
		c.bytes -= e.bytes
	}
}

// entriesBytes estimates the memory entries hold: their text and a fixed
// overhead per entry.
func entriesBytes(es []entry) int64 {
	var n int64
	for i := range es {
		c := &es[i].chunk
		n += 160 + int64(len(c.Content)+len(c.Name)+len(c.ToolCallID)+len(c.Author)+len(es[i].home))
		for _, tc := range c.ToolCalls {
			n += 48 + int64(len(tc.ID)+len(tc.Name)+len(tc.Arguments))
		}
		for k, v := range c.Meta {
			n += 32 + int64(len(k)+len(v))
		}
	}
	return n
}
