package bpe

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// TestSentencePieceStyle checks the steps of the "gemma4" pre-tokenizer's
// tokenization on a small vocabulary: spaces written "▁", words cut only at
// newline runs, a run of newlines that is a token taken whole, merges over
// characters, and bytes of characters no token spells as byte tokens; and
// decoding back. engine/vocab checks a real vocabulary against llama.cpp.
func TestSentencePieceStyle(t *testing.T) {
	tokens := []string{"<unk>", "<0x0A>", "<0xE2>", "<0x82>", "<0xAC>", "a", "b", "▁", "ab", "▁ab", "\n", "\n\n", "<0x61>"}
	types := make([]tokenizer.TokenType, len(tokens))
	for i := range types {
		types[i] = tokenizer.TokenNormal
	}
	types[0] = tokenizer.TokenUnknown
	for _, id := range []int{1, 2, 3, 4, 12} {
		types[id] = tokenizer.TokenByte
	}
	tok, err := New(Config{
		Tokens: tokens, Types: types, Merges: []string{"a b", "▁ ab"}, PreTokenizer: "gemma4",
		Special: tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: 0, PAD: -1, SEP: -1},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		text string
		want []int
	}{
		{" ab", []int{9}},
		{"ab ab", []int{8, 9}},
		{"\n\n", []int{11}},
		{"\n\n\n", []int{10, 10, 10}}, // not a token: merged (no rule), one per newline
		{"ab\n\nab", []int{8, 11, 8}},
		{"ab€", []int{8, 2, 3, 4}},
		{"  ", []int{7, 7}},
		{"c", []int{}}, // no token and no byte token: dropped, as llama.cpp does
	} {
		got, err := tok.Encode(tc.text, tokenizer.EncodeOptions{})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%q", tc.text)
		if len(tc.want) > 0 {
			back, err := tokenizer.Decode(tok, got)
			require.NoError(t, err)
			assert.Equal(t, tc.text, back)
		}
	}
}
