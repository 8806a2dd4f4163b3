package tokenizer

import "errors"

// Sentinel errors; functions wrap them with %w and add detail.
var (
	// ErrInvalidUTF8 is returned when text to encode is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("tokenizer: text is not valid UTF-8")
	// ErrTokenOutOfRange is returned when a token id is not in the vocabulary.
	ErrTokenOutOfRange = errors.New("tokenizer: token id out of range")
	// ErrFormat is returned when tokenizer data is malformed or truncated.
	ErrFormat = errors.New("tokenizer: malformed tokenizer data")
	// ErrTextTooLong is returned when text to encode is longer than a
	// tokenizer can index.
	ErrTextTooLong = errors.New("tokenizer: text too long")
	// ErrNoToken is returned when text holds a character that no token can
	// represent: the vocabulary has no byte-fallback tokens for it and no
	// unknown token.
	ErrNoToken = errors.New("tokenizer: no token for text")
)
