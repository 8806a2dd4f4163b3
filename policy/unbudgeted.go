package policy

import "github.com/wasmlm/wasmlm/engine"

// A forced tool call is not steered to fit the token limit. Under a
// response format or a grammar the matcher closes the text's strings,
// arrays and objects in time as the limit nears (grammar/budget.go), so
// that a reply max_tokens ends still parses. A call's arguments are what
// a client runs, so they must be the model's own: a call closed early
// would carry arguments the model did not write (a string shortened, one
// left empty), labelled a finished call. So a forced call's grammar only
// holds the text to the call syntax; a call the limit cuts stays cut and
// the reply's reader drops it, with finish_reason "length".

// Unbudgeted is c without the steering near the limit: each match is
// given no token budget (the matcher's "no limit"), so it bans only what
// the grammar itself does not allow.
func Unbudgeted(c engine.Constraint) engine.Constraint { return unbudgeted{c} }

// unbudgeted is Unbudgeted's constraint.
type unbudgeted struct{ c engine.Constraint }

var _ engine.Constraint = unbudgeted{}

// Start begins a match of c that ignores the budget it is given.
func (u unbudgeted) Start(ends []int) engine.ConstraintMatch {
	return unbudgetedMatch{u.c.Start(ends)}
}

// unbudgetedMatch is a match masked without a budget.
type unbudgetedMatch struct{ engine.ConstraintMatch }

// Mask bans what the grammar does not allow next, whatever the budget.
func (m unbudgetedMatch) Mask(logits []float32, _ int) (bool, error) {
	return m.ConstraintMatch.Mask(logits, 0)
}
