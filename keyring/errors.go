package keyring

import (
	"errors"
	"fmt"
)

var (
	// ErrErased is matched by an *ErasedError: the subject's key was
	// erased (or never made), so what was sealed under it cannot be
	// opened.
	ErrErased = errors.New("keyring: the subject's key was erased")
	// ErrKEK is matched by a *KEKError: the key-encryption key is
	// missing, unreadable, malformed or not the one the store's keys
	// were wrapped with.
	ErrKEK = errors.New("keyring: key-encryption key")
	// ErrSubject is matched by a *SubjectError: a subject or subject id
	// that is not valid.
	ErrSubject = errors.New("keyring: invalid subject")
	// ErrSealed is matched by a *SealedError: a sealed payload that is
	// malformed or does not open under its key (tampered, or moved to
	// another event).
	ErrSealed = errors.New("keyring: sealed content does not open")
)

// ErasedError says that Subject's key is gone.
type ErasedError struct {
	Subject string
}

func (e *ErasedError) Error() string {
	return fmt.Sprintf("keyring: the key of subject %q was erased", e.Subject)
}

// Is makes errors.Is(err, ErrErased) true.
func (e *ErasedError) Is(target error) bool { return target == ErrErased }

// KEKError says what is wrong with a key-encryption key. Path is the
// key file's, when there is one; Hint tells the operator what to do.
type KEKError struct {
	Path   string
	Reason string
	Hint   string
	Err    error
}

func (e *KEKError) Error() string {
	msg := "keyring: key-encryption key"
	if e.Path != "" {
		msg += " " + e.Path
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrKEK) true.
func (e *KEKError) Is(target error) bool { return target == ErrKEK }

func (e *KEKError) Unwrap() error { return e.Err }

// SubjectError names an invalid subject and why.
type SubjectError struct {
	Subject string
	Reason  string
}

func (e *SubjectError) Error() string {
	return fmt.Sprintf("keyring: subject %q: %s", e.Subject, e.Reason)
}

// Is makes errors.Is(err, ErrSubject) true.
func (e *SubjectError) Is(target error) bool { return target == ErrSubject }

// SealedError says why sealed content does not open.
type SealedError struct {
	Subject string
	Reason  string
}

func (e *SealedError) Error() string {
	if e.Subject == "" {
		return "keyring: sealed content: " + e.Reason
	}
	return fmt.Sprintf("keyring: sealed content of subject %q: %s", e.Subject, e.Reason)
}

// Is makes errors.Is(err, ErrSealed) true.
func (e *SealedError) Is(target error) bool { return target == ErrSealed }
