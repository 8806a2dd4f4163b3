package sampling

import "errors"

// ErrInvalidParams is wrapped by every error that Validate and New return; the
// wrapping error names the offending field in snake_case (as the HTTP API and
// the CLI spell it) and the value it had.
var ErrInvalidParams = errors.New("sampling: invalid params")
