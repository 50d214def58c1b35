//go:build !unix

package memory

import "os"

// tryLock does nothing where flock is missing: bleve's own lock still
// keeps a second process out of an existing index, but not out of its
// creation.
func tryLock(*os.File) (bool, error) { return true, nil }

func tryShare(*os.File) (bool, error) { return true, nil }

func unlockFile(*os.File) {}
