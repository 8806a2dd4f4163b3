package bpe

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// byteVocab returns the 256 single-byte tokens of GPT-2's alphabet, in byte
// order, so that id b spells byte b.
func byteVocab() []string {
	tokens := make([]string, 256)
	for b := range 256 {
		tokens[b] = alphabet.utf8Of[b]
	}
	return tokens
}

// TestByteAlphabet checks GPT-2's bytes_to_unicode: the printable Latin-1
// bytes stand for themselves, the 68 others map in order to U+0100..U+0143,
// so space is Ġ (U+0120) and newline Ċ (U+010A), the spellings every
// byte-level vocabulary uses.
func TestByteAlphabet(t *testing.T) {
	next := rune(0x100)
	seen := map[rune]bool{}
	for b := range 256 {
		r := alphabet.runeOf[b]
		printable := ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF)
		if printable {
			assert.Equal(t, rune(b), r)
		} else {
			assert.Equal(t, next, r)
			next++
		}
		assert.False(t, seen[r])
		seen[r] = true
		assert.Equal(t, byte(b), alphabet.byteOf[r])
	}
	assert.Equal(t, rune(0x144), next)
	assert.Equal(t, "Ġ", alphabet.utf8Of[' '])
	assert.Equal(t, "Ċ", alphabet.utf8Of['\n'])
	// The Llama 3 vocabulary spells " the" as "Ġthe" (token 279).
	assert.Equal(t, "Ġthe", llama3(t).TokenText(279))
}

// TestMergeOrder checks the merge rule of BPE on a toy vocabulary: the pair
// with the lowest rank merges first, whatever its position, and among equal
// pairs the leftmost goes first ("aaa" has two "a a" pairs; merging the left
// one leaves "aa a").
func TestMergeOrder(t *testing.T) {
	tokens := append(byteVocab(), "aa", "bc", "abc", "aaa")
	aa, bc, abc := 256, 257, 258
	tok, err := New(Config{Tokens: tokens, Merges: []string{"b c", "a a", "a bc"}, PreTokenizer: "gpt-2"})
	require.NoError(t, err)
	for _, tc := range []struct {
		text string
		want []int
	}{
		{"abc", []int{abc}},                 // b c (rank 0) before a a; then a bc
		{"aabc", []int{aa, bc}},             // b c (rank 0), then a a (1) before a bc (2)
		{"abca", []int{abc, 'a'}},           // b c, then a bc; a a never forms
		{"aaa", []int{aa, 'a'}},             // two a a candidates: the leftmost wins
		{"aaaa", []int{aa, aa}},             // left pair first, then the remaining pair
		{"cb", []int{'c', 'b'}},             // no rule
		{"bcbc", []int{bc, bc}},             // independent pairs
		{"x", []int{'x'}},                   // one byte
		{"\u00e9", []int{0xC3, 0xA9}},       // é is two bytes, each its own token
		{"aabcaaa", []int{aa, bc, aa, 'a'}}, // the rules act within one word
	} {
		ids, err := tok.Encode(tc.text, tokenizer.EncodeOptions{})
		require.NoError(t, err)
		assert.Equal(t, tc.want, ids, tc.text)
	}
	// "aaa" is a token but unreachable by merges; with IgnoreMerges a whole
	// word found in the vocabulary is taken as is.
	tok, err = New(Config{Tokens: tokens, Merges: []string{"b c", "a a", "a bc"}, PreTokenizer: "gpt-2", IgnoreMerges: true})
	require.NoError(t, err)
	ids, err := tok.Encode("aaa", tokenizer.EncodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{259}, ids)
}

// TestMergeForms checks that a merge list as pairs (tokenizer.json's newer
// form, Qwen3's file) and as "a b" strings (the older form, Llama 3's file,
// and GGUF's) build the same tokenizer: each vocabulary is rebuilt from its
// merge table in the other form and must encode the reference strings alike.
func TestMergeForms(t *testing.T) {
	ref := readReference(t)
	for _, tc := range []struct {
		name  string
		tok   *BPE
		pairs bool
	}{{"llama3 as pairs", llama3(t), true}, {"qwen3 as strings", qwen3(t), false}} {
		b := tc.tok
		rules := make([]mergeRule, 0, len(b.merges))
		keys := make(map[mergeRule]uint64, len(b.merges))
		for key, m := range b.merges {
			rules = append(rules, m)
			keys[m] = key
		}
		slices.SortFunc(rules, func(x, y mergeRule) int { return cmp.Compare(x.rank, y.rank) })
		cfg := Config{Tokens: b.tokens, Types: b.types, PreTokenizer: b.pre.name, IgnoreMerges: b.ignoreMerges, Special: b.special}
		for _, m := range rules {
			key := keys[m]
			left, right := b.tokens[key>>32], b.tokens[uint32(key)]
			if tc.pairs {
				cfg.MergePairs = append(cfg.MergePairs, [2]string{left, right})
			} else {
				cfg.Merges = append(cfg.Merges, left+" "+right)
			}
		}
		rebuilt, err := New(cfg)
		require.NoError(t, err, tc.name)
		require.Len(t, rebuilt.merges, len(b.merges), tc.name)
		for _, c := range ref.Cases[:500] {
			want, err := b.Encode(c.Text, tokenizer.EncodeOptions{})
			require.NoError(t, err)
			got, err := rebuilt.Encode(c.Text, tokenizer.EncodeOptions{})
			require.NoError(t, err)
			require.Equal(t, want, got, "%s: %q", tc.name, c.Text)
		}
	}
}

// TestNewErrors checks that malformed configurations are rejected with
// errors that say what is wrong.
func TestNewErrors(t *testing.T) {
	none := tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: -1}
	for _, tc := range []struct {
		name string
		cfg  Config
		want error
		text string
	}{
		{"empty", Config{}, tokenizer.ErrFormat, "0 tokens"},
		{"types", Config{Tokens: []string{"a"}, Types: []tokenizer.TokenType{1, 1}, Special: none}, tokenizer.ErrFormat, "2 token types"},
		{"type range", Config{Tokens: []string{"a"}, Types: []tokenizer.TokenType{7}, Special: none}, tokenizer.ErrFormat, "type 7"},
		{"both merges", Config{Tokens: []string{"a"}, Merges: []string{}, MergePairs: [][2]string{}, Special: none}, tokenizer.ErrFormat, "both"},
		{"bos range", Config{Tokens: []string{"a"}, Special: tokenizer.Special{BOS: 1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: -1}}, tokenizer.ErrFormat, "BOS id 1"},
		{"add bos", Config{Tokens: []string{"a"}, Special: tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: -1, AddBOS: true}}, tokenizer.ErrFormat, "AddBOS"},
		{"strip", Config{Tokens: []string{"a"}, Special: none, RStrip: []int{3}}, tokenizer.ErrFormat, "RStrip id 3"},
		{"pre", Config{Tokens: []string{"a"}, Special: none, PreTokenizer: "tekken"}, ErrUnknownPreTokenizer, `"tekken"`},
	} {
		_, err := New(tc.cfg)
		require.ErrorIs(t, err, tc.want, tc.name)
		assert.Contains(t, err.Error(), tc.text, tc.name)
	}
}

// TestPreTokenizerNames checks that every name llama.cpp gives its splitters
// builds, and that "" means "default".
func TestPreTokenizerNames(t *testing.T) {
	for _, name := range PreTokenizers() {
		_, err := newPreTokenizer(name)
		require.NoError(t, err, name)
	}
	tok, err := New(Config{Tokens: byteVocab(), Special: tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: -1}})
	require.NoError(t, err)
	assert.Equal(t, "default", tok.PreTokenizer())
	ig, bos := LlamaCppDefaults("llama-bpe")
	assert.True(t, ig)
	assert.True(t, bos)
	ig, bos = LlamaCppDefaults("qwen2")
	assert.False(t, ig)
	assert.False(t, bos)
	ig, bos = LlamaCppDefaults("lfm2") // llama.cpp's Llama 3 group
	assert.True(t, ig)
	assert.True(t, bos)
}

// TestSpecialPartition checks how special tokens are split out, as
// llama.cpp's tokenizer_st_partition does: user-defined tokens always,
// control tokens only with ParseSpecial, longer tokens before shorter ones
// everywhere in the text, and RStrip/LStrip swallowing ASCII white space
// next to the token.
func TestSpecialPartition(t *testing.T) {
	tokens := append(byteVocab(), "<c>", "<u>", "<u>x", "<r>", "<l>")
	ctl, usr, usrx, rs, ls := 256, 257, 258, 259, 260
	types := make([]tokenizer.TokenType, len(tokens))
	for i := range types {
		types[i] = tokenizer.TokenNormal
	}
	types[ctl] = tokenizer.TokenControl
	types[usr] = tokenizer.TokenUserDefined
	types[usrx] = tokenizer.TokenUserDefined
	types[rs] = tokenizer.TokenControl
	types[ls] = tokenizer.TokenControl
	tok, err := New(Config{Tokens: tokens, Types: types, Merges: []string{}, PreTokenizer: "gpt-2",
		Special: tokenizer.Special{BOS: ctl, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: -1, AddBOS: true},
		RStrip:  []int{rs}, LStrip: []int{ls}})
	require.NoError(t, err)
	bytesOf := func(s string) []int {
		ids := []int{}
		for i := 0; i < len(s); i++ {
			ids = append(ids, int(s[i]))
		}
		return ids
	}
	cat := func(parts ...[]int) []int {
		out := []int{}
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		text  string
		parse bool
		want  []int
	}{
		{"a<c>b", false, bytesOf("a<c>b")},
		{"a<c>b", true, cat(bytesOf("a"), []int{ctl}, bytesOf("b"))},
		{"a<u>b", false, cat(bytesOf("a"), []int{usr}, bytesOf("b"))},
		{"<u>x<u>", false, []int{usrx, usr}},
		{"<r>  \t\nz", true, cat([]int{rs}, bytesOf("z"))},
		{"z \n<l>", true, cat(bytesOf("z"), []int{ls})},
		{"z \u00a0<l>", true, cat(bytesOf("z \u00a0"), []int{ls})}, // only ASCII space is stripped
		{"<c><c>", true, []int{ctl, ctl}},
	} {
		ids, err := tok.Encode(tc.text, tokenizer.EncodeOptions{ParseSpecial: tc.parse})
		require.NoError(t, err)
		assert.Equal(t, tc.want, ids, "%q parse=%v", tc.text, tc.parse)
	}
	ids, err := tok.Encode("", tokenizer.EncodeOptions{AddSpecial: true})
	require.NoError(t, err)
	assert.Equal(t, []int{ctl}, ids)
}

// TestAppendPiece checks what each token type renders as: normal tokens
// their bytes, user-defined tokens their text, control tokens nothing, ids
// out of range nothing; no space is ever dropped.
func TestAppendPiece(t *testing.T) {
	l := llama3(t)
	hello, err := l.Encode(" Hello", tokenizer.EncodeOptions{})
	require.NoError(t, err)
	require.Len(t, hello, 1)
	assert.Equal(t, " Hello", string(l.AppendPiece(nil, -1, hello[0])))
	assert.Equal(t, " Hello", string(l.AppendPiece(nil, 128000, hello[0])))
	assert.Equal(t, "<|begin_of_text|>", l.TokenText(128000))
	assert.Equal(t, tokenizer.TokenControl, l.Type(128000))
	assert.Empty(t, l.AppendPiece(nil, -1, 128000))
	assert.Equal(t, "x", string(l.AppendPiece([]byte("x"), -1, -1)))
	assert.Equal(t, "x", string(l.AppendPiece([]byte("x"), -1, l.VocabSize())))
	assert.Equal(t, "", l.TokenText(-1))
	assert.Equal(t, tokenizer.TokenUndefined, l.Type(l.VocabSize()))

	q := qwen3(t)
	ids, err := q.Encode("<think>", tokenizer.EncodeOptions{})
	require.NoError(t, err)
	require.Len(t, ids, 1)
	assert.Equal(t, tokenizer.TokenUserDefined, q.Type(ids[0]))
	assert.Equal(t, "<think>", string(q.AppendPiece(nil, -1, ids[0])))
}

// TestStreamDecoder checks that the streaming decoder over this tokenizer
// yields the text, holding back the bytes of characters that byte-level
// tokens split (each of these emoji and CJK characters spans several
// tokens).
func TestStreamDecoder(t *testing.T) {
	l := llama3(t)
	text := "Family: 👨‍👩‍👧‍👦 and flag 🏳️‍🌈 — 日本語のテキスト 𪚥"
	ids, err := l.Encode(text, tokenizer.EncodeOptions{})
	require.NoError(t, err)
	d := tokenizer.NewStreamDecoder(l)
	var sb strings.Builder
	for _, id := range ids {
		chunk := d.Add(id)
		assert.True(t, utf8.ValidString(chunk))
		sb.WriteString(chunk)
	}
	sb.WriteString(d.Flush())
	assert.Equal(t, text, sb.String())
}

// TestEncodeErrors checks that text that is not UTF-8 is refused.
func TestEncodeErrors(t *testing.T) {
	_, err := llama3(t).Encode("ab\xffc", tokenizer.EncodeOptions{})
	require.ErrorIs(t, err, tokenizer.ErrInvalidUTF8)
	assert.Contains(t, err.Error(), "offset 2")
}
