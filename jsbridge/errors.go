package jsbridge

import "github.com/wasmlm/wasmlm/engine"

// Sentinel errors; the bridge wraps them with %w and says what was wrong.
// Each becomes the message of a JavaScript Error, whose code property
// classifies it (policy.CodeOf: the code is in parentheses below; see
// Binding). An argument or option with the wrong type or value is an
// *engine.OptionError, which names the field.
var (
	// ErrNoModel means a method that needs a model ran before load
	// succeeded (no_model).
	ErrNoModel = engine.NewError("no_model", "wasmlm: no model loaded")
	// ErrInvalidArgument means a call from JavaScript is wrong as a whole
	// (invalid_argument).
	ErrInvalidArgument = engine.NewError(engine.CodeInvalidArgument, "wasmlm: invalid argument")
	// ErrJSException means JavaScript code the bridge called threw: a
	// callback such as stream's onToken, or a getter on an options object.
	// The call stopped there (js_exception).
	ErrJSException = engine.NewError("js_exception", "wasmlm: JavaScript threw")
	// ErrAborted means the signal of an embed or rerank call aborted it,
	// before its turn or between the engine's passes (aborted, the code the
	// page gives an aborted load). A generation does not fail when aborted:
	// it resolves with what it generated so far.
	ErrAborted = engine.NewError("aborted", "wasmlm: aborted")
	// ErrServeUnavailable means serveHTTP ran in a build without the
	// OpenAI endpoint: only the build tagged wasmlm_serve has it
	// (wasmlm-serve.wasm, which the page loads with { serve: true })
	// (serve_failed, lm.serve's code).
	ErrServeUnavailable = engine.NewError("serve_failed", "wasmlm: this build has no OpenAI endpoint (it is wasmlm-serve.wasm's, build tag wasmlm_serve: load the model with { serve: true })")
	// ErrInternal means Go code panicked; the bridge recovered and keeps
	// working, but the call's result is lost (internal).
	ErrInternal = engine.NewError(engine.CodeInternal, "wasmlm: internal error")
)
