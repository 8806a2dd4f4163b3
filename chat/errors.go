package chat

import "errors"

// Sentinel errors; functions wrap them with %w and add detail.
var (
	// ErrUnknownTemplate is returned when a chat template (a Jinja source or a
	// name) is not one this package can format: nothing matches it, or
	// llama.cpp recognises a family that is not implemented here, or the
	// Template is the zero value.
	ErrUnknownTemplate = errors.New("chat: unknown chat template")
	// ErrUnknownRole is returned when a message has a role the template does
	// not define (every template accepts "system", "user" and "assistant").
	ErrUnknownRole = errors.New("chat: unknown message role")
	// ErrNoMessages is returned when Apply is given no messages.
	ErrNoMessages = errors.New("chat: no messages")
	// ErrInvalidTool is returned for a tool that cannot be offered (no
	// name, a name used twice, parameters that are not a JSON object) or a
	// tool_choice that names no declared tool.
	ErrInvalidTool = errors.New("chat: invalid tool")
	// ErrUnknownToolFormat is returned for a ToolFormat that is none of the
	// declared ones.
	ErrUnknownToolFormat = errors.New("chat: unknown tool format")
)
