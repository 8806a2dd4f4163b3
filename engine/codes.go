package engine

import "errors"

// Code classifies an error for the hosts, one way for all of them: it is
// the code property of a rejected JavaScript call and, mapped to an HTTP
// status, the code of an HTTP API error.
type Code string

// The codes of errors. Hosts add their own for what only they can fail
// at (the JS API's "no_model" and "js_exception", say) by declaring their
// sentinel errors with NewError.
const (
	CodeInvalidArgument   Code = "invalid_argument"   // an option, a prompt or an input is wrong: fix the call
	CodePromptTooLong     Code = "prompt_too_long"    // the prompt does not fit in the context
	CodeInvalidModel      Code = "invalid_model"      // the model's bytes are malformed, truncated or inconsistent, or its weights not finite
	CodeUnsupportedModel  Code = "unsupported_model"  // a well-formed model that uses what this engine cannot run
	CodeBusy              Code = "busy"               // the session is generating already
	CodeExchangeFailed    Code = "exchange_failed"    // the workers of a split model lost touch
	CodeDeviceUnsupported Code = "device_unsupported" // the GPU asked for cannot run the model: no adapter, an architecture, a tensor type or a buffer it lacks
	CodeDeviceLost        Code = "device_lost"        // the GPU device was lost mid-call: load the model again
	CodeInternal          Code = "internal"           // a bug: the call panicked and was recovered
	CodeUnknown           Code = "error"              // anything else
)

// codedError is a sentinel error that carries its code.
type codedError struct {
	code Code
	msg  string
}

func (e *codedError) Error() string   { return e.msg }
func (e *codedError) ErrorCode() Code { return e.code }

// NewError returns a sentinel error with message msg whose code (CodeOf)
// is code. Packages above the engine (engine/shard, the hosts) declare their
// sentinels with it, so that one function classifies every error.
func NewError(code Code, msg string) error { return &codedError{code: code, msg: msg} }

// CodeOf is the code an error of the engine says itself: that of the
// first error in its chain with an ErrorCode method (the engine's
// sentinels, those made with NewError, an *OptionError), else CodeUnknown.
// The hosts classify every error they meet with policy.CodeOf, which adds
// the sentinels of the packages below the engine (tokenizer, sampling,
// engine/gguf, ...) and above it (chat).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var coded interface{ ErrorCode() Code }
	if errors.As(err, &coded) {
		return coded.ErrorCode()
	}
	return CodeUnknown
}
