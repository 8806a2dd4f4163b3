package grammar

import (
	"fmt"
	"sync"
)

// Grammar is a compiled GBNF grammar. It is safe for concurrent use: the
// matcher's tables (the parse stacks, states and token masks met so far)
// grow inside it behind a lock, so a grammar reused across generations
// gets faster.
type Grammar struct {
	elems []elem    // every alternative of every rule, each closed by elemEnd
	rules [][]int32 // rules[r]: the position in elems where each alternative starts
	names []string  // rule names, for errors
	sets  []charset // the character sets elemChars elements index
	root  int32

	mu sync.Mutex
	t  *tables // renewed when full (renew.go)
}

// compile flattens the parsed rules and refuses left recursion, which
// would make the matcher expand a rule into itself forever, a grammar no
// finite text matches, and alternatives wider than the matcher holds
// (finite.go).
func compile(p *parser, root int32) (*Grammar, error) {
	g := &Grammar{names: p.names, sets: p.sets, root: root, rules: make([][]int32, len(p.alts))}
	for r, alts := range p.alts {
		for _, a := range alts {
			g.rules[r] = append(g.rules[r], int32(len(g.elems)))
			g.elems = append(g.elems, a...)
			g.elems = append(g.elems, elem{kind: elemEnd})
		}
	}
	null := g.nullable()
	if r, ok := g.leftRecursive(null); ok {
		return nil, fmt.Errorf("%w: rule %q is left-recursive (it can reach itself before reading a character)", ErrSyntax, g.names[r])
	}
	ruleMin, rest := g.minLengths()
	if err := g.mustEnd(ruleMin, p.emptyClass); err != nil {
		return nil, err
	}
	g.t = &tables{}
	g.t.init(g, rest)
	if err := g.checkWidth(null); err != nil {
		return nil, err
	}
	return g, nil
}

// nullable reports, for each rule, whether it can match the empty text:
// a worklist over the alternatives made only of rule references, each
// waiting for its references to become nullable (linear in the grammar,
// where a fixpoint over the rules is quadratic for the long chains that
// repetitions generate).
func (g *Grammar) nullable() []bool {
	null := make([]bool, len(g.rules))
	type alt struct{ rule, waiting int32 }
	var alts []alt
	users := make([][]int32, len(g.rules)) // users[r]: the alternatives waiting on r, once per reference
	var work []int32
	for r, starts := range g.rules {
	next:
		for _, pos := range starts {
			a := alt{rule: int32(r)}
			for p := pos; g.elems[p].kind != elemEnd; p++ {
				if g.elems[p].kind != elemRef {
					continue next
				}
				a.waiting++
			}
			if a.waiting == 0 {
				if !null[r] {
					null[r] = true
					work = append(work, int32(r))
				}
				continue
			}
			id := int32(len(alts))
			alts = append(alts, a)
			for p := pos; g.elems[p].kind != elemEnd; p++ {
				users[g.elems[p].arg] = append(users[g.elems[p].arg], id)
			}
		}
	}
	for len(work) > 0 {
		r := work[len(work)-1]
		work = work[:len(work)-1]
		for _, id := range users[r] {
			a := &alts[id]
			if a.waiting--; a.waiting == 0 && !null[a.rule] {
				null[a.rule] = true
				work = append(work, a.rule)
			}
		}
	}
	return null
}

// leftRecursive finds a rule that can reach itself through leftmost
// references (past nullable ones), and returns it.
func (g *Grammar) leftRecursive(null []bool) (int32, bool) {
	const (
		unseen = iota
		active
		done
	)
	state := make([]uint8, len(g.rules))
	var visit func(r int32) (int32, bool)
	visit = func(r int32) (int32, bool) {
		state[r] = active
		for _, pos := range g.rules[r] {
			for ; g.elems[pos].kind == elemRef; pos++ {
				next := g.elems[pos].arg
				if state[next] == active {
					return next, true
				}
				if state[next] == unseen {
					if found, ok := visit(next); ok {
						return found, true
					}
				}
				if !null[next] {
					break
				}
			}
		}
		state[r] = done
		return 0, false
	}
	for r := range g.rules {
		if state[r] == unseen {
			if found, ok := visit(int32(r)); ok {
				return found, true
			}
		}
	}
	return 0, false
}

// Accepts reports whether the whole text matches the grammar's root rule.
func (g *Grammar) Accepts(text string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t, s, at, err := feedRenewing(g, g.t, g.t.start, text)
	return err == nil && at == len(text) && t.accepting(s)
}

// Continues reports whether some text that starts with text matches the
// grammar: a prefix of a whole match.
func (g *Grammar) Continues(text string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, _, at, err := feedRenewing(g, g.t, g.t.start, text)
	return err == nil && at == len(text)
}

// feed moves state s over the bytes of text and returns the state reached
// and how many bytes were taken: fewer than len(text) where no parse
// accepts the next byte (s is then the state before it). Past a limit it
// returns the tables' error.
func feed[T ~string | ~[]byte](t *tables, s int32, text T) (int32, int, error) {
	for i := 0; i < len(text); i++ {
		next, err := t.step(s, text[i])
		if err != nil {
			return s, i, err
		}
		if next < 0 {
			return s, i, nil
		}
		s = next
	}
	return s, len(text), nil
}
