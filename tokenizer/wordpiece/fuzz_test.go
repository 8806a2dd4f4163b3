package wordpiece

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// naiveEncode is llama.cpp's llm_tokenizer_wpm_session written as plainly
// as it is there: the whole text normalised into a list of words first,
// then each "▁"+word split by looking up its substrings in a map, longest
// first. Encode must give the same ids; it only builds words one at a time
// and walks a trie.
func naiveEncode(w *WordPiece, lookup map[string]int, maxLen int, text string) []int {
	words := []string{""}
	for _, cpt := range text {
		if w.stripAccents {
			cpt = nfd(cpt)
		}
		flags := class(cpt)
		if flags&classSpace != 0 {
			if words[len(words)-1] != "" {
				words = append(words, "")
			}
			continue
		}
		if cpt == 0 || cpt == 0xFFFD || flags&classControl != 0 || (w.stripAccents && flags&classAccent != 0) {
			continue
		}
		s := cpt
		if w.lowercase {
			s = lower(cpt)
		}
		if flags&classPunct != 0 || (cpt < 0x7F && flags&classSymbol != 0) || isChinese(cpt) {
			if words[len(words)-1] != "" {
				words = append(words, "")
			}
			words[len(words)-1] = string(s)
			words = append(words, "")
		} else {
			words[len(words)-1] += string(s)
		}
	}
	var out []int
	for _, word := range words {
		if word == "" {
			continue
		}
		word1 := tokenizer.SpaceMarker + word
		n := len(word1)
		current := len(out)
		for i := 0; i < n; i++ {
			match := false
			for j := min(n, i+maxLen+1); j > i; j-- {
				if id, ok := lookup[word1[i:j]]; ok {
					out = append(out, id)
					match = true
					i = j - 1
					break
				}
			}
			if !match {
				out = out[:current]
				break
			}
		}
		if len(out) == current {
			out = append(out, w.special.UNK)
		}
	}
	return out
}

// FuzzWordPieceEncode checks, on any text, that Encode never panics,
// refuses invalid UTF-8 with tokenizer.ErrInvalidUTF8, gives ids in range
// (BOS and SEP around them with AddSpecial), and gives naiveEncode's ids,
// with the bge vocabulary uncased and cased. The seed corpus is
// testdata/fuzz/FuzzWordPieceEncode.
func FuzzWordPieceEncode(f *testing.F) {
	cfg := bgeVocab(f)
	uncased := bge(f)
	cfg.Lowercase, cfg.StripAccents = false, false
	cased, err := New(cfg)
	require.NoError(f, err)
	lookup := make(map[string]int, len(cfg.Tokens))
	maxLen := 0
	for id, text := range cfg.Tokens {
		lookup[text] = id
		maxLen = max(maxLen, len(text))
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range []*WordPiece{uncased, cased} {
			ids, err := tok.Encode(text, tokenizer.EncodeOptions{})
			if !utf8.ValidString(text) {
				require.ErrorIs(t, err, tokenizer.ErrInvalidUTF8)
				return
			}
			require.NoError(t, err)
			want := naiveEncode(tok, lookup, maxLen, text)
			if len(want) == 0 {
				require.Empty(t, ids)
			} else {
				require.Equal(t, want, ids)
			}
			for _, id := range ids {
				require.True(t, id >= 0 && id < tok.VocabSize(), "id %d", id)
			}
			with, err := tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(with), 2)
			require.Equal(t, []int{101, 102}, []int{with[0], with[len(with)-1]})
			for _, id := range with {
				require.True(t, id >= 0 && id < tok.VocabSize(), "id %d", id)
			}
		}
	})
}
