package wordpiece

import (
	"fmt"
	"unicode/utf8"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// session holds the buffers of one Encode call; WordPiece pools them.
type session struct {
	specials tokenizer.SpecialScratch
	word     []byte // "▁" and the word being built
}

// Encode splits text into token ids as llama.cpp's tokenize does for a
// WordPiece vocabulary (see the package documentation). With AddSpecial,
// BOS comes first and SEP last; a vocabulary without either is then an
// error wrapping tokenizer.ErrNoToken (llama.cpp asserts), as is a word
// without pieces in a vocabulary without an unknown token (llama.cpp emits
// the id -1).
func (w *WordPiece) Encode(text string, opts tokenizer.EncodeOptions) ([]int, error) {
	if err := tokenizer.CheckText(text); err != nil {
		return nil, err
	}
	if opts.AddSpecial && (w.special.BOS < 0 || w.special.SEP < 0) {
		return nil, fmt.Errorf("%w: adding special tokens needs BOS and SEP (the vocabulary has BOS %d, SEP %d)", tokenizer.ErrNoToken, w.special.BOS, w.special.SEP)
	}
	s := w.scratch.Get().(*session)
	defer w.scratch.Put(s)

	// English averages four bytes a token with BERT's vocabulary, less
	// with punctuation; a third of the text is a first guess that append
	// corrects.
	ids := make([]int, 0, len(text)/3+2)
	if opts.AddSpecial {
		ids = append(ids, w.special.BOS)
	}
	for _, f := range w.specials.Partition(&s.specials, text, opts.ParseSpecial) {
		if f.Token >= 0 {
			ids = append(ids, f.Token)
			continue
		}
		var err error
		if ids, err = w.appendText(s, ids, text[f.Start:f.End]); err != nil {
			return nil, err
		}
	}
	if opts.AddSpecial {
		ids = append(ids, w.special.SEP)
	}
	return ids, nil
}

// appendText appends the tokens of a text without special tokens: llama.cpp's
// llm_tokenizer_wpm_session, its preprocess (normalise and cut into words)
// and the longest-match split of each word, done word by word.
func (w *WordPiece) appendText(s *session, ids []int, text string) ([]int, error) {
	word := append(s.word[:0], tokenizer.SpaceMarker...)
	defer func() { s.word = word }()
	var err error
	// flush splits the word built so far, if any, and starts the next.
	flush := func() {
		if len(word) > len(tokenizer.SpaceMarker) && err == nil {
			ids, err = w.appendWord(ids, word)
		}
		word = word[:len(tokenizer.SpaceMarker)]
	}
	for _, r := range text {
		if w.stripAccents {
			r = nfd(r)
		}
		c := class(r)
		switch {
		case c&classSpace != 0:
			flush()
			continue
		case r == 0 || r == utf8.RuneError || c&classControl != 0:
			continue
		case w.stripAccents && c&classAccent != 0:
			continue
		}
		out := r
		if w.lowercase {
			out = lower(r)
		}
		if c&classPunct != 0 || (r < 0x7F && c&classSymbol != 0) || isChinese(r) {
			flush()
			word = utf8.AppendRune(word, out)
			flush()
			continue
		}
		word = utf8.AppendRune(word, out)
	}
	flush()
	return ids, err
}

// appendWord appends the tokens of "▁" and a word: from the left, the
// longest token at each position; if a position has none, the word is the
// unknown token.
func (w *WordPiece) appendWord(ids []int, word []byte) ([]int, error) {
	start := len(ids)
	for i := 0; i < len(word); {
		id, end := w.trie.longest(word, i)
		if id < 0 {
			ids = ids[:start]
			break
		}
		ids = append(ids, int(id))
		i = end
	}
	if len(ids) == start {
		if w.special.UNK < 0 {
			return ids, fmt.Errorf("%w: no pieces spell the word %q and the vocabulary has no unknown token", tokenizer.ErrNoToken, word[len(tokenizer.SpaceMarker):])
		}
		ids = append(ids, w.special.UNK)
	}
	return ids, nil
}
