package grammar

import (
	"bytes"
	"slices"
)

// Vocab is a vocabulary arranged for masking: every token's bytes in a trie
// stored in depth-first order, so that a walk visits each distinct token
// prefix once and skips, in one jump, every token under a prefix the
// grammar rejects. Build it once per tokenizer; it is immutable and safe
// for concurrent use.
type Vocab struct {
	size     int     // token ids are 0..size-1
	label    []byte  // label[k]: the last byte of trie node k's prefix
	depth    []int32 // depth[k]: the length of node k's prefix (>= 1)
	end      []int32 // end[k]: the node after k's subtree
	tokStart []int32 // the tokens whose bytes are node k's prefix: toks[tokStart[k]:tokStart[k+1]]
	toks     []int32
	maxDepth int
}

// NewVocab arranges the vocabulary whose token id i decodes to pieces[i].
// Tokens with no bytes (control tokens such as BOS and EOS) are never
// allowed by a grammar; Constraint lets the end-of-generation ones through
// where the grammar accepts the text.
func NewVocab(pieces [][]byte) *Vocab {
	order := make([]int32, 0, len(pieces))
	for id, p := range pieces {
		if len(p) > 0 {
			order = append(order, int32(id))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := bytes.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	v := &Vocab{size: len(pieces)}
	var path []int32 // the open nodes, one per byte of the previous token
	var prev []byte
	for _, id := range order {
		p := pieces[id]
		common := 0
		for common < len(prev) && common < len(p) && prev[common] == p[common] {
			common++
		}
		for len(path) > common {
			v.end[path[len(path)-1]] = int32(len(v.label))
			path = path[:len(path)-1]
		}
		for _, b := range p[common:] {
			path = append(path, int32(len(v.label)))
			v.label = append(v.label, b)
			v.depth = append(v.depth, int32(len(path)))
			v.end = append(v.end, 0)
			v.tokStart = append(v.tokStart, int32(len(v.toks)))
		}
		v.toks = append(v.toks, id)
		v.maxDepth = max(v.maxDepth, len(p))
		prev = p
	}
	for _, k := range path {
		v.end[k] = int32(len(v.label))
	}
	v.tokStart = append(v.tokStart, int32(len(v.toks)))
	// A token is recorded when its last node is made; tokStart[k] was set
	// then to where its tokens begin, and those of later nodes begin after.
	return v
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return v.size }
