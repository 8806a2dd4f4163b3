package bpe

import "github.com/wasmlm/wasmlm/tokenizer"

// session holds the buffers of one Encode call; BPE pools them.
type session struct {
	split    splitScratch
	specials tokenizer.SpecialScratch
	mapped   []byte // a word in the byte alphabet
	symbols  []symbol
	queue    mergeQueue
}

// Encode splits text into token ids as llama.cpp's tokenize does for a BPE
// vocabulary: special tokens are split out first (control and unknown tokens
// only with ParseSpecial, user-defined tokens always), the pre-tokenizer cuts
// the rest into words, and each word is merged in the byte alphabet. With
// AddSpecial, BOS and EOS are added as the vocabulary asks.
func (b *BPE) Encode(text string, opts tokenizer.EncodeOptions) ([]int, error) {
	if err := tokenizer.CheckText(text); err != nil {
		return nil, err
	}
	s := b.scratch.Get().(*session)
	defer b.scratch.Put(s)

	// English averages about four bytes per token with these vocabularies.
	ids := make([]int, 0, len(text)/4+2)
	if opts.AddSpecial && b.special.AddBOS {
		ids = append(ids, b.special.BOS)
	}
	for _, f := range b.specials.Partition(&s.specials, text, opts.ParseSpecial) {
		if f.Token >= 0 {
			ids = append(ids, f.Token)
			continue
		}
		frag := text[f.Start:f.End]
		if b.spm {
			frag = escapeSpaces(frag)
		}
		b.pre.split(&s.split, frag, func(start, end int) {
			ids = b.appendWord(s, ids, frag[start:end])
		})
	}
	if opts.AddSpecial && b.special.AddEOS {
		ids = append(ids, b.special.EOS)
	}
	return ids, nil
}

// appendWord appends the tokens of one pre-tokenized word.
func (b *BPE) appendWord(s *session, ids []int, word string) []int {
	if len(word) == 1 && !b.spm {
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
	if b.spm {
		return b.spmWord(s, ids, word)
	}
	if b.ignoreMerges {
		s.mapped = appendMapped(s.mapped[:0], word)
		if id, ok := b.lookup[string(s.mapped)]; ok {
			return append(ids, int(id))
		}
	}
	return b.merge(s, ids, word)
}
