package bpe

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// FuzzRoundTrip checks that byte-level BPE is lossless: for any valid UTF-8,
// decoding the encoding gives the text back (without ParseSpecial, control
// tokens stay text; user-defined tokens render as their text). It also
// checks that every id is in range. Invalid UTF-8 must be refused.
func FuzzRoundTrip(f *testing.F) {
	f.Add("Hello world")
	f.Add(" \n \n\n   \t\t  x")
	f.Add("I've 'RE 's  3333 ١٢٣ 👨‍👩‍👧‍👦 日本語 <think> <|im_end|>")
	f.Add("\xff")
	toks := []*BPE{llama3(f), qwen3(f)}
	f.Fuzz(func(t *testing.T, text string) {
		for _, tok := range toks {
			ids, err := tok.Encode(text, tokenizer.EncodeOptions{})
			if !utf8.ValidString(text) {
				require.ErrorIs(t, err, tokenizer.ErrInvalidUTF8)
				return
			}
			require.NoError(t, err)
			got, err := tokenizer.Decode(tok, ids)
			require.NoError(t, err)
			require.Equal(t, text, got)
		}
	})
}

// FuzzPreTokenize checks every pre-tokenizer on any text: the words are
// non-empty, in order, and cover the text exactly, and nothing panics.
func FuzzPreTokenize(f *testing.F) {
	f.Add("Hello, y'all! How are you 😁 ?我想在apple工作1314151天～")
	f.Add("\n \n\n \t\t 3.14 3333 'RE ﬁ Ω K  \u3000\u2028 \r\n\r\n  ")
	f.Add("")
	kinds := map[string]bool{}
	var pres []preTokenizer
	for _, name := range PreTokenizers() {
		if kinds[preTokenizerKinds[name]] {
			continue
		}
		kinds[preTokenizerKinds[name]] = true
		p, err := newPreTokenizer(name)
		require.NoError(f, err)
		pres = append(pres, p)
	}
	f.Fuzz(func(t *testing.T, text string) {
		text = strings.ToValidUTF8(text, "\uFFFD")
		var s splitScratch
		for _, p := range pres {
			at := 0
			p.split(&s, text, func(start, end int) {
				require.Equal(t, at, start, p.name)
				require.Less(t, start, end, p.name)
				at = end
			})
			require.Equal(t, len(text), at, p.name)
		}
	})
}
