package tensor

import "errors"

// Sentinel errors; functions wrap them with %w and add detail.
var (
	// ErrUnknownType is returned for a type id that ggml does not define.
	ErrUnknownType = errors.New("tensor: unknown type")
	// ErrUnsupportedType is returned for a storage type this package cannot compute with.
	ErrUnsupportedType = errors.New("tensor: unsupported type")
	// ErrShape is returned when a matrix's size does not match its data or its block size.
	ErrShape = errors.New("tensor: bad shape")
)
