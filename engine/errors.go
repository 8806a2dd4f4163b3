package engine

import "fmt"

// Sentinel errors; functions wrap them with %w and say what was wrong.
var (
	// ErrFormat means model bytes are malformed, truncated or inconsistent.
	ErrFormat = NewError(CodeInvalidModel, "engine: malformed model")
	// ErrUnsupported means a model uses something this engine cannot run.
	ErrUnsupported = NewError(CodeUnsupportedModel, "engine: unsupported model")
	// ErrTokenizerMismatch means a tokenizer does not fit the model it was given with.
	ErrTokenizerMismatch = NewError(CodeInvalidModel, "engine: tokenizer does not match the model")
	// ErrPromptTooLong means a prompt does not fit in the context window.
	ErrPromptTooLong = NewError(CodePromptTooLong, "engine: prompt too long")
	// ErrInvalidOption means a generation or session option is out of range;
	// the error is an *OptionError, which names the option.
	ErrInvalidOption = NewError(CodeInvalidArgument, "engine: invalid option")
	// ErrBusy is returned when a session is asked to generate while it already is.
	ErrBusy = NewError(CodeBusy, "engine: session is busy with another generation")
	// ErrEmptyPrompt means there is nothing to condition on: an empty prompt
	// and a vocabulary without a BOS token.
	ErrEmptyPrompt = NewError(CodeInvalidArgument, "engine: empty prompt")
	// ErrGrammar stops a grammar-constrained generation midway: the
	// vocabulary cannot write a character the grammar requires
	// (grammar.ErrDeadEnd), or the grammar outgrew the matcher's limits
	// (grammar.ErrTooComplex). The grammar is what the request asked for, so
	// the code is invalid_argument.
	ErrGrammar = NewError(CodeInvalidArgument, "engine: grammar-constrained generation failed")
	// ErrStateMismatch refuses a saved session state (Session.LoadState)
	// that another model saved, or a session of another KV type, or one
	// whose context cannot hold it.
	ErrStateMismatch = NewError(CodeInvalidArgument, "engine: the saved state does not fit this session")
	// ErrStateFormat means a saved session state is malformed, truncated
	// or corrupt.
	ErrStateFormat = NewError(CodeInvalidArgument, "engine: malformed saved state")
	// ErrStateUnsupported means a session's state cannot be saved or
	// restored (a session on a device, a part of a split model, an
	// encoder); the error says why.
	ErrStateUnsupported = NewError(CodeInvalidArgument, "engine: this session's state cannot be saved or restored")
)

// OptionError is an invalid option: which one and what is wrong with its
// value. Field is the option's name as the HTTP API and the CLI's JSON spell
// it, in snake_case ("max_tokens", "top_p"), with an index for an element of
// a list ("stop[2]"); each host shows it in its own spelling (the JS API in
// camelCase: "maxTokens"). It matches ErrInvalidOption with errors.Is.
type OptionError struct {
	Field   string
	Problem string // what is wrong, e.g. "must be >= 0, got -1"
	Err     error  // the error it was made from, if any (a *sampling.ParamError)
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrInvalidOption, e.Field, e.Problem)
}

// Is makes errors.Is(err, ErrInvalidOption) true.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOption }

// ErrorCode is CodeInvalidArgument (see CodeOf).
func (e *OptionError) ErrorCode() Code { return CodeInvalidArgument }

// Unwrap is the error it was made from, or nil.
func (e *OptionError) Unwrap() error { return e.Err }

// optionError is an *OptionError for field whose problem is format, args.
func optionError(field, format string, args ...any) error {
	return &OptionError{Field: field, Problem: fmt.Sprintf(format, args...)}
}
