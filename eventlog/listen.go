package eventlog

// The PostgreSQL listener (a connection of its own, in LISTEN) starts
// with the first Notify, not at Open: a process that only appends, such
// as "rath submit", never subscribes and need not pay for it. Starting
// late loses nothing: every connect of the listener wakes the waiters,
// who re-read from their own position.

// startListening starts the listener once, if the store has one.
func (s *Store) startListening() {
	if s.listenDone == nil {
		return
	}
	s.listenOnce.Do(func() { go s.listen(s.listenCfg) })
}

// stopListening waits for a started listener to stop (s.stop is closed),
// and keeps one from starting later.
func (s *Store) stopListening() {
	if s.listenDone == nil {
		return
	}
	s.listenOnce.Do(func() { close(s.listenDone) })
	<-s.listenDone
}
