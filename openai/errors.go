package openai

import (
	"errors"
	"fmt"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/policy"
)

// The OpenAI error types this package uses.
const (
	TypeInvalidRequest = "invalid_request_error" // the request is at fault: HTTP 400
	TypeServer         = "server_error"          // the server is: HTTP 500
)

// Error is an OpenAI error object: what is wrong and, for a bad request,
// the request field at fault (Param, "" for null) and why (Code).
type Error struct {
	Type    string
	Param   string
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// BadRequest is an invalid_request_error about the field param.
func BadRequest(param, code, format string, args ...any) *Error {
	return &Error{Type: TypeInvalidRequest, Param: param, Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorOf maps an error of the engine (or of what it calls) to the error
// object it deserves, by its code (policy.CodeOf). An invalid option names
// its field by its whole path in the OpenAI spelling the engine uses
// (stop[2], response_format.json_schema.schema.anyOf[2],
// logit_bias.7), the same path its message starts with; errors about the
// prompt name promptParam ("prompt", "messages"). An *Error is itself.
func ErrorOf(err error, promptParam string) *Error {
	var oerr *Error
	if errors.As(err, &oerr) {
		return oerr
	}
	var oe *engine.OptionError
	if errors.As(err, &oe) {
		param := oe.Field
		if param == "prompt" {
			param = promptParam
		}
		return BadRequest(param, "invalid_value", "%s %s", oe.Field, oe.Problem)
	}
	switch policy.CodeOf(err) {
	case engine.CodePromptTooLong:
		return BadRequest(promptParam, "context_length_exceeded", "%v", err)
	case engine.CodeInvalidArgument: // an empty prompt, text no token can hold, an unknown role, ...
		return BadRequest(promptParam, "invalid_value", "%v", err)
	case engine.CodeInvalidModel, engine.CodeUnsupportedModel:
		// The model the server holds is at fault (weights that are not
		// finite, a chat template this engine does not know), not the
		// request: a server error, with the engine's code.
		return &Error{Type: TypeServer, Code: string(policy.CodeOf(err)), Message: err.Error()}
	}
	return ServerError(err)
}

// ServerError is a server_error that does not blame the request.
func ServerError(err error) *Error {
	return &Error{Type: TypeServer, Code: "internal_error", Message: err.Error()}
}
