package tokenizer

import (
	"fmt"
	"strings"
)

// Encode splits text into token ids as llama.cpp's tokenize does for an SPM
// vocabulary: special tokens are split out first (control and unknown tokens
// only with ParseSpecial, user-defined tokens always); each remaining piece of
// text gets the dummy-prefix space if it starts the text or follows a special
// token, has its spaces replaced by the marker, and is merged pair by pair,
// best score first. Characters without a token become byte-fallback tokens
// <0xXX>, or the unknown token if the vocabulary has no byte tokens.
func (s *SPM) Encode(text string, opts EncodeOptions) ([]int, error) {
	if err := CheckText(text); err != nil {
		return nil, err
	}
	// Most merged pieces are several bytes long; a quarter of the text is a
	// reasonable first guess that append corrects.
	ids := make([]int, 0, len(text)/4+2)
	if opts.AddSpecial && s.special.AddBOS {
		ids = append(ids, s.special.BOS)
	}
	session := spmSession{s: s}
	var scratch SpecialScratch
	prevSpecial := true // the start of text gets the dummy prefix like text after a special token
	for _, f := range s.specials.Partition(&scratch, text, opts.ParseSpecial) {
		if f.Token >= 0 {
			ids = append(ids, f.Token)
			prevSpecial = true
			continue
		}
		session.text = s.escape(session.text[:0], text[f.Start:f.End], s.addSpacePrefix && prevSpecial)
		var err error
		if ids, err = session.tokenize(ids); err != nil {
			return nil, err
		}
		prevSpecial = false
	}
	if opts.AddSpecial && s.special.AddEOS {
		ids = append(ids, s.special.EOS)
	}
	return ids, nil
}

// escape appends frag to dst with spaces replaced by the space marker,
// preceded by one (escaped) dummy-prefix space if prefix is set.
func (s *SPM) escape(dst []byte, frag string, prefix bool) []byte {
	if prefix {
		dst = append(dst, s.marker...)
	}
	if s.marker == " " {
		return append(dst, frag...)
	}
	for {
		i := strings.IndexByte(frag, ' ')
		if i < 0 {
			return append(dst, frag...)
		}
		dst = append(dst, frag[:i]...)
		dst = append(dst, s.marker...)
		frag = frag[i+1:]
	}
}

// symbol is a run of text in the merge chain: text[start:start+n], linked to
// its neighbours by index (-1 at the ends). A symbol merged into its left
// neighbour has n == 0.
type symbol struct {
	start, n   int32
	prev, next int32
}

// bigram is a candidate merge of two adjacent symbols into a token with the
// given score; size is the byte length of the pair when it was proposed, so a
// stale candidate (a symbol changed since) is recognised and skipped.
type bigram struct {
	left, right int32
	size        int32
	score       float32
}

// bigramQueue is a binary max-heap of candidate merges: higher score first,
// then the leftmost, the order of llama.cpp's llm_bigram_spm comparator (and
// of llama2.c's leftmost-best scan).
type bigramQueue []bigram

// before reports whether a merges before b.
func (a bigram) before(b bigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

func (q *bigramQueue) push(b bigram) {
	*q = append(*q, b)
	h := *q
	// Move the hole up from the end instead of swapping at each level.
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !b.before(h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = b
}

func (q *bigramQueue) pop() bigram {
	h := *q
	top := h[0]
	last := h[len(h)-1]
	h = h[:len(h)-1]
	*q = h
	if len(h) == 0 {
		return top
	}
	// Move the hole down from the root to where the last entry belongs.
	i := 0
	for {
		child := 2*i + 1
		if child >= len(h) {
			break
		}
		if r := child + 1; r < len(h) && h[r].before(h[child]) {
			child = r
		}
		if !h[child].before(last) {
			break
		}
		h[i] = h[child]
		i = child
	}
	h[i] = last
	return top
}

// spmSession holds the scratch space of one Encode call, reused across its
// text fragments (llama.cpp's llm_tokenizer_spm_session).
type spmSession struct {
	s       *SPM
	text    []byte // the escaped fragment being tokenized
	symbols []symbol
	queue   bigramQueue
}

// utf8Len is the length of the UTF-8 sequence a lead byte announces, as
// llama.cpp's unicode_len_utf8 computes it from the top four bits (a stray
// continuation byte counts as one).
func utf8Len(lead byte) int {
	switch lead >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// tokenize appends the tokens of e.text to ids.
func (e *spmSession) tokenize(ids []int) ([]int, error) {
	text := e.text
	// At most a symbol per byte, and about as many candidate merges: sizing
	// up front avoids most regrowing on long prompts.
	if cap(e.symbols) < len(text) {
		e.symbols = make([]symbol, 0, len(text))
		e.queue = make(bigramQueue, 0, len(text))
	}
	e.symbols = e.symbols[:0]
	for offs := 0; offs < len(text); {
		n := min(utf8Len(text[offs]), len(text)-offs)
		i := int32(len(e.symbols))
		next := i + 1
		if offs+n == len(text) {
			next = -1
		}
		e.symbols = append(e.symbols, symbol{start: int32(offs), n: int32(n), prev: i - 1, next: next})
		offs += n
	}
	if len(e.symbols) == 0 {
		return ids, nil
	}

	e.queue = e.queue[:0]
	for i := 1; i < len(e.symbols); i++ {
		e.tryAddBigram(int32(i-1), int32(i))
	}
	for len(e.queue) > 0 {
		b := e.queue.pop()
		left, right := &e.symbols[b.left], &e.symbols[b.right]
		if left.n == 0 || right.n == 0 || left.n+right.n != b.size {
			continue // stale: one side was merged away or grew since
		}
		left.n += right.n
		right.n = 0
		left.next = right.next
		if right.next >= 0 {
			e.symbols[right.next].prev = b.left
		}
		e.tryAddBigram(left.prev, b.left)
		e.tryAddBigram(b.left, left.next)
	}

	// Every merge produced a token, so a final symbol that is not a token is
	// one of the initial symbols. llama.cpp's resegment also looks such a
	// symbol up in its merge history, which is keyed by the texts of pairs of
	// symbols; but symbols are cut by their lead byte, so no pair of symbols
	// spells the same bytes as one symbol, and the lookup is left out.
	for i := int32(0); i != -1; i = e.symbols[i].next {
		sym := e.symbols[i]
		piece := text[sym.start : sym.start+sym.n]
		if id, ok := e.s.lookup[string(piece)]; ok {
			ids = append(ids, int(id))
			continue
		}
		var err error
		if ids, err = e.s.appendFallback(ids, piece); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// tryAddBigram proposes merging symbols left and right if their
// concatenation is a token.
func (e *spmSession) tryAddBigram(left, right int32) {
	if left < 0 || right < 0 {
		return
	}
	l, r := e.symbols[left], e.symbols[right]
	if int(l.n+r.n) > e.s.maxPieceLen {
		return // longer than any token: no need to hash it
	}
	pair := e.text[l.start : l.start+l.n+r.n] // right follows left in the text
	id, ok := e.s.lookup[string(pair)]
	if !ok {
		return
	}
	e.queue.push(bigram{left: left, right: right, size: l.n + r.n, score: e.s.scores[id]})
}

// appendFallback appends the byte tokens of a character the vocabulary lacks.
// Without byte tokens for all its bytes the character becomes one unknown
// token (SentencePiece without byte fallback; llama.cpp would throw).
func (s *SPM) appendFallback(ids []int, piece []byte) ([]int, error) {
	for _, b := range piece {
		if s.byteTokens[b] < 0 {
			if s.special.UNK < 0 {
				return nil, fmt.Errorf("%w: %q needs byte 0x%02X, which has no byte-fallback token, and the vocabulary has no UNK", ErrNoToken, piece, b)
			}
			return append(ids, s.special.UNK), nil
		}
	}
	for _, b := range piece {
		ids = append(ids, int(s.byteTokens[b]))
	}
	return ids, nil
}
