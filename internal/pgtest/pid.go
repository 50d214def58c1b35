package pgtest

// PID is the postmaster's process id (0 before Start): a benchmark reads
// the CPU of the server and its backends from /proc through it.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}
