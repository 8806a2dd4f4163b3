package bpe

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// session holds the buffers of one Encode call; BPE pools them.
type session struct {
	split         splitScratch
	frags, frags2 []fragment
	mapped        []byte // a word in the byte alphabet
	found         []int  // special tokens occurring in the text
	symbols       []symbol
	queue         mergeQueue
}

// fragment is a run of text to tokenize or a special token split out of it.
type fragment = tokenizer.Fragment

// Encode splits text into token ids as llama.cpp's tokenize does for a BPE
// vocabulary: special tokens are split out first (control and unknown tokens
// only with ParseSpecial, user-defined tokens always), the pre-tokenizer cuts
// the rest into words, and each word is merged in the byte alphabet. With
// AddSpecial, BOS and EOS are added as the vocabulary asks.
func (b *BPE) Encode(text string, opts tokenizer.EncodeOptions) ([]int, error) {
	if len(text) > maxTextBytes {
		return nil, fmt.Errorf("%w: %d bytes (limit %d)", tokenizer.ErrTextTooLong, len(text), maxTextBytes)
	}
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%w: invalid byte at offset %d", tokenizer.ErrInvalidUTF8, invalidOffset(text))
	}
	s := b.scratch.Get().(*session)
	defer b.scratch.Put(s)

	// English averages about four bytes per token with these vocabularies.
	ids := make([]int, 0, len(text)/4+2)
	if opts.AddSpecial && b.special.AddBOS {
		ids = append(ids, b.special.BOS)
	}
	for _, f := range b.partition(s, text, opts.ParseSpecial) {
		if f.Token >= 0 {
			ids = append(ids, f.Token)
			continue
		}
		frag := text[f.Start:f.End]
		b.pre.split(&s.split, frag, func(start, end int) {
			ids = b.appendWord(s, ids, frag[start:end])
		})
	}
	if opts.AddSpecial && b.special.AddEOS {
		ids = append(ids, b.special.EOS)
	}
	return ids, nil
}

// partition splits the special tokens out of text, as llama.cpp's
// tokenizer_st_partition does: for each special token, longest first, every
// occurrence in the remaining text fragments becomes a token fragment.
func (b *BPE) partition(s *session, text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := append(s.frags[:0], fragment{Start: 0, End: len(text), Token: -1})
	next := s.frags2[:0]
	for _, k := range b.occurring(s, text, parseSpecial) {
		id := b.specials[k]
		next = next[:0]
		for _, f := range frags {
			if f.Token >= 0 {
				next = append(next, f)
				continue
			}
			next = b.split(next, text, f.Start, f.End, int(id))
		}
		frags, next = next, frags
	}
	s.frags, s.frags2 = frags, next
	return frags
}

// occurring returns, in the order of b.specials, the positions in it of the
// special tokens that occur in text and are to be split out. One pass over
// the text finds them: only positions whose first two bytes begin some
// special token are compared with the tokens that begin so. The cost hardly
// grows with the number of special tokens (Llama 3 has 256 that all begin
// with "<|", DeepSeek 2398 "[PAD...]" ones), unlike a search for each.
func (b *BPE) occurring(s *session, text string, parseSpecial bool) []int {
	found := s.found[:0]
	add := func(k int32, i int) {
		id := b.specials[k]
		if !parseSpecial && b.types[id] != tokenizer.TokenUserDefined {
			return // control and unknown tokens are text unless asked for
		}
		if strings.HasPrefix(text[i:], b.tokens[id]) {
			found = append(found, int(k))
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if !b.specialFirst[c] {
			continue
		}
		for _, k := range b.specialsOfByte[c] {
			add(k, i)
		}
		if i+1 < len(text) {
			for _, k := range b.specialsByPrefix[uint16(c)<<8|uint16(text[i+1])] {
				add(k, i)
			}
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	s.found = found
	return found
}

// split appends to dst the fragments of text[start:end] around every
// occurrence of special token id.
func (b *BPE) split(dst []fragment, text string, start, end, id int) []fragment {
	return tokenizer.SplitSpecial(dst, text, start, end, id, b.tokens[id], b.lstrip != nil && b.lstrip[id], b.rstrip != nil && b.rstrip[id])
}

// appendWord appends the tokens of one pre-tokenized word.
func (b *BPE) appendWord(s *session, ids []int, word string) []int {
	if len(word) == 1 {
		if id := b.byteTokens[word[0]]; id >= 0 {
			ids = append(ids, int(id))
		}
		return ids
	}
	if len(word) <= cacheMaxWord {
		if cached, ok := b.cache.get(word); ok {
			for _, id := range cached {
				ids = append(ids, int(id))
			}
			return ids
		}
	}
	start := len(ids)
	ids = b.mergeWord(s, ids, word)
	if len(word) <= cacheMaxWord {
		b.cache.put(word, ids[start:])
	}
	return ids
}

// mergeWord appends the tokens of a word of two or more bytes.
func (b *BPE) mergeWord(s *session, ids []int, word string) []int {
	if b.ignoreMerges {
		s.mapped = appendMapped(s.mapped[:0], word)
		if id, ok := b.lookup[string(s.mapped)]; ok {
			return append(ids, int(id))
		}
	}
	return b.merge(s, ids, word)
}
