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
	// ErrShard means a model cannot be split as asked, or a shard is used in
	// a way its role does not allow (a follower asked to generate, a shard
	// without an Exchange).
	ErrShard = errors.New("engine: sharding")
	// ErrShardMismatch means the shards of a group are not the parts of one
	// model for one split and one context length.
	ErrShardMismatch = errors.New("engine: shards do not match")
	// ErrExchange means shards could not exchange activations: a message was
	// lost, a shard failed mid-step, or the shards fell out of step.
	ErrExchange = errors.New("engine: exchange between shards failed")
)
