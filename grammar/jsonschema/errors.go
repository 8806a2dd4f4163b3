package jsonschema

import "errors"

// The errors a conversion wraps (errors.Is): every error the package returns
// is an *Error wrapping one of them.
var (
	// ErrUnsupported is a valid schema using a construct the converter
	// cannot express as a grammar without accepting texts the schema
	// rejects: "not", "if", remote "$ref", "uniqueItems", ...
	ErrUnsupported = errors.New("not supported")
	// ErrInvalid is a schema that is not JSON or not a valid schema: a
	// keyword of the wrong type, a "$ref" to nothing, a bad pattern.
	ErrInvalid = errors.New("invalid schema")
	// ErrLimit is a schema past one of the package's bounds (MaxDepth,
	// MaxRules, MaxRepeat, ...), which keep a hostile schema from taking
	// unbounded memory or time.
	ErrLimit = errors.New("limit exceeded")
)

// Error is a conversion's failure at one place of the schema.
type Error struct {
	// Pointer is the JSON pointer (RFC 6901) of the schema object at
	// fault, "" for the root; a subschema reached through "$ref" is named
	// where it is defined (/$defs/node).
	Pointer string
	// Keyword is the keyword of that schema object at fault ("minLength",
	// "pattern"), when the problem is one keyword's value; "" otherwise.
	Keyword string
	Msg     string
	Err     error // ErrUnsupported, ErrInvalid or ErrLimit
}

// Error is "jsonschema: POINTER: MSG", the root's pointer printed "/".
func (e *Error) Error() string { return "jsonschema: " + e.Detail() }

// Detail is the error without the package's name, "POINTER: MSG", for a
// host that names the field the schema came in.
func (e *Error) Detail() string {
	p := e.Pointer
	if p == "" {
		p = "/"
	}
	return p + ": " + e.Msg
}

// Unwrap returns ErrUnsupported, ErrInvalid or ErrLimit.
func (e *Error) Unwrap() error { return e.Err }
