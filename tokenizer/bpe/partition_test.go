package bpe

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// naivePartition is llama.cpp's tokenizer_st_partition written plainly: for
// every special token in order, search the whole text, then split each
// fragment. partition must give the same fragments; it only skips, faster,
// the tokens that do not occur.
func naivePartition(b *BPE, text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{Start: 0, End: len(text), Token: -1}}
	for _, id := range b.specials {
		if !parseSpecial && b.types[id] != tokenizer.TokenUserDefined {
			continue
		}
		if !strings.Contains(text, b.tokens[id]) {
			continue
		}
		var next []fragment
		for _, f := range frags {
			if f.Token >= 0 {
				next = append(next, f)
				continue
			}
			next = b.split(next, text, f.Start, f.End, int(id))
		}
		frags = next
	}
	return frags
}

// TestPartitionNaive compares partition with naivePartition on random
// strings made of pieces of special tokens, with a vocabulary whose special
// tokens overlap, share prefixes and include one-byte ones.
func TestPartitionNaive(t *testing.T) {
	specials := []string{"<a>", "<ab>", "<a", "b>", "x", "xx", "<|im|>", "<|", "[PAD1]", "[PAD12]", "é", "\u00e9\u00e9"}
	tokens := append(byteVocab(), specials...)
	types := make([]tokenizer.TokenType, len(tokens))
	for i := range types {
		types[i] = tokenizer.TokenNormal
	}
	for i := range specials {
		types[256+i] = []tokenizer.TokenType{tokenizer.TokenControl, tokenizer.TokenUserDefined}[i%2]
	}
	tok, err := New(Config{Tokens: tokens, Types: types, Merges: []string{}, PreTokenizer: "gpt-2",
		Special: tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1}, LStrip: []int{257}, RStrip: []int{258}})
	require.NoError(t, err)
	pieces := append([]string{"a", "b", "<", ">", "|", "[", "P", "1", "2", "]", " ", "\t", "é", "\u00e9"}, specials...)
	rng := rand.New(rand.NewPCG(1, 2))
	var s session
	for range 5000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := sb.String()
		for _, parse := range []bool{false, true} {
			want := naivePartition(tok, text, parse)
			got := tok.partition(&s, text, parse)
			if len(want) == 0 {
				require.Empty(t, got, "%q", text)
				continue
			}
			require.Equal(t, want, got, "%q parse=%v", text, parse)
		}
	}
}
