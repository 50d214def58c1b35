package keyring

import "strings"

// The levels of a subject, the part before its colon.
const (
	// LevelUser is a person a run names (rath run --subject ID,
	// rath.WithSubject).
	LevelUser = "user"
	// LevelRun is a run's own content when it names no subject.
	LevelRun = "run"
	// LevelSession is content appended outside any run, such as a
	// session made before its run starts.
	LevelSession = "session"
	// LevelMemory is memory content written outside a run, by namespace.
	LevelMemory = "memory"
)

// MaxSubjectLen is the longest subject id, in bytes.
const MaxSubjectLen = 200

// Subject returns the subject "level:id", or a *SubjectError (ErrSubject)
// for an unknown level or an id that is empty, longer than MaxSubjectLen
// or not printable ASCII without spaces.
func Subject(level, id string) (string, error) {
	s := level + ":" + id
	if err := ValidSubject(s); err != nil {
		return "", err
	}
	return s, nil
}

// ValidSubject checks a whole subject, "level:id"; its errors are
// *SubjectError (ErrSubject).
func ValidSubject(s string) error {
	level, id, ok := strings.Cut(s, ":")
	if !ok {
		return &SubjectError{Subject: s, Reason: "want level:id (user:, run:, session: or memory:)"}
	}
	switch level {
	case LevelUser, LevelRun, LevelSession, LevelMemory:
	default:
		return &SubjectError{Subject: s, Reason: "unknown level " + level + " (want user, run, session or memory)"}
	}
	return ValidSubjectID(id)
}

// ValidSubjectID checks the id part of a subject, as rath run --subject
// takes it.
func ValidSubjectID(id string) error {
	switch {
	case id == "":
		return &SubjectError{Subject: id, Reason: "empty id"}
	case len(id) > MaxSubjectLen:
		return &SubjectError{Subject: id[:32] + "…", Reason: "longer than 200 bytes"}
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return &SubjectError{Subject: printable(id), Reason: "only printable ASCII without spaces"}
		}
	}
	return nil
}

// printable replaces what ValidSubjectID refuses with '?', so an error
// never carries control bytes to a terminal.
func printable(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c <= ' ' || c > '~' {
			b[i] = '?'
		}
	}
	if len(b) > 64 {
		b = append(b[:64], "..."...)
	}
	return string(b)
}
