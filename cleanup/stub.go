package cleanup

import "errors"

// errNotModelled is what a stub model returns. NOT DONE: removed when every
// model is in.
var errNotModelled = errors.New("not modelled yet")
