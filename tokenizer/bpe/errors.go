package bpe

import "errors"

// Sentinel errors; functions wrap them with %w and add detail. Malformed
// vocabulary data wraps tokenizer.ErrFormat, and text that is not UTF-8
// tokenizer.ErrInvalidUTF8.
var (
	// ErrUnknownPreTokenizer is returned for a pre-tokenizer name, or a
	// tokenizer.json pre_tokenizer, that this package has no splitter for.
	ErrUnknownPreTokenizer = errors.New("bpe: unknown pre-tokenizer")
	// ErrUnsupported is returned for a tokenizer.json that is not a
	// byte-level BPE tokenizer this package can reproduce (another model
	// type, a normalizer, byte fallback, ...).
	ErrUnsupported = errors.New("bpe: unsupported tokenizer")
)
