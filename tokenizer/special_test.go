package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// naivePartition is llama.cpp's tokenizer_st_partition written plainly: for
// every special token in order, search the whole text, then split each
// fragment. Partition must give the same fragments; it only skips, faster,
// the tokens that do not occur.
func naivePartition(s *Specials, text string, parseSpecial bool) []Fragment {
	if text == "" {
		return nil
	}
	frags := []Fragment{{Start: 0, End: len(text), Token: -1}}
	for _, id := range s.ids {
		if !parseSpecial && s.types[id] != TokenUserDefined {
			continue
		}
		if !strings.Contains(text, s.tokens[id]) {
			continue
		}
		var next []Fragment
		for _, f := range frags {
			if f.Token >= 0 {
				next = append(next, f)
				continue
			}
			next = splitSpecial(next, text, f.Start, f.End, int(id), s.tokens[id], s.lstrip != nil && s.lstrip[id], s.rstrip != nil && s.rstrip[id])
		}
		frags = next
	}
	return frags
}

// TestPartitionNaive compares Partition with naivePartition on random
// strings made of pieces of special tokens, with a vocabulary whose special
// tokens overlap, share prefixes and include one-byte ones.
func TestPartitionNaive(t *testing.T) {
	specials := []string{"<a>", "<ab>", "<a", "b>", "x", "xx", "<|im|>", "<|", "[PAD1]", "[PAD12]", "é", "\u00e9\u00e9"}
	tokens := append([]string{"a", "b", "<"}, specials...)
	types := []TokenType{TokenNormal, TokenNormal, TokenNormal}
	for i := range specials {
		types = append(types, []TokenType{TokenControl, TokenUserDefined}[i%2])
	}
	sp, err := NewSpecials(tokens, types, []int{4}, []int{5})
	require.NoError(t, err)
	pieces := append([]string{"a", "b", "<", ">", "|", "[", "P", "1", "2", "]", " ", "\t", "é", "\u00e9"}, specials...)
	rng := rand.New(rand.NewPCG(1, 2))
	var sc SpecialScratch
	for range 5000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := sb.String()
		for _, parse := range []bool{false, true} {
			want := naivePartition(sp, text, parse)
			got := sp.Partition(&sc, text, parse)
			if len(want) == 0 {
				require.Empty(t, got, "%q", text)
				continue
			}
			require.Equal(t, want, got, "%q parse=%v", text, parse)
		}
	}
}

// TestNewSpecialsErrors: strip lists must name tokens, and types must match
// tokens.
func TestNewSpecialsErrors(t *testing.T) {
	tokens := []string{"a", "<s>"}
	types := []TokenType{TokenNormal, TokenControl}
	for _, tc := range []struct {
		name           string
		types          []TokenType
		lstrip, rstrip []int
		msg            string
	}{
		{"types", types[:1], nil, nil, "1 token types for 2 tokens"},
		{"lstrip", types, []int{2}, nil, "LStrip id 2"},
		{"rstrip", types, nil, []int{-1}, "RStrip id -1"},
	} {
		_, err := NewSpecials(tokens, tc.types, tc.lstrip, tc.rstrip)
		require.ErrorIs(t, err, ErrFormat, tc.name)
		require.ErrorContains(t, err, tc.msg, tc.name)
	}
}
