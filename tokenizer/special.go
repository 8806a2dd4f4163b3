package tokenizer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Fragment is a piece of a text being tokenized: either the bytes
// text[Start:End] still to be split into tokens (Token < 0), or a special
// token split out of the text (Token is its id).
type Fragment struct {
	Start, End int
	Token      int
}

// Specials are the tokens a vocabulary splits out of text before tokenizing
// the rest, as llama.cpp's tokenizer_st_partition does: its control,
// user-defined and unknown tokens, with their LSTRIP and RSTRIP attributes.
// Every tokenizer here holds one. It is immutable after NewSpecials and safe
// for concurrent use; the buffers of a Partition call are a SpecialScratch.
type Specials struct {
	tokens []string
	types  []TokenType
	// ids are the special tokens, longest text first. llama.cpp's sort is
	// not stable; ties are broken by id here, which only matters for
	// equally long texts that overlap.
	ids []int32
	// The same, indexed for finding them in text (see occurring): whether
	// some special token starts with a byte, the one-byte ones by their
	// byte, the others by their first two bytes. Values are positions in ids.
	first    [256]bool
	ofByte   [256][]int32
	byPrefix map[uint16][]int32
	lstrip   []bool // by id; nil when no token has the attribute
	rstrip   []bool
}

// SpecialScratch holds the buffers of Specials.Partition, for reuse across
// calls by one goroutine at a time. The zero value is ready to use.
type SpecialScratch struct {
	frags, next []Fragment
	found       []int
}

// NewSpecials indexes the special tokens of a vocabulary: tokens and types
// are indexed by id (the vocabulary's own slices, kept, not copied), and
// lstrip and rstrip list the ids of the tokens that swallow the ASCII white
// space on their left or right when split out. An empty token text is never
// split out (the tokenizers spell empty entries "[EMPTY_<id>]", as llama.cpp
// does). An id of lstrip or rstrip that is not a token is an error wrapping
// ErrFormat.
func NewSpecials(tokens []string, types []TokenType, lstrip, rstrip []int) (*Specials, error) {
	n := len(tokens)
	if len(types) != n {
		return nil, fmt.Errorf("%w: %d token types for %d tokens", ErrFormat, len(types), n)
	}
	s := &Specials{tokens: tokens, types: types, byPrefix: make(map[uint16][]int32)}
	var err error
	if s.lstrip, err = stripTable(lstrip, n, "LStrip"); err != nil {
		return nil, err
	}
	if s.rstrip, err = stripTable(rstrip, n, "RStrip"); err != nil {
		return nil, err
	}
	for id, typ := range types {
		if (typ == TokenControl || typ == TokenUserDefined || typ == TokenUnknown) && tokens[id] != "" {
			s.ids = append(s.ids, int32(id))
		}
	}
	slices.SortStableFunc(s.ids, func(a, b int32) int {
		return cmp.Compare(len(tokens[b]), len(tokens[a]))
	})
	for k, id := range s.ids {
		text := tokens[id]
		s.first[text[0]] = true
		if len(text) == 1 {
			s.ofByte[text[0]] = append(s.ofByte[text[0]], int32(k))
			continue
		}
		key := uint16(text[0])<<8 | uint16(text[1])
		s.byPrefix[key] = append(s.byPrefix[key], int32(k))
	}
	return s, nil
}

// stripTable turns a list of ids into a by-id table (nil if the list is empty).
func stripTable(ids []int, n int, field string) ([]bool, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	t := make([]bool, n)
	for _, id := range ids {
		if id < 0 || id >= n {
			return nil, fmt.Errorf("%w: %s id %d is not a token id (vocabulary has %d tokens)", ErrFormat, field, id, n)
		}
		t[id] = true
	}
	return t, nil
}

// Partition splits the special tokens out of text, as llama.cpp's
// tokenizer_st_partition does: for each special token, longest first, every
// occurrence in the fragments still to tokenize becomes a token fragment.
// Control and unknown tokens are split out only with parseSpecial;
// user-defined tokens always. The result lives in sc until its next use.
func (s *Specials) Partition(sc *SpecialScratch, text string, parseSpecial bool) []Fragment {
	if text == "" {
		return nil
	}
	frags := append(sc.frags[:0], Fragment{Start: 0, End: len(text), Token: -1})
	next := sc.next[:0]
	for _, k := range s.occurring(sc, text, parseSpecial) {
		id := int(s.ids[k])
		next = next[:0]
		for _, f := range frags {
			if f.Token >= 0 {
				next = append(next, f)
				continue
			}
			next = splitSpecial(next, text, f.Start, f.End, id, s.tokens[id], s.lstrip != nil && s.lstrip[id], s.rstrip != nil && s.rstrip[id])
		}
		frags, next = next, frags
	}
	sc.frags, sc.next = frags, next
	return frags
}

// occurring returns, in the order of s.ids, the positions in it of the
// special tokens that occur in text and are to be split out. One pass over
// the text finds them: only positions whose first two bytes begin some
// special token are compared with the tokens that begin so. The cost hardly
// grows with the number of special tokens (Llama 3 has 256 that all begin
// with "<|", DeepSeek 2398 "[PAD...]" ones), unlike a search for each.
func (s *Specials) occurring(sc *SpecialScratch, text string, parseSpecial bool) []int {
	found := sc.found[:0]
	add := func(k int32, i int) {
		id := s.ids[k]
		if !parseSpecial && s.types[id] != TokenUserDefined {
			return // control and unknown tokens are text unless asked for
		}
		if strings.HasPrefix(text[i:], s.tokens[id]) {
			found = append(found, int(k))
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if !s.first[c] {
			continue
		}
		for _, k := range s.ofByte[c] {
			add(k, i)
		}
		if i+1 < len(text) {
			for _, k := range s.byPrefix[uint16(c)<<8|uint16(text[i+1])] {
				add(k, i)
			}
		}
	}
	slices.Sort(found)
	found = slices.Compact(found)
	sc.found = found
	return found
}

// splitSpecial appends to dst the fragments of text[start:end] around every
// occurrence of one special token (id, spelled special): one step of
// llama.cpp's tokenizer_st_partition. lstrip and rstrip remove the ASCII
// white space (C's isspace) before and after each occurrence, as llama.cpp's
// LSTRIP and RSTRIP token attributes do.
func splitSpecial(dst []Fragment, text string, start, end, id int, special string, lstrip, rstrip bool) []Fragment {
	for start < end {
		i := strings.Index(text[start:end], special)
		if i < 0 {
			break
		}
		match := start + i
		left := match
		if lstrip {
			for left > start && isSpace(text[left-1]) {
				left--
			}
		}
		if left > start {
			dst = append(dst, Fragment{Start: start, End: left, Token: -1})
		}
		dst = append(dst, Fragment{Token: id})
		start = match + len(special)
		if rstrip {
			for start < end && isSpace(text[start]) {
				start++
			}
		}
	}
	if start < end {
		dst = append(dst, Fragment{Start: start, End: end, Token: -1})
	}
	return dst
}

// isSpace is C's isspace in the "C" locale, which llama.cpp uses for
// LSTRIP/RSTRIP.
func isSpace(c byte) bool {
	return c == ' ' || ('\t' <= c && c <= '\r')
}

// CheckIDs checks that every id of s is -1 or a token of a vocabulary of n
// tokens; an error wraps ErrFormat.
func (s Special) CheckIDs(n int) error {
	for _, f := range []struct {
		name string
		id   int
	}{{"BOS", s.BOS}, {"EOS", s.EOS}, {"EOT", s.EOT}, {"UNK", s.UNK}, {"PAD", s.PAD}, {"SEP", s.SEP}} {
		if f.id < -1 || f.id >= n {
			return fmt.Errorf("%w: %s id %d is not a token id (vocabulary has %d tokens; -1 means none)", ErrFormat, f.name, f.id, n)
		}
	}
	return nil
}

// Check is CheckIDs, and checks that the tokens EncodeOptions.AddSpecial
// adds by AddBOS and AddEOS exist.
func (s Special) Check(n int) error {
	if err := s.CheckIDs(n); err != nil {
		return err
	}
	if s.AddBOS && s.BOS < 0 {
		return fmt.Errorf("%w: AddBOS is set but the vocabulary has no BOS token", ErrFormat)
	}
	if s.AddEOS && s.EOS < 0 {
		return fmt.Errorf("%w: AddEOS is set but the vocabulary has no EOS token", ErrFormat)
	}
	return nil
}
