package tokenizer

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/race"
)

// TestEncodeLlama2CGolden: every string of runc_tokenizer.json encodes to
// exactly llama2.c's ids, with and without BOS, for both vocabularies.
func TestEncodeLlama2CGolden(t *testing.T) {
	g := golden.RuncTokenizerCases(t)
	for _, vocab := range []struct {
		file  string
		cases []golden.TokenizerCase
	}{{"tok512.bin", g.Tok512}, {"tokenizer.bin", g.Tok32k}} {
		tok := loadLlama2C(t, vocab.file)
		for _, c := range vocab.cases {
			ids, err := tok.Encode(c.Text, EncodeOptions{AddSpecial: true})
			require.NoError(t, err)
			assert.Equal(t, c.BOS, ids, "%s, BOS, %q", vocab.file, c.Text)
			ids, err = tok.Encode(c.Text, EncodeOptions{})
			require.NoError(t, err)
			assert.Equal(t, c.NoBOS, ids, "%s, no BOS, %q", vocab.file, c.Text)
		}
	}
}

// TestEncodeLlamaCppGolden: the GGUF path (NewSPM) reproduces llama-tokenize
// for the llama-spm and phi-3 vocabularies, in all four flag variants:
// BOS on/off (AddSpecial) and special-token parsing on/off.
func TestEncodeLlamaCppGolden(t *testing.T) {
	g := loadLlamaCppGolden(t)
	for _, vocab := range []struct {
		file string
		cfg  SPMConfig
	}{
		{"ggml-vocab-llama-spm.gguf", llamaSPMConfig(t)},
		{"ggml-vocab-phi-3.gguf", phi3Config(t)},
	} {
		tok, err := NewSPM(vocab.cfg)
		require.NoError(t, err)
		want, ok := g.Vocabs[vocab.file]
		require.True(t, ok, vocab.file)
		assert.Equal(t, want.AddBOSByDefault, tok.Special().AddBOS)
		for _, variant := range []struct {
			name string
			opts EncodeOptions
			ids  [][]int
		}{
			{"default", EncodeOptions{AddSpecial: true, ParseSpecial: true}, want.Default},
			{"no_bos", EncodeOptions{ParseSpecial: true}, want.NoBOS},
			{"no_parse_special", EncodeOptions{AddSpecial: true}, want.NoParseSpecial},
			{"no_bos_no_parse_special", EncodeOptions{}, want.NoBOSNoParseSpecial},
		} {
			require.Len(t, variant.ids, len(g.Strings))
			for i, s := range g.Strings {
				ids, err := tok.Encode(s, variant.opts)
				require.NoError(t, err)
				assert.Equal(t, variant.ids[i], nonNil(ids), "%s %s %q", vocab.file, variant.name, s)
			}
		}
	}
}

// nonNil makes an empty result compare equal to the golden [].
func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

// TestEncodeLlamaCppUpstreamVectors: llama.cpp's own test vectors for the
// llama-spm vocabulary (models/ggml-vocab-llama-spm.gguf.inp/.out, encoded
// with add_special=false, parse_special=false).
func TestEncodeLlamaCppUpstreamVectors(t *testing.T) {
	inputs := strings.Split(string(readTestdata(t, "ggml-vocab-llama-spm.gguf.inp")), "\n__ggml_vocab_test__\n")
	outputs := strings.Split(string(readTestdata(t, "ggml-vocab-llama-spm.gguf.out")), "\n")
	require.Equal(t, "", inputs[len(inputs)-1])
	require.Equal(t, "", outputs[len(outputs)-1])
	inputs, outputs = inputs[:len(inputs)-1], outputs[:len(outputs)-1]
	require.Len(t, outputs, len(inputs))

	tok, err := NewSPM(llamaSPMConfig(t))
	require.NoError(t, err)
	for i, in := range inputs {
		want := []int{}
		for _, f := range strings.Fields(outputs[i]) {
			id, err := strconv.Atoi(f)
			require.NoError(t, err)
			want = append(want, id)
		}
		ids, err := tok.Encode(in, EncodeOptions{})
		require.NoError(t, err)
		assert.Equal(t, want, nonNil(ids), "%q", in)
	}
}

// TestEncodeMatchesNaive compares the heap-based merge with llama2.c's
// rescanning algorithm on random text mixing ASCII, spaces, accents, CJK and
// emoji, for both llama2.c vocabularies.
func TestEncodeMatchesNaive(t *testing.T) {
	alphabet := []string{"a", "e", "t", "h", "s", "n", " ", " ", "  ", "\n", ".", ",", "'", "é", "ß", "日", "本", "😀", "\u0301", "Th", "the", "ing"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, file := range []string{"tok512.bin", "tokenizer.bin"} {
		data := readTestdata(t, file)
		entries, _ := parseLlama2CNaive(t, data)
		naive := newNaiveLlama2C(entries)
		tok, err := LoadLlama2C(data)
		require.NoError(t, err)
		for range 100 {
			var sb strings.Builder
			for range rng.IntN(40) {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			text := sb.String()
			ids, err := tok.Encode(text, EncodeOptions{AddSpecial: true})
			require.NoError(t, err)
			require.Equal(t, naive.encode(text, true), ids, "%s %q", file, text)
		}
	}
}

// FuzzEncodeMatchesNaive: the same comparison on fuzzed text with tok512.
func FuzzEncodeMatchesNaive(f *testing.F) {
	data := readTestdata(f, "tok512.bin")
	entries, _ := parseLlama2CNaive(f, data)
	naive := newNaiveLlama2C(entries)
	tok, err := LoadLlama2C(data)
	require.NoError(f, err)
	f.Add("Once upon a time")
	f.Add("  two  spaces ")
	f.Add("日本語 😀 e\u0301")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) || len(text) > 512 {
			return
		}
		ids, err := tok.Encode(text, EncodeOptions{})
		require.NoError(t, err)
		require.Equal(t, naive.encode(text, false), ids)
	})
}

// TestEncodeParseSpecial: "<s>hello</s>" with and without ParseSpecial.
// Parsed, the control tokens become their ids and the text after "<s>"
// gets the dummy prefix, as it would at the start of a text (llama.cpp's
// rule), so the ids are BOS, BOS, Encode("hello"), EOS. Not parsed, the text
// is characters, exactly as llama2.c (which has no special parsing) encodes it.
func TestEncodeParseSpecial(t *testing.T) {
	data := readTestdata(t, "tok512.bin")
	entries, _ := parseLlama2CNaive(t, data)
	naive := newNaiveLlama2C(entries)
	tok, err := LoadLlama2C(data)
	require.NoError(t, err)
	hello, err := tok.Encode("hello", EncodeOptions{})
	require.NoError(t, err)

	ids, err := tok.Encode("<s>hello</s>", EncodeOptions{AddSpecial: true, ParseSpecial: true})
	require.NoError(t, err)
	want := append(append([]int{1, 1}, hello...), 2)
	assert.Equal(t, want, ids)

	ids, err = tok.Encode("<s>hello</s>", EncodeOptions{AddSpecial: true})
	require.NoError(t, err)
	assert.Equal(t, naive.encode("<s>hello</s>", true), ids)
	assert.NotContains(t, ids[1:], 1)
	assert.NotContains(t, ids, 2)

	// The unknown token's text is special too, like in llama.cpp.
	ids, err = tok.Encode("<unk>", EncodeOptions{ParseSpecial: true})
	require.NoError(t, err)
	assert.Equal(t, []int{0}, ids)
}

// TestEncodeUserDefinedWithoutParseSpecial: a user-defined token is split out
// of text even without ParseSpecial (llama.cpp, and Hugging Face tokenizers),
// and the text after it gets the dummy prefix.
func TestEncodeUserDefinedWithoutParseSpecial(t *testing.T) {
	cfg := SPMConfig{
		Tokens:         []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "▁a", "<tag>", "<", "t", "g", ">"},
		Scores:         []float32{0, 0, 0, -1, -2, -3, -4, 0, -5, -6, -7, -8},
		Types:          []TokenType{TokenUnknown, TokenControl, TokenControl, 1, 1, 1, 1, TokenUserDefined, 1, 1, 1, 1},
		Special:        Special{BOS: 1, EOS: 2, UNK: 0, EOT: -1, PAD: -1, SEP: -1, AddBOS: true},
		AddSpacePrefix: true,
	}
	tok, err := NewSPM(cfg)
	require.NoError(t, err)
	for _, opts := range []EncodeOptions{{}, {ParseSpecial: true}} {
		ids, err := tok.Encode("a<tag>b", opts)
		require.NoError(t, err)
		// "▁a", then <tag>, then "b" with its prefix: "▁" "b".
		assert.Equal(t, []int{6, 7, 3, 5}, ids)
	}
	// An LStrip/RStrip token swallows the whitespace around it.
	cfg.LStrip, cfg.RStrip = []int{7}, []int{7}
	tok, err = NewSPM(cfg)
	require.NoError(t, err)
	ids, err := tok.Encode("a \t<tag>\n b", EncodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{6, 7, 3, 5}, ids)
	ids, err = tok.Encode("<tag> ", EncodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{7}, ids)
}

// TestEncodeEdgeCases: empty text, invalid UTF-8, missing byte fallback.
func TestEncodeEdgeCases(t *testing.T) {
	tok := loadLlama2C(t, "tok512.bin")
	ids, err := tok.Encode("", EncodeOptions{})
	require.NoError(t, err)
	assert.Empty(t, ids)
	ids, err = tok.Encode("", EncodeOptions{AddSpecial: true})
	require.NoError(t, err)
	assert.Equal(t, []int{1}, ids)

	for _, bad := range []string{"\xff", "ab\xc3", "\xed\xa0\x80", "ok \xe2\x82"} {
		_, err := tok.Encode(bad, EncodeOptions{})
		require.ErrorIs(t, err, ErrInvalidUTF8, "%q", bad)
	}
	_, err = tok.Encode("ab\xc3", EncodeOptions{})
	assert.ErrorContains(t, err, "offset 2")

	// Without byte tokens a missing character is one UNK, or an error
	// without UNK either.
	cfg := SPMConfig{
		Tokens:         []string{"<unk>", "▁", "a"},
		Special:        Special{BOS: -1, EOS: -1, UNK: 0, EOT: -1, PAD: -1, SEP: -1},
		AddSpacePrefix: true,
	}
	small, err := NewSPM(cfg)
	require.NoError(t, err)
	ids, err = small.Encode("a€a", EncodeOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 0, 2}, ids)
	cfg.Special.UNK = -1
	small, err = NewSPM(cfg)
	require.NoError(t, err)
	_, err = small.Encode("a€", EncodeOptions{})
	require.ErrorIs(t, err, ErrNoToken)
}

// TestNewSPMRejectsBadConfig: inconsistent or out-of-range data is ErrFormat.
func TestNewSPMRejectsBadConfig(t *testing.T) {
	valid := func() SPMConfig {
		return SPMConfig{
			Tokens:  []string{"<unk>", "<s>", "</s>", "<0x41>", "▁a"},
			Scores:  []float32{0, 0, 0, 0, -1},
			Types:   []TokenType{TokenUnknown, TokenControl, TokenControl, TokenByte, TokenNormal},
			Special: Special{BOS: 1, EOS: 2, UNK: 0, EOT: -1, PAD: -1, SEP: -1, AddBOS: true},
		}
	}
	_, err := NewSPM(valid())
	require.NoError(t, err)
	for name, mutate := range map[string]func(*SPMConfig){
		"no tokens":         func(c *SPMConfig) { c.Tokens, c.Scores, c.Types = nil, nil, nil },
		"short scores":      func(c *SPMConfig) { c.Scores = c.Scores[:2] },
		"long types":        func(c *SPMConfig) { c.Types = append(c.Types, TokenNormal) },
		"type 7":            func(c *SPMConfig) { c.Types[4] = 7 },
		"negative type":     func(c *SPMConfig) { c.Types[4] = -1 },
		"NaN score":         func(c *SPMConfig) { c.Scores[4] = float32(math.NaN()) },
		"BOS past end":      func(c *SPMConfig) { c.Special.BOS = 5 },
		"EOT below -1":      func(c *SPMConfig) { c.Special.EOT = -2 },
		"AddBOS sans BOS":   func(c *SPMConfig) { c.Special.BOS = -1 },
		"AddEOS sans EOS":   func(c *SPMConfig) { c.Special.EOS, c.Special.AddEOS = -1, true },
		"bad byte token":    func(c *SPMConfig) { c.Tokens[3] = "<0xZZ>" },
		"RStrip past end":   func(c *SPMConfig) { c.RStrip = []int{9} },
		"LStrip negative":   func(c *SPMConfig) { c.LStrip = []int{-1} },
		"bad space marker":  func(c *SPMConfig) { c.SpaceMarker = "\xff" },
		"long space marker": func(c *SPMConfig) { c.SpaceMarker = "__" },
	} {
		cfg := valid()
		mutate(&cfg)
		_, err := NewSPM(cfg)
		require.ErrorIs(t, err, ErrFormat, name)
	}
}

// TestNewSPMEmptyPiece: llama.cpp renames an empty piece "[EMPTY_<id>]".
func TestNewSPMEmptyPiece(t *testing.T) {
	tok, err := NewSPM(SPMConfig{Tokens: []string{"a", ""}, Special: Special{BOS: -1, EOS: -1, UNK: -1, EOT: -1, PAD: -1, SEP: -1}})
	require.NoError(t, err)
	assert.Equal(t, "[EMPTY_1]", tok.TokenText(1))
}

// TestAppendPiece: how each kind of token renders.
func TestAppendPiece(t *testing.T) {
	tok := loadLlama2C(t, "tok512.bin")
	entries, _ := parseLlama2CNaive(t, readTestdata(t, "tok512.bin"))
	// Byte tokens are their byte, as llama2.c's decode maps <0xXX>.
	var want, got []byte
	for b := range 256 {
		want = append(want, byte(b))
		got = tok.AppendPiece(got, -1, 3+b)
	}
	assert.Equal(t, want, got)
	// Control and unknown tokens render as nothing.
	for _, id := range []int{0, 1, 2, -1, tok.VocabSize()} {
		assert.Empty(t, tok.AppendPiece(nil, -1, id), "id %d", id)
	}
	// Normal pieces are the file's text (llama2.c spells spaces ' '); after
	// BOS one leading space goes, as llama2.c's decode drops it.
	for id := 259; id < len(entries); id++ {
		text := entries[id].text
		if string(tok.AppendPiece(nil, -1, id)) != text || string(tok.AppendPiece(nil, 5, id)) != text ||
			string(tok.AppendPiece(nil, 1, id)) != strings.TrimPrefix(text, " ") {
			t.Errorf("id %d (%q) renders %q, after BOS %q", id, text, tok.AppendPiece(nil, -1, id), tok.AppendPiece(nil, 1, id))
		}
	}
	// A byte token for ' ' after BOS keeps its space: llama2.c strips only
	// pieces whose text starts with a space.
	assert.Equal(t, " ", string(tok.AppendPiece(nil, 1, 3+' ')))

	// GGUF vocabularies: the marker becomes a space; user-defined tokens
	// render verbatim.
	gguf, err := NewSPM(phi3Config(t))
	require.NoError(t, err)
	for _, id := range []int{450, 15043, 29871, 1678} {
		want := strings.ReplaceAll(gguf.TokenText(id), SpaceMarker, " ")
		assert.Equal(t, want, string(gguf.AppendPiece(nil, -1, id)))
		assert.Equal(t, want[1:], string(gguf.AppendPiece(nil, 1, id)))
	}
	assert.Equal(t, "</s>", string(gguf.AppendPiece(nil, -1, 2)))
	assert.Empty(t, gguf.AppendPiece(nil, -1, 32000))

	// Without the dummy prefix nothing is stripped.
	cfg := phi3Config(t)
	cfg.AddSpacePrefix = false
	noPrefix, err := NewSPM(cfg)
	require.NoError(t, err)
	assert.Equal(t, " Hello", string(noPrefix.AppendPiece(nil, 1, 15043)))
}

// TestAppendPieceAllocs: AppendPiece allocates nothing when dst has room.
func TestAppendPieceAllocs(t *testing.T) {
	race.SkipAllocationCount(t)
	tok := loadLlama2C(t, "tokenizer.bin")
	dst := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		for _, id := range []int{1, 15043, 29871, 3, 200, 31999} {
			dst = tok.AppendPiece(dst[:0], 1, id)
		}
	})
	assert.Zero(t, allocs)
}

// TestRoundTrip: with BOS (the dummy prefix is undone after BOS),
// Decode(Encode(s)) == s for valid UTF-8, including characters the
// vocabulary lacks, which go through byte fallback. Without BOS the dummy
// prefix stays: Decode(Encode(s)) == " " + s for non-empty s.
func TestRoundTrip(t *testing.T) {
	g := golden.RuncTokenizerCases(t)
	texts := []string{"", "e\u0301 combining", "👩🏽‍🚀 astronaut", "中文字符 and 日本語", "\x00\x01\x7f",
		"trailing  ", "  leading", "mixed\ttabs\r\nCRLF", "<s> looks special </s>", "\u2581marker"}
	for _, c := range g.Tok512 {
		texts = append(texts, c.Text)
	}
	for _, file := range []string{"tok512.bin", "tokenizer.bin"} {
		tok := loadLlama2C(t, file)
		for _, s := range texts {
			checkRoundTrip(t, tok, s)
		}
	}
}

func checkRoundTrip(t *testing.T, tok *SPM, s string) {
	t.Helper()
	ids, err := tok.Encode(s, EncodeOptions{AddSpecial: true})
	require.NoError(t, err)
	got, err := Decode(tok, ids)
	require.NoError(t, err)
	require.Equal(t, s, got)

	ids, err = tok.Encode(s, EncodeOptions{})
	require.NoError(t, err)
	got, err = Decode(tok, ids)
	require.NoError(t, err)
	want := s
	if s != "" {
		want = " " + s
	}
	require.Equal(t, want, got)
}

// FuzzRoundTrip: the round-trip rule of TestRoundTrip on fuzzed text, and
// the streaming decoder agrees with Decode.
func FuzzRoundTrip(f *testing.F) {
	tok := loadLlama2C(f, "tok512.bin")
	for _, c := range golden.RuncTokenizerCases(f).Tok512 {
		f.Add(c.Text)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			_, err := tok.Encode(s, EncodeOptions{})
			require.ErrorIs(t, err, ErrInvalidUTF8)
			return
		}
		checkRoundTrip(t, tok, s)
		ids, err := tok.Encode(s, EncodeOptions{AddSpecial: true})
		require.NoError(t, err)
		require.Equal(t, s, streamAll(NewStreamDecoder(tok), ids))
	})
}

// TestEncodeLongText: a 100 KB prompt encodes quickly (the merge is
// O(n log n)) and round-trips; a 1 KB one matches the O(n²) reference.
func TestEncodeLongText(t *testing.T) {
	story := string(readTestdata(t, "stories_en.txt")) + "日本語 😀 "
	data := readTestdata(t, "tokenizer.bin")
	entries, _ := parseLlama2CNaive(t, data)
	naive := newNaiveLlama2C(entries)
	tok, err := LoadLlama2C(data)
	require.NoError(t, err)

	medium := story[:1200] + "日本語 😀 "
	ids, err := tok.Encode(medium, EncodeOptions{AddSpecial: true})
	require.NoError(t, err)
	require.Equal(t, naive.encode(medium, true), ids)

	long := strings.Repeat(story, 100_000/len(story)+1)
	ids, err = tok.Encode(long, EncodeOptions{AddSpecial: true})
	require.NoError(t, err)
	got, err := Decode(tok, ids)
	require.NoError(t, err)
	require.Equal(t, long, got)
}

// benchText is about n bytes of English.
func benchText(b *testing.B, n int) string {
	story := string(readTestdata(b, "stories_en.txt"))
	return strings.Repeat(story, n/len(story)+1)[:n]
}

func BenchmarkEncode10KB(b *testing.B) {
	tok := loadLlama2C(b, "tokenizer.bin")
	text := benchText(b, 10_000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.Encode(text, EncodeOptions{AddSpecial: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode100KB(b *testing.B) {
	tok := loadLlama2C(b, "tokenizer.bin")
	text := benchText(b, 100_000)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.Encode(text, EncodeOptions{AddSpecial: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadLlama2C32k(b *testing.B) {
	data := readTestdata(b, "tokenizer.bin")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := LoadLlama2C(data); err != nil {
			b.Fatal(err)
		}
	}
}
