package scripted

import "errors"

// ErrCassette is matched by the errors of Load and Parse: the file cannot
// be read or is not a valid cassette. Errors of calls are *model.Error
// values of kind KindScript (or of the kind an entry simulates).
var ErrCassette = errors.New("scripted: invalid cassette")
