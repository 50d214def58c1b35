// Package stalekeys is a keyring whose cache has not seen an erasure yet,
// for tests of appends sealed under a key that another process destroys
// before they commit: it keeps every key it found until told to forget
// it, as a keyring trusts its cache for up to keyring.Freshness, and as
// any append holds its key between sealing its content and committing it.
package stalekeys
