//go:build !js

package vocab

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/longtest"
	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/wordpiece"
)

// wpmCase is one vocabulary file of TestWordPieceAsLlamaCpp.
type wpmCase struct {
	name  string
	data  []byte   // the GGUF file
	texts []string // what both tokenize
	// parse also tokenizes with ParseSpecial; detokenize compares
	// llama_detokenize with Detokenize.
	parse, detokenize bool
}

// TestWordPieceAsLlamaCpp tokenizes the same texts with the llama.cpp build
// of node-llama-cpp (pinned in package.json) and with package wordpiece, on
// the same GGUF files, and requires the same ids for every text, with and
// without ParseSpecial, and with AddSpecial the same ids between llama.cpp's
// BOS and SEP (which node-llama-cpp reports; its llama_tokenize never adds
// them): the bert-bge vocabulary as it is, with each setting of the
// tokenizer.ggml.normalizer keys (lowercase, strip_accents) and with other
// special ids and flags; and a vocabulary of a token for every code point of
// planes 0 to 3 and of U+E0000 to U+E0FFF (tags, variation selectors), alone
// and after "▁", under two normalizer settings, which shows, code point by
// code point, that the character classes, the lower-case map and the "NFD"
// map are llama.cpp's. The texts are
// llama.cpp's test-tokenizer-0 inputs, the seeded random strings of
// tokenizer/bpe's reference, the llama-tokenize golden strings and seeded
// random strings of this test (accents, combining marks, CJK, emoji,
// punctuation, white space of every kind, control and format characters,
// special-token texts, long words: in make test 400 of the 2000, in make
// test-long all of them; the reference's strings are sampled as
// TestPreTokenizersAsLlamaCpp samples them). For the bge file as it is, the
// text of llama_detokenize must be Detokenize's too.
func TestWordPieceAsLlamaCpp(t *testing.T) {
	r := llamacppref.Need(t)
	texts := wordPieceTestTexts(t)
	bge := readVocabGGUF(t, "bert-bge")
	lower, strip := gguf.ValueOf(false), gguf.ValueOf(true)
	cases := []wpmCase{
		{name: "bert-bge", data: bge, texts: texts, parse: true, detokenize: true},
		{name: "bge-cased", data: setKVs(t, bge, keyLowercase, lower), texts: texts, parse: true},
		{name: "bge-cased-stripped", data: setKVs(t, bge, keyLowercase, lower, keyStripAccents, strip), texts: texts},
		{name: "bge-accents", data: setKVs(t, bge, keyStripAccents, gguf.ValueOf(false)), texts: texts},
		{name: "bge-ids", data: setKVs(t, bge, keyEOS, gguf.ValueOf(uint32(102)), keySEP, gguf.ValueOf(uint32(103)),
			keyBOS, gguf.ValueOf(uint32(0)), keyAddBOS, gguf.ValueOf(false), keyAddEOS, gguf.ValueOf(true)), texts: texts, parse: true},
	}
	every, everyTexts := everyCodePoint(t, bge)
	cases = append(cases,
		wpmCase{name: "every-code-point", data: every, texts: everyTexts},
		wpmCase{name: "every-code-point-cased", data: setKVs(t, every, keyLowercase, lower), texts: everyTexts})

	dir := t.TempDir()
	var jobs []llamacppref.Job
	for _, c := range cases {
		path := filepath.Join(dir, c.name+".gguf")
		require.NoError(t, os.WriteFile(path, c.data, 0o644))
		jobs = append(jobs, llamacppref.Job{Model: path, Texts: c.texts, Detokenize: c.detokenize})
		if c.parse {
			jobs = append(jobs, llamacppref.Job{Model: path, Texts: c.texts, ParseSpecial: true})
		}
	}
	outs, err := r.Run(jobs) // one Node.js process for them all
	require.NoError(t, err)
	compared := 0
	for _, c := range cases {
		f, err := gguf.Parse(c.data)
		require.NoError(t, err)
		tok, err := FromGGUF(f)
		require.NoError(t, err, c.name)
		for _, parse := range []bool{false, true} {
			if parse && !c.parse {
				continue
			}
			out := outs[0]
			outs = outs[1:]
			t.Run(c.name+map[bool]string{false: "", true: "-parse-special"}[parse], func(t *testing.T) {
				require.Empty(t, out.Error, "llama.cpp refused the vocabulary")
				compareWordPiece(t, tok.(*wordpiece.WordPiece), c, out, parse)
			})
			compared += len(c.texts)
		}
	}
	t.Logf("%d texts tokenized by both (%d per bge job, %d of all the code points), each also with AddSpecial", compared, len(texts), len(everyTexts))
}

// compareWordPiece checks one job's results.
func compareWordPiece(t *testing.T, tok *wordpiece.WordPiece, c wpmCase, out llamacppref.Output, parse bool) {
	sp := tok.Special()
	assert.Equal(t, llamacppref.VocabSpecial{BOS: sp.BOS, EOS: sp.EOS, SEP: sp.SEP, AddBOS: sp.AddBOS, AddEOS: sp.AddEOS}, out.Special)
	require.Len(t, out.Tokenized, len(c.texts))
	differ := 0
	for i, text := range c.texts {
		got, err := tok.Encode(text, tokenizer.EncodeOptions{ParseSpecial: parse})
		require.NoError(t, err)
		ok := assert.Equal(t, out.Tokenized[i], got, "text %d %q", i, text)
		withSpecial, err := tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: parse})
		require.NoError(t, err)
		ok = assert.Equal(t, slices.Concat([]int{out.Special.BOS}, out.Tokenized[i], []int{out.Special.SEP}), withSpecial, "text %d %q with AddSpecial", i, text) && ok
		if c.detokenize && !parse {
			text, err := tok.Detokenize(out.Tokenized[i])
			require.NoError(t, err)
			ok = assert.Equal(t, out.Detokenized[i], text, "text %d: the text of %v", i, out.Tokenized[i]) && ok
		}
		if !ok {
			if differ++; differ == 10 {
				t.Fatal("10 texts differ; stopping")
			}
		}
	}
}

// everyCodePoint is the bge file with another vocabulary: [PAD], [UNK],
// [CLS], [SEP] and [MASK] (control tokens, named by the special-id keys),
// then each code point of planes 0 to 3 and U+E0000 to U+E0FFF (not the
// surrogates or NUL) after "▁" and alone, so that a word's ids spell each of
// its code points as normalised; and texts that hold all those code points,
// a few thousand at a time.
func everyCodePoint(t *testing.T, bge []byte) (data []byte, texts []string) {
	t.Helper()
	tokens := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	types := []int32{3, 3, 3, 3, 3}
	var sb strings.Builder
	// Not NUL: llama.cpp reads token texts as C strings, so "▁\x00" would
	// be "▁" twice. WordPiece drops NUL from text anyway.
	for r := rune(1); r < 0xE1000; r++ {
		if (r >= 0xD800 && r < 0xE000) || (r >= 0x40000 && r < 0xE0000) {
			continue
		}
		c := string(r)
		tokens = append(tokens, tokenizer.SpaceMarker+c, c)
		types = append(types, 1, 1)
		sb.WriteString(c)
		if sb.Len() >= 8<<10 {
			texts = append(texts, sb.String())
			sb.Reset()
		}
	}
	texts = append(texts, sb.String())
	data = setKVs(t, bge, keyTokens, gguf.ArrayOf(tokens), keyTokenType, gguf.ArrayOf(types),
		keyPAD, gguf.ValueOf(uint32(0)), keyUNK, gguf.ValueOf(uint32(1)), keyBOS, gguf.ValueOf(uint32(2)),
		keySEP, gguf.ValueOf(uint32(3)), "tokenizer.ggml.mask_token_id", gguf.ValueOf(uint32(4)))
	return data, texts
}

// wordPieceTestTexts are the texts TestWordPieceAsLlamaCpp tokenizes with
// the bge vocabulary.
func wordPieceTestTexts(t *testing.T) []string {
	t.Helper()
	texts := llamaCppTestTexts(t)
	data, err := os.ReadFile(filepath.Join("testdata", "tokenizer_llama_cpp.json"))
	require.NoError(t, err)
	var g golden
	require.NoError(t, json.Unmarshal(data, &g))
	texts = append(texts, g.Strings...)
	return append(texts, longtest.Every(randomBertTexts(2000), 5)...)
}

// randomBertTexts are n seeded random strings made of pieces of the kinds
// of text that WordPiece's normaliser treats differently.
func randomBertTexts(n int) []string {
	rng := rand.New(rand.NewPCG(7, 11))
	ranges := [][2]rune{
		{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'},
		{0xC0, 0x24F},                                                                      // Latin-1 letters, Latin Extended-A and -B: accented capitals and small letters
		{0x1E00, 0x1EFF},                                                                   // Latin Extended Additional
		{0x300, 0x36F},                                                                     // combining diacritical marks
		{0x370, 0x3FF}, {0x400, 0x52F}, {0x531, 0x587}, {0x10A0, 0x10FF}, {0x1C90, 0x1CBF}, // Greek, Cyrillic, Armenian, Georgian
		{0x591, 0x5F4}, {0x600, 0x6FF}, {0x900, 0x97F}, {0xE00, 0xE7F}, // Hebrew, Arabic, Devanagari, Thai
		{0x3040, 0x30FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFF00, 0xFFEF}, // kana, CJK, Hangul, halfwidth and fullwidth
		{0x20000, 0x2A6DF}, {0x2B740, 0x2B81F}, {0x2B820, 0x2B91F}, {0x2CEB0, 0x2EBEF}, {0x30000, 0x3134F}, // CJK extensions
		{0x2000, 0x206F}, {0x20A0, 0x20CF}, {0x2190, 0x22FF}, {0x2500, 0x257F}, {0x3000, 0x303F}, // punctuation, currency, arrows, maths, box drawing, CJK punctuation
		{0x1F300, 0x1FAFF}, {0x1F3FB, 0x1F3FF}, {0xFE00, 0xFE0F}, // emoji, skin tones, variation selectors
		{0x1, 0x1F}, {0x7F, 0x9F}, {0xE000, 0xE0FF}, {0xE0000, 0xE007F}, {0xFFF0, 0xFFFF}, // controls, private use, tags, specials
		{0x1D400, 0x1D7FF}, {0x10400, 0x1044F}, {0x1E900, 0x1E95F}, // mathematical letters, Deseret, Adlam (cased)
	}
	words := []string{
		"[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "[unused7]", "##ing", "▁", "▁the", "\x00", "\uFFFD", "\u200B", "\uFEFF", "\u00AD",
		" ", "  ", "\t", "\n", "\r\n", "\u00A0", "\u1680", "\u2003", "\u2028", "\u202F", "\u3000", "\u0085", "\u180E",
		"hello", "Hello", "HELLO", "running", "unbelievably", "tokenization", "naïve", "Café", "ÅNGSTRÖM", "İstanbul", "ǅ", "ß", "ﬁ", "Ω", "K",
		"don't", "it's", "we're", "I'll", " ' ", " , ", " . ", "?!", "...", "¿Qué?", "«»", "“quoted”", "$100", "a+b=c", "<tag>", "x^2", "a|b", "~",
		strings.Repeat("a", 300), strings.Repeat("xyz", 50), strings.Repeat("漢", 40), strings.Repeat("é", 60),
	}
	texts := make([]string, n)
	for i := range texts {
		var sb strings.Builder
		for range 1 + rng.IntN(24) {
			switch k := rng.IntN(10); {
			case k < 4:
				sb.WriteString(words[rng.IntN(len(words))])
			case k < 9:
				rg := ranges[rng.IntN(len(ranges))]
				for range 1 + rng.IntN(6) {
					sb.WriteRune(rg[0] + rng.Int32N(rg[1]-rg[0]+1))
				}
			default: // any code point
				r := rng.Int32N(0x110000)
				if !utf8.ValidRune(r) {
					r = 0xFFFD
				}
				sb.WriteRune(r)
			}
			if rng.IntN(3) == 0 {
				sb.WriteByte(' ')
			}
		}
		texts[i] = sb.String()
	}
	return texts
}
