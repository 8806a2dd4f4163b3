package wordpiece

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/race"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// tinyTokens is a vocabulary in the GGUF spelling: word-initial pieces
// after "▁", continuations bare.
var tinyTokens = []string{
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", // 0-4
	"▁hello", "▁world", "▁un", "aff", "able", // 5-9
	"▁,", "▁!", "▁$", "▁cafe", "▁漢", // 10-14
	"▁字", "▁a", "▁x", "y", "▁Hello", // 15-19
	"▁café", "<tool>", // 20-21
}

// tiny is a WordPiece over tinyTokens, BERT's special ids, [PAD] to [MASK]
// control tokens and <tool> a user-defined one.
func tiny(t *testing.T, lowercase, stripAccents bool) *WordPiece {
	t.Helper()
	types := make([]tokenizer.TokenType, len(tinyTokens))
	for i := range types {
		types[i] = tokenizer.TokenNormal
	}
	for i := range 5 {
		types[i] = tokenizer.TokenControl
	}
	types[21] = tokenizer.TokenUserDefined
	tok, err := New(Config{
		Tokens: tinyTokens, Types: types, Lowercase: lowercase, StripAccents: stripAccents,
		Special: tokenizer.Special{BOS: 2, EOS: -1, EOT: -1, UNK: 1, PAD: 0, SEP: 3, AddBOS: true, AddSEP: true},
	})
	require.NoError(t, err)
	return tok
}

// TestEncodeRules checks each rule of llama.cpp's WordPiece on a tiny
// vocabulary.
func TestEncodeRules(t *testing.T) {
	uncased, cased := tiny(t, true, true), tiny(t, false, false)
	for _, tc := range []struct {
		name string
		tok  *WordPiece
		text string
		opts tokenizer.EncodeOptions
		want []int
	}{
		{"words", uncased, "hello world", tokenizer.EncodeOptions{}, []int{5, 6}},
		{"white space and case", uncased, "  Hello\tWORLD\u3000\n", tokenizer.EncodeOptions{}, []int{5, 6}},
		{"longest match", uncased, "unaffable", tokenizer.EncodeOptions{}, []int{7, 8, 9}},
		{"punctuation", uncased, "hello,world!", tokenizer.EncodeOptions{}, []int{5, 10, 6, 11}},
		{"ASCII symbol", uncased, "$hello", tokenizer.EncodeOptions{}, []int{12, 5}},
		{"other symbols join words", uncased, "a€", tokenizer.EncodeOptions{}, []int{1}},
		{"accent stripped", uncased, "CAFÉ", tokenizer.EncodeOptions{}, []int{13}},
		{"combining mark dropped", uncased, "cafe\u0301", tokenizer.EncodeOptions{}, []int{13}},
		{"CJK", uncased, "漢字", tokenizer.EncodeOptions{}, []int{14, 15}},
		{"format character dropped", uncased, "hel\u200Blo", tokenizer.EncodeOptions{}, []int{5}},
		{"NUL and U+FFFD dropped", uncased, "he\x00l\uFFFDlo", tokenizer.EncodeOptions{}, []int{5}},
		{"a word without pieces", uncased, "xyz hello", tokenizer.EncodeOptions{}, []int{1, 5}},
		{"a word partly matched", uncased, "helloworld", tokenizer.EncodeOptions{}, []int{1}},
		{"continuation", uncased, "xy", tokenizer.EncodeOptions{}, []int{17, 18}},
		{"long word", uncased, strings.Repeat("y", 1000), tokenizer.EncodeOptions{}, []int{1}},
		{"empty", uncased, "", tokenizer.EncodeOptions{}, []int{}},
		{"only spaces", uncased, " \n\t ", tokenizer.EncodeOptions{}, []int{}},
		{"add special", uncased, "hello", tokenizer.EncodeOptions{AddSpecial: true}, []int{2, 5, 3}},
		{"add special, empty", uncased, "", tokenizer.EncodeOptions{AddSpecial: true}, []int{2, 3}},
		{"special text", uncased, "[CLS]hello", tokenizer.EncodeOptions{}, []int{1, 1, 1, 5}},
		{"special parsed", uncased, "[CLS]hello[SEP]", tokenizer.EncodeOptions{ParseSpecial: true}, []int{2, 5, 3}},
		{"user-defined", uncased, "hello<tool>world", tokenizer.EncodeOptions{}, []int{5, 21, 6}},
		{"cased", cased, "Hello hello", tokenizer.EncodeOptions{}, []int{19, 5}},
		{"cased keeps accents", cased, "café cafe\u0301", tokenizer.EncodeOptions{}, []int{20, 1}},
	} {
		ids, err := tc.tok.Encode(tc.text, tc.opts)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, ids, tc.name)
	}
}

// TestEncodeErrors: invalid UTF-8 is refused, and so is what llama.cpp
// cannot do (a word without pieces and no unknown token, special tokens to
// add that the vocabulary lacks).
func TestEncodeErrors(t *testing.T) {
	tok := tiny(t, true, true)
	_, err := tok.Encode("hello\xffworld", tokenizer.EncodeOptions{})
	require.ErrorIs(t, err, tokenizer.ErrInvalidUTF8)
	assert.ErrorContains(t, err, "offset 5")

	cfg := Config{Tokens: tinyTokens, Special: tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: 3}}
	none, err := New(cfg)
	require.NoError(t, err)
	_, err = none.Encode("hello xyz", tokenizer.EncodeOptions{})
	require.ErrorIs(t, err, tokenizer.ErrNoToken)
	assert.ErrorContains(t, err, "xyz")
	_, err = none.Encode("hello", tokenizer.EncodeOptions{AddSpecial: true})
	require.ErrorIs(t, err, tokenizer.ErrNoToken)
	assert.ErrorContains(t, err, "BOS -1")
}

// TestNewErrors: malformed configurations wrap tokenizer.ErrFormat and say
// what is wrong.
func TestNewErrors(t *testing.T) {
	none := tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: -1}
	for _, tc := range []struct {
		name string
		cfg  Config
		msg  string
	}{
		{"empty", Config{Special: none}, "0 tokens"},
		{"types", Config{Tokens: []string{"a"}, Types: []tokenizer.TokenType{1, 1}, Special: none}, "2 token types"},
		{"type range", Config{Tokens: []string{"a"}, Types: []tokenizer.TokenType{7}, Special: none}, "type 7"},
		{"byte token", Config{Tokens: []string{"a"}, Types: []tokenizer.TokenType{tokenizer.TokenByte}, Special: none}, "byte token"},
		{"SEP range", Config{Tokens: []string{"a"}, Special: tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: 1}}, "SEP id 1"},
		{"strip range", Config{Tokens: []string{"a"}, Special: none, RStrip: []int{3}}, "RStrip id 3"},
	} {
		_, err := New(tc.cfg)
		require.ErrorIs(t, err, tokenizer.ErrFormat, tc.name)
		assert.ErrorContains(t, err, tc.msg, tc.name)
	}
}

// TestNewEmptyAndDuplicateTokens: an empty entry is spelled "[EMPTY_<id>]",
// and of equal texts the last id is the one encoding gives, as in llama.cpp.
func TestNewEmptyAndDuplicateTokens(t *testing.T) {
	tok, err := New(Config{Tokens: []string{"[UNK]", "", "▁a", "▁a"}, Special: tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: 0, PAD: -1, SEP: -1}})
	require.NoError(t, err)
	assert.Equal(t, "[EMPTY_1]", tok.TokenText(1))
	ids, err := tok.Encode("a", tokenizer.EncodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{3}, ids)
}

// TestAppendPiece checks what each kind of token renders as, and that
// rendering allocates nothing when dst has room.
func TestAppendPiece(t *testing.T) {
	tok := tiny(t, true, true)
	for id, want := range map[int]string{5: " hello", 8: "aff", 2: "", 1: "", 21: "<tool>", 14: " 漢", -1: "", 99: ""} {
		assert.Equal(t, want, string(tok.AppendPiece(nil, -1, id)), "id %d", id)
	}
	text, err := tokenizer.Decode(tok, []int{2, 7, 8, 9, 10, 5, 11, 3})
	require.NoError(t, err)
	assert.Equal(t, " unaffable , hello !", text)
	if !race.Enabled { // the race detector allocates
		buf := make([]byte, 0, 64)
		assert.Zero(t, testing.AllocsPerRun(100, func() { buf = tok.AppendPiece(buf[:0], -1, 5) }))
	}
}

// TestDetokenize checks llama.cpp's clean-up of spaces, pass by pass, on
// texts as a WordPiece encoding leaves them (expected results worked out
// from llama_detokenize's code; TestWordPieceAsLlamaCpp in engine/vocab
// compares with llama.cpp itself).
func TestDetokenize(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "",
		" hello , world !":      " hello, world!",
		" . starts":             ". starts",
		" what ? no .":          " what? no.",
		" don ' t":              " don't",
		" it ' s":               " it's",
		" ' ' x":                "'' x",
		" i 'm we 're you 've":  " i'm we're you've",
		" they 'll he 'd ca 't": " they 'll he 'd ca 't",
		" '":                    " '",
	} {
		assert.Equal(t, want, string(cleanSpaces([]byte(in))), "%q", in)
	}
	tok := tiny(t, true, true)
	text, err := tok.Detokenize([]int{2, 5, 10, 6, 11, 3})
	require.NoError(t, err)
	assert.Equal(t, " hello, world!", text)
	_, err = tok.Detokenize([]int{5, 22})
	require.ErrorIs(t, err, tokenizer.ErrTokenOutOfRange)
}

// TestClasses spot-checks the lookups of llama.cpp's tables against entries
// of its src/unicode-data.cpp, and the ASCII fast paths against the general
// ones.
func TestClasses(t *testing.T) {
	assert.Equal(t, 'σ', lower('Σ'))      // {0x0003A3, 0x0003C3}
	assert.Equal(t, 'i', lower('İ'))      // {0x000130, 0x000069}: one code point, not Unicode's two
	assert.Equal(t, 'ǆ', lower('ǅ'))      // {0x0001C5, 0x0001C6}
	assert.Equal(t, 'e', nfd('ë'))        // {0x0000E8, 0x0000EB, 0x000065}
	assert.Equal(t, 'I', nfd('İ'))        // {0x000130, 0x000130, 0x000049}
	assert.Equal(t, 'ß', nfd('ß'))        // no entry
	assert.Equal(t, uint8(0), class('Σ')) // {0x0003A3, 0x0004}: a letter
	assert.Equal(t, uint8(classAccent), class(0x301))
	assert.Equal(t, uint8(classSpace), class(0x3000))
	assert.Equal(t, uint8(classControl), class(0x200B))
	assert.Equal(t, uint8(classSpace|classControl), class('\n'))
	assert.True(t, isChinese(0x2B920) && !isChinese(0x2B820))
	for r := rune(0); r < 0x80; r++ {
		k := 0
		for k+1 < len(classRanges) && rune(classRanges[k+1]>>8) <= r {
			k++
		}
		assert.Equal(t, uint8(classRanges[k]), class(r), "%U", r)
	}
}

// TestEncodeAllocs: a warm Encode of ordinary text allocates only the ids.
func TestEncodeAllocs(t *testing.T) {
	race.SkipAllocationCount(t)
	tok := bge(t)
	text := "The quick brown fox jumps over the lazy dog, and then it naps: 42 times!"
	_, err := tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
	require.NoError(t, err)
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() {
		_, _ = tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
	}), 1.0)
}
