package sampling

import "errors"

// ErrInvalidParams matches every error that Validate and New return: a
// *ParamError, which names the offending field in snake_case (as the HTTP
// API and the CLI spell it) and says what is wrong with its value.
var ErrInvalidParams = errors.New("sampling: invalid params")
