package vocab

import "errors"

// Sentinel errors; functions wrap them with %w and add detail. Errors of the
// tokenizer constructors (tokenizer.ErrFormat, bpe.ErrUnknownPreTokenizer)
// and of the GGUF getters (gguf.ErrNotFound, gguf.ErrType) are wrapped as
// they are.
var (
	// ErrUnsupportedModel is returned for a tokenizer.ggml.model this
	// package has no tokenizer for (t5, rwkv, none, ...).
	ErrUnsupportedModel = errors.New("vocab: unsupported tokenizer model")
	// ErrFormat is returned when the vocabulary keys disagree (array lengths).
	ErrFormat = errors.New("vocab: malformed vocabulary")
)
