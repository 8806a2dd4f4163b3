package grammar

import (
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by every error Parse returns for text that is not a
// valid grammar; the message says where and what.
var ErrSyntax = errors.New("grammar: invalid GBNF")

// ErrTooComplex is returned when a grammar, or the text generated under it,
// needs more states than the limits allow (see Limits): a highly ambiguous
// grammar can make the number of parses explode.
var ErrTooComplex = errors.New("grammar: too complex")

// ErrRejected is returned by Accept for a token that cannot continue the
// text (the mask would have banned it).
var ErrRejected = errors.New("grammar: token rejected")

// ErrDeadEnd is returned by Mask when no token of the vocabulary can
// continue the text and the grammar does not accept it as it is: the
// vocabulary lacks a character the grammar requires.
var ErrDeadEnd = errors.New("grammar: no token can continue the text")

// syntaxError reports a GBNF problem at a byte offset of the source, with
// the line and column a person looks for.
func syntaxError(src string, at int, format string, args ...any) error {
	line, col := 1, 1
	for _, c := range src[:min(at, len(src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Errorf("%w: line %d column %d: %s", ErrSyntax, line, col, fmt.Sprintf(format, args...))
}
