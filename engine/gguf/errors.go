package gguf

import "errors"

// Sentinel errors; functions wrap them with %w and add detail (the key or
// tensor concerned and the byte offset in the file).
var (
	// ErrFormat is returned when a file breaks a rule of the format: bad
	// magic, a bool that is not 0 or 1, a duplicate key or tensor name, a bad
	// dimension, a misaligned or overlapping tensor, and so on.
	ErrFormat = errors.New("gguf: malformed file")
	// ErrTruncated is returned when a length, count or offset read from the
	// file needs more bytes than the file has left.
	ErrTruncated = errors.New("gguf: truncated file")
	// ErrNeedMore is returned by ParseHeader when the header goes on past
	// the bytes it was given: call it again with more of the file.
	ErrNeedMore = errors.New("gguf: the header continues past the bytes given")
	// ErrUnsupported is returned for a file this reader does not read: GGUF
	// v1, big-endian files, versions after 3, value or tensor types it does
	// not know.
	ErrUnsupported = errors.New("gguf: unsupported file")
	// ErrNotFound is returned by the typed getters when a key is missing.
	ErrNotFound = errors.New("gguf: key not found")
	// ErrType is returned by the typed getters when a value has the wrong
	// type or does not fit the requested one.
	ErrType = errors.New("gguf: wrong value type")
	// ErrInvalid is returned by the Builder for a value, key or tensor that
	// cannot be written.
	ErrInvalid = errors.New("gguf: invalid builder input")
)
