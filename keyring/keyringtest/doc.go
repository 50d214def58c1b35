// Package keyringtest makes key-encryption keys for tests, the way an
// operator does: `rath keys kek --out FILE` writes one, and the store
// loads it from the file.
package keyringtest
