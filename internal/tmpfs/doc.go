// Package tmpfs mounts small, size-limited file systems for tests that
// need a disk to fill up. Mounting needs root; a test that is not root
// skips, and one that is root fails if the mount fails.
//
// This package is for tests only; it imports nothing from rath.
package tmpfs
