package grammar

import "strings"

// factor merges, in every rule, the alternatives that begin with the same
// element into one that continues with a new rule of their rests, and so
// on down (left-factoring): the values of an enum become a trie. The
// language is the same; what changes is how many parses the matcher holds
// at once. Unfactored, an enum of 5,000 strings is 5,000 parses after its
// opening quote, past maxParses; factored, it is as many as the values
// that can follow the text so far differ in their next character.
func (p *parser) factor() {
	// Rules made here are appended, and factored in turn.
	for r := 0; r < len(p.alts); r++ {
		p.alts[r] = p.factorRule(int32(r))
	}
}

// factorRule returns rule r's alternatives with those that share their
// first element merged.
func (p *parser) factorRule(r int32) [][]elem {
	alts := p.alts[r]
	if len(alts) < 2 {
		return alts
	}
	first := map[elem]int{} // an alternative's first element → its place in out
	var out [][]elem
	var rests [][][]elem // rests[i]: the rests of the alternatives merged into out[i]
	for _, a := range alts {
		if len(a) == 0 {
			out, rests = append(out, a), append(rests, nil)
			continue
		}
		if i, ok := first[a[0]]; ok {
			rests[i] = append(rests[i], a[1:])
			continue
		}
		first[a[0]] = len(out)
		out, rests = append(out, a), append(rests, [][]elem{a[1:]})
	}
	base, _, _ := strings.Cut(p.names[r], "_")
	for i, rest := range rests {
		if len(rest) < 2 {
			continue
		}
		id := p.generated(base)
		p.alts[id], p.defined[id] = rest, true
		out[i] = []elem{out[i][0], {elemRef, id}}
	}
	return out
}
