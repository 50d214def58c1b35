package bundle

// The verifier's module files, for the test that keeps them pinned to
// rath's own golang.org/x/mod.
var VerifierGoMod, VerifierGoSum = verifierGoMod, verifierGoSum
