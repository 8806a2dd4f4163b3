package bpe

// symbol is one piece of a word being merged: initially one byte, later the
// concatenation of merged neighbours. Symbols form a linked list in word
// order; a symbol merged into its left neighbour gets n = 0.
type symbol struct {
	id         int32 // token id of the piece, -1 if the vocabulary lacks it
	prev, next int32 // neighbours, -1 at the ends
	n          int32 // length in bytes
	start      int32 // offset of its first byte in the word
}

// candidate is a possible merge of two neighbouring symbols.
type candidate struct {
	rank        int32 // merge rank: lower merges first
	left, right int32 // symbol indices
	n           int32 // combined length when the candidate was made
	id          int32 // the merged token
}

// mergeQueue is a binary min-heap of candidates ordered by rank, then by
// position, the order llama.cpp's llm_bigram_bpe comparator and Hugging
// Face's BPE both use.
type mergeQueue []candidate

func (q mergeQueue) less(i, j int) bool {
	if q[i].rank != q[j].rank {
		return q[i].rank < q[j].rank
	}
	return q[i].left < q[j].left
}

func (q *mergeQueue) push(c candidate) {
	h := append(*q, c)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	*q = h
}

func (q *mergeQueue) pop() candidate {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h.less(l, least) {
			least = l
		}
		if r < len(h) && h.less(r, least) {
			least = r
		}
		if least == i {
			break
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
	*q = h
	return top
}

// merge runs BPE on word (raw bytes; the merge table is keyed by the ids of
// the byte-alphabet spellings) and appends the resulting tokens. It is
// llama.cpp's llm_tokenizer_bpe_session::tokenize for one word: every
// neighbouring pair with a merge rule is queued; the best is merged, unless
// one side has changed since it was queued, and the new symbol's pairs with
// its neighbours are queued in turn. A priority queue keeps long words
// (runs of symbols or CJK text) at O(n log n).
func (b *BPE) merge(s *session, ids []int, word string) []int {
	syms := s.symbols[:0]
	for i := 0; i < len(word); i++ {
		syms = append(syms, symbol{id: b.byteTokens[word[i]], prev: int32(i - 1), next: int32(i + 1), n: 1})
	}
	syms[len(syms)-1].next = -1
	syms = b.runMerges(s, syms)
	for i := int32(0); i >= 0; i = syms[i].next {
		// A byte whose character is not in the vocabulary has no token; so
		// does llama.cpp, which drops it.
		if id := syms[i].id; id >= 0 {
			ids = append(ids, int(id))
		}
	}
	s.symbols = syms
	return ids
}

// runMerges merges the linked symbols of a word until no rule applies and
// returns them; the live ones are those reached from symbol 0.
func (b *BPE) runMerges(s *session, syms []symbol) []symbol {
	s.queue = s.queue[:0]
	for i := 0; i+1 < len(syms); i++ {
		b.queuePair(s, syms, int32(i), int32(i+1))
	}
	for len(s.queue) > 0 {
		c := s.queue.pop()
		left, right := &syms[c.left], &syms[c.right]
		// A symbol only grows, and only by absorbing its right neighbour,
		// so the candidate is stale exactly when the lengths changed.
		if left.n == 0 || right.n == 0 || left.n+right.n != c.n {
			continue
		}
		left.id = c.id
		left.n = c.n
		right.n = 0
		left.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = c.left
		}
		b.queuePair(s, syms, left.prev, c.left)
		b.queuePair(s, syms, c.left, left.next)
	}
	return syms
}

// queuePair queues the merge of symbols left and right if a rule exists.
func (b *BPE) queuePair(s *session, syms []symbol, left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := syms[left], syms[right]
	if l.id < 0 || r.id < 0 {
		return
	}
	rule, ok := b.merges[pairKey(l.id, r.id)]
	if !ok {
		return
	}
	s.queue.push(candidate{rank: rule.rank, left: left, right: right, n: l.n + r.n, id: rule.id})
}
