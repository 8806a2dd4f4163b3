package grammar

import (
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by every error Parse returns for text that is not a
// valid grammar; the message says where and what.
var ErrSyntax = errors.New("grammar: invalid GBNF")

// ErrTooComplex is returned when a grammar needs more than the matcher's
// limits allow: Parse refuses a rule that begins more parses at once than
// it holds, or a repetition that expands past its elements. During a match
// a text with too many parses is pruned (prune.go) and full tables are
// renewed (renew.go), so only one character that outgrows empty tables
// could still return it.
var ErrTooComplex = errors.New("grammar: too complex")

// ErrRejected is returned by Accept for a token that cannot continue the
// text (the mask would have banned it).
var ErrRejected = errors.New("grammar: token rejected")

// ErrDeadEnd is returned by Mask when no token of the vocabulary can
// continue the text and the grammar does not accept it as it is: the
// vocabulary lacks a character the grammar requires.
var ErrDeadEnd = errors.New("grammar: no token can continue the text")

// ErrEndless is wrapped by the *RuleError Parse returns for a grammar no
// finite text matches: its root needs a rule that can never end (one that
// only recurses, or that needs a character class matching no character).
// Generating under it could only stop at the token limit, on a text that
// is not a match.
var ErrEndless = errors.New("grammar: no finite text matches")

// RuleError is a grammar refused for one of its rules: one that can never
// end (ErrEndless), or whose alternatives begin more parses at once than
// the matcher holds (ErrTooComplex). Rule is the rule's name in the source,
// or for a group or repetition the name Parse gave it (base_N, after the
// rule it is written in).
type RuleError struct {
	Rule string
	// Path is the chain of rules from root to Rule, each needing the next.
	Path    []string
	Problem string // what is wrong with the rule, after its name
	Err     error  // ErrEndless or ErrTooComplex
}

// Error is "grammar: ...: rule NAME PROBLEM".
func (e *RuleError) Error() string { return fmt.Sprintf("%v: rule %q %s", e.Err, e.Rule, e.Problem) }

// Unwrap returns ErrEndless or ErrTooComplex.
func (e *RuleError) Unwrap() error { return e.Err }

// syntaxError reports a GBNF problem at a byte offset of the source, with
// the line and column a person looks for.
func syntaxError(src string, at int, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrSyntax, where(src, at), fmt.Sprintf(format, args...))
}

// where is "line L column C" of a byte offset of src.
func where(src string, at int) string {
	line, col := 1, 1
	for _, c := range src[:min(at, len(src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d column %d", line, col)
}
