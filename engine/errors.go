package engine

import "errors"

// Sentinel errors; functions wrap them with %w and say what was wrong.
var (
	// ErrFormat means model bytes are malformed, truncated or inconsistent.
	ErrFormat = errors.New("engine: malformed model")
	// ErrUnsupported means a model uses something this engine cannot run.
	ErrUnsupported = errors.New("engine: unsupported model")
	// ErrTokenizerMismatch means a tokenizer does not fit the model it was given with.
	ErrTokenizerMismatch = errors.New("engine: tokenizer does not match the model")
	// ErrPromptTooLong means a prompt does not fit in the context window.
	ErrPromptTooLong = errors.New("engine: prompt too long")
	// ErrInvalidOption means a generation or session option is out of range.
	ErrInvalidOption = errors.New("engine: invalid option")
	// ErrBusy is returned when a session is asked to generate while it already is.
	ErrBusy = errors.New("engine: session is busy with another generation")
	// ErrEmptyPrompt means there is nothing to condition on: an empty prompt
	// and a vocabulary without a BOS token.
	ErrEmptyPrompt = errors.New("engine: empty prompt")
)
