package grammar

import (
	"fmt"
	"slices"
	"strings"
)

// What Parse refuses about a grammar as a whole, so that a generation never
// meets it midway. A grammar no finite text matches (root ::= "a" root)
// could only be generated up to the token limit, stopping on a text that
// is not a match. A rule whose alternatives, once expanded, begin more
// parses at once than the matcher holds (maxParses: thousands of
// alternatives that differ at one character; those that begin alike,
// an enum's values, an anyOf's objects, are merged first, factor.go)
// would drop alternatives the first time a text reached it (the matcher
// prunes a text's parses past maxParses, prune.go): an enum silently
// missing values, where an honest refusal names the rule and the limit.
// Both are properties of the grammar,
// not of a text, and both are cheap to find: the shortest finish of every
// rule is known already (budget.go), and a rule's first parses are a
// count over its leading elements.

// mustEnd refuses a grammar whose root can never end (ruleMin from
// minLengths), naming the rule at the bottom of it: walking down from root
// through rules that cannot end, the first whose every alternative needs a
// rule already on the way (a cycle), a character class that matches no
// character (emptyClass says which), or more bytes than any text holds.
func (g *Grammar) mustEnd(ruleMin []int32, emptyClass string) error {
	if ruleMin[g.root] < unreachable {
		return nil
	}
	on := make([]bool, len(g.rules))
	path := []int32{g.root}
	for cur := g.root; ; {
		on[cur] = true
		next := int32(-1)
		for _, pos := range g.rules[cur] {
			for p := pos; next < 0 && g.elems[p].kind != elemEnd; p++ {
				if e := g.elems[p]; e.kind == elemRef && ruleMin[e.arg] >= unreachable && !on[e.arg] {
					next = e.arg
				}
			}
		}
		if next < 0 {
			break
		}
		path = append(path, next)
		cur = next
	}
	bottom := path[len(path)-1]
	var needs []string
	for _, pos := range g.rules[bottom] {
		for p := pos; g.elems[p].kind != elemEnd; p++ {
			e := g.elems[p]
			var need string
			switch {
			case e.kind == elemRef && e.arg == bottom:
				need = fmt.Sprintf("rule %q again", g.names[e.arg])
			case e.kind == elemRef && ruleMin[e.arg] >= unreachable:
				need = fmt.Sprintf("rule %q, which needs it again", g.names[e.arg])
			case e.kind == elemChars && g.sets[e.arg].empty():
				need = emptyClass
			default:
				continue
			}
			if !slices.Contains(needs, need) {
				needs = append(needs, need)
			}
			break
		}
	}
	names := make([]string, len(path))
	for i, r := range path {
		names[i] = g.names[r]
	}
	problem := fmt.Sprintf("can never end: each of its alternatives needs %s, so no finite text matches the grammar", strings.Join(needs, " or "))
	if len(needs) == 0 {
		problem = fmt.Sprintf("can never end: its shortest match is longer than %d bytes", unreachable)
	}
	return &RuleError{Rule: names[len(names)-1], Path: names, Problem: problem, Err: ErrEndless}
}

// checkWidth refuses a grammar with a rule whose alternatives begin more
// than maxParses parses at once — where the rule begins (its alternatives,
// their leading rules' alternatives, and on past the nullable ones) or after
// its first character (an anyOf of thousands of objects, each beginning
// with "{" and optional blanks): every text that reaches the rule would
// make the matcher hold that many. Counts over the leading elements find
// the candidates; the matcher's own expansion, which merges equal stacks,
// decides. Rules are tried in breadth-first order from root, so the rule
// named is the one nearest root. A grammar whose parses multiply further
// into a text (a highly ambiguous one) passes, and is pruned there
// (prune.go).
func (g *Grammar) checkWidth(null []bool) error {
	w := widths{g: g, null: null, first: make([]int32, len(g.rules)), next: make([]int32, len(g.rules))}
	for i := range w.first {
		w.first[i], w.next[i] = -1, -1
	}
	parent := make([]int32, len(g.rules))
	for i := range parent {
		parent[i] = -2
	}
	parent[g.root] = -1
	for queue := []int32{g.root}; len(queue) > 0; queue = queue[1:] {
		r := queue[0]
		n := 0
		if w.rule(r, false) > maxParses || w.rule(r, true) > maxParses {
			n = g.t.widest(r)
		}
		if n <= maxParses && g.t.err != nil {
			return g.t.err // a limit of the matcher's tables, met where the text begins
		}
		if n > maxParses {
			// Down to the rule that holds the alternatives: a rule as
			// wide as this one at its start (a group, a rule of one
			// reference) or after its first character.
			for c := w.widerLead(r); c >= 0; c = w.widerLead(r) {
				m := g.t.widest(c)
				if m <= maxParses {
					break
				}
				parent[c], r, n = r, c, m
			}
			var path []string
			for at := r; at >= 0; at = parent[at] {
				path = append(path, g.names[at])
			}
			slices.Reverse(path)
			return &RuleError{Rule: g.names[r], Path: path, Err: ErrTooComplex,
				Problem: fmt.Sprintf("makes the matcher hold %d parses at once where it begins (its alternatives, expanded), more than its limit of %d", n, maxParses)}
		}
		for _, pos := range g.rules[r] {
			for p := pos; g.elems[p].kind != elemEnd; p++ {
				if e := g.elems[p]; e.kind == elemRef && parent[e.arg] == -2 {
					parent[e.arg] = r
					queue = append(queue, e.arg)
				}
			}
		}
	}
	return nil
}

// widths counts, without the matcher, at most how many parses a rule
// begins (first) and holds after its first character (next), saturating
// past maxParses.
type widths struct {
	g           *Grammar
	null        []bool
	first, next []int32 // per rule, -1 until counted
}

const wide = maxParses + 1

// rule is rule r's count: the parses it begins, or with after those it
// holds after its first character.
func (w *widths) rule(r int32, after bool) int32 {
	memo := w.first
	if after {
		memo = w.next
	}
	if memo[r] < 0 {
		n := int32(0)
		for _, pos := range w.g.rules[r] {
			n = min(n+w.alt(pos, after), wide)
		}
		memo[r] = n
	}
	return memo[r]
}

// alt is the count of the alternative's rest from pos: its leading
// character (or, after, the parses begun after it), past nullable rules.
func (w *widths) alt(pos int32, after bool) int32 {
	n := int32(0)
	for p := pos; ; p++ {
		switch e := w.g.elems[p]; e.kind {
		case elemEnd:
			return n
		case elemChars:
			if !after {
				return min(n+1, wide)
			}
			// The parses after the character: the rest's leading ones,
			// or one where the alternative ends (the caller resumes).
			return min(n+max(w.alt(p+1, false), 1), wide)
		default:
			n = min(n+w.rule(e.arg, after), wide)
			if !w.null[e.arg] {
				return n
			}
		}
	}
}

// widerLead is a rule whose counts pass maxParses and that leads an
// alternative of r (past nullable ones) or follows its first character,
// or -1.
func (w *widths) widerLead(r int32) int32 {
	for _, pos := range w.g.rules[r] {
		chars := 0
		for p := pos; w.g.elems[p].kind != elemEnd && chars < 2; p++ {
			e := w.g.elems[p]
			if e.kind == elemChars {
				chars++
				continue
			}
			if e.arg != r && (w.rule(e.arg, false) > maxParses || w.rule(e.arg, true) > maxParses) {
				return e.arg
			}
			if !w.null[e.arg] {
				break
			}
		}
	}
	return -1
}

// widest is the most parses the matcher holds where rule r begins or after
// its first character, whichever character that is: its alternatives
// expanded, equal stacks merged.
func (t *tables) widest(r int32) int {
	first := t.scratch[:0]
	t.gen++
	for _, alt := range t.g.rules[r] {
		first = t.expand(t.push(0, alt), first)
	}
	first = slices.Clone(first)
	most := len(first)
	// One character from each stretch of code points the first parses'
	// sets divide the alphabet into.
	cuts := []rune{0}
	for _, s := range first {
		if s == 0 {
			continue
		}
		cs := t.g.sets[t.g.elems[t.stacks[s].pos].arg]
		for i := 0; i+1 < len(cs.ranges); i += 2 {
			cuts = append(cuts, cs.ranges[i], cs.ranges[i+1]+1)
		}
	}
	slices.Sort(cuts)
	for _, c := range slices.Compact(cuts) {
		if c > 0x10FFFF {
			break
		}
		out := t.scratch[:0]
		t.gen++
		for _, s := range first {
			if n := t.stacks[s]; s != 0 && t.g.sets[t.g.elems[n.pos].arg].contains(c) {
				out = t.expand(t.push(n.under, n.pos+1), out)
			}
		}
		t.scratch = out
		most = max(most, len(out))
	}
	return most
}
