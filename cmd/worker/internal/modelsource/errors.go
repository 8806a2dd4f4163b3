package modelsource

import (
	"errors"
	"fmt"
)

// The codes of a failed load: the OpenAI error object's code with which
// the worker answers while its model does not load (status 500).
const (
	CodeNotFound         = "model_not_found"         // no such object or part, or the URL answered 404
	CodeChecksumMismatch = "model_checksum_mismatch" // the bytes read do not have WASMLM_MODEL_SHA256's hash
	CodeTooLarge         = "model_too_large"         // the header says the model cannot fit the isolate
	CodeLoadFailed       = "model_load_failed"       // truncated, corrupt, unsupported, or the storage failed
	CodeMisconfigured    = "worker_misconfigured"    // the variables or bindings naming the model are wrong
)

// Error is a failed load: its message names the model and the cause, and
// Code is the OpenAI error code the worker answers with.
type Error struct {
	code string
	err  error
}

// Error is the message: what failed and why.
func (e *Error) Error() string { return e.err.Error() }

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.err }

// Code is the error's OpenAI code (one of the Code constants).
func (e *Error) Code() string { return e.code }

// fail makes an Error of code with a formatted message (%w allowed).
func fail(code, format string, args ...any) *Error {
	return &Error{code: code, err: fmt.Errorf(format, args...)}
}

// ErrNotFound is what a Store's Open returns (wrapped) for a file it does
// not hold.
var ErrNotFound = errors.New("not found")

// ErrShort is what a Store's Read returns (wrapped) when the file ends
// before the bytes asked for: an object shorter than it said, or a server
// whose answer ends early.
var ErrShort = errors.New("the file ends early")
