package jsbridge

import "errors"

// Sentinel errors; the bridge wraps them with %w and says what was wrong.
// Each becomes the message of a JavaScript Error, whose code property
// classifies it (see Binding).
var (
	// ErrNoModel means a method that needs a model ran before load succeeded.
	ErrNoModel = errors.New("wasmlm: no model loaded")
	// ErrInvalidArgument means an argument or option from JavaScript has the
	// wrong type or is out of range; the message names the JavaScript field.
	ErrInvalidArgument = errors.New("wasmlm: invalid argument")
	// ErrJSException means JavaScript code the bridge called threw: a
	// callback such as stream's onToken, or a getter on an options object.
	// The call stopped there.
	ErrJSException = errors.New("wasmlm: JavaScript threw")
	// ErrInternal means Go code panicked; the bridge recovered and keeps
	// working, but the call's result is lost.
	ErrInternal = errors.New("wasmlm: internal error")
)
