package wordpiece

import (
	"slices"
	"strings"
)

// trie is a byte trie of the token texts, for the longest entry at a
// position of a word: llama.cpp looks up every substring from the longest
// down, which costs a hash of each; walking the trie costs a step per byte.
// Node 0 is the root; the edges of node k are label[first[k]:first[k]+count[k]]
// (sorted) and child[...]. Nodes with many edges (the root, "▁", common
// prefixes) also have a table of their children by byte.
type trie struct {
	first []int32  // by node
	count []uint16 // by node
	token []int32  // by node: the id spelled by the path to it, -1 if none
	dense []int32  // by node: where its table starts in byByte, -1 if it has none
	label []byte   // by edge
	child []int32  // by edge
	// byByte holds the tables of children by byte, 256 entries each, 0
	// for none (the root is no one's child).
	byByte []int32
}

// denseEdges is how many edges give a node a table of its children.
const denseEdges = 16

// buildTrie indexes tokens (never empty). Of equal texts, the last id is
// kept, as llama.cpp's token_to_id map keeps it.
func buildTrie(tokens []string) trie {
	order := make([]int32, len(tokens))
	for i := range order {
		order[i] = int32(i)
	}
	// Sorted by text, equal texts by id, so the last of a run is the one kept.
	slices.SortStableFunc(order, func(a, b int32) int { return strings.Compare(tokens[a], tokens[b]) })
	t := trie{}
	t.node()
	t.build(0, tokens, order, 0)
	t.dense = make([]int32, len(t.count))
	for k, n := range t.count {
		t.dense[k] = -1
		if n < denseEdges && k > 0 {
			continue
		}
		t.dense[k] = int32(len(t.byByte))
		t.byByte = append(t.byByte, make([]int32, 256)...)
		for e := t.first[k]; e < t.first[k]+int32(n); e++ {
			t.byByte[t.dense[k]+int32(t.label[e])] = t.child[e]
		}
	}
	return t
}

// node adds a node without edges and returns it.
func (t *trie) node() int32 {
	t.first = append(t.first, 0)
	t.count = append(t.count, 0)
	t.token = append(t.token, -1)
	return int32(len(t.token) - 1)
}

// build fills node k from order, the ids of texts that share their first
// depth bytes (the path to k), sorted.
func (t *trie) build(k int32, tokens []string, order []int32, depth int) {
	for len(order) > 0 && len(tokens[order[0]]) == depth {
		t.token[k] = order[0] // the last of equal texts wins
		order = order[1:]
	}
	// The edges of k are contiguous: reserve them, then descend into each
	// child.
	t.first[k] = int32(len(t.label))
	for rest := order; len(rest) > 0; rest = rest[span(tokens, rest, depth):] {
		t.label = append(t.label, tokens[rest[0]][depth])
		t.child = append(t.child, 0)
	}
	t.count[k] = uint16(len(t.label) - int(t.first[k]))
	for e, rest := t.first[k], order; len(rest) > 0; e++ {
		n := span(tokens, rest, depth)
		child := t.node()
		t.child[e] = child
		t.build(child, tokens, rest[:n], depth+1)
		rest = rest[n:]
	}
}

// span is how many of order, from the first, have the same byte at depth.
func span(tokens []string, order []int32, depth int) int {
	c := tokens[order[0]][depth]
	n := 1
	for n < len(order) && tokens[order[n]][depth] == c {
		n++
	}
	return n
}

// next is the child of node k along byte c, or 0 if there is none.
func (t *trie) next(k int32, c byte) int32 {
	if d := t.dense[k]; d >= 0 {
		return t.byByte[d+int32(c)]
	}
	lo, end := int(t.first[k]), int(t.first[k])+int(t.count[k])
	// The first edge whose label is not below c.
	for hi := end; lo < hi; {
		mid := int(uint(lo+hi) >> 1)
		if t.label[mid] < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < end && t.label[lo] == c {
		return t.child[lo]
	}
	return 0
}

// longest returns the id of the longest token that s[i:] starts with and
// where it ends, or -1 and i if none does.
func (t *trie) longest(s []byte, i int) (id int32, end int) {
	id, end = -1, i
	k := int32(0)
	for j := i; j < len(s); j++ {
		if k = t.next(k, s[j]); k == 0 {
			break
		}
		if tok := t.token[k]; tok >= 0 {
			id, end = tok, j+1
		}
	}
	return id, end
}
