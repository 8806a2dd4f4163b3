package vocab

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/bpe"
	"github.com/wasmlm/wasmlm/tokenizer/wordpiece"
)

// The vocab-only GGUF files of llama.cpp's models/ directory (commit
// c392e50), stored gzipped, with their test-tokenizer-0 vectors where
// llama.cpp has them.
var (
	bpeVocabs = []string{"deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "gpt-neox", "mpt", "refact", "starcoder"}
	spmVocabs = []string{"baichuan", "llama-spm", "phi-3"}
	wpmVocabs = []string{"bert-bge"}
)

// allVocabs are the names of every vocabulary file of testdata.
func allVocabs() []string {
	return slices.Concat(bpeVocabs, spmVocabs, wpmVocabs)
}

func loadVocab(t *testing.T, name string) tokenizer.Tokenizer {
	t.Helper()
	f, err := gguf.Parse(readVocabGGUF(t, name))
	require.NoError(t, err)
	tok, err := FromGGUF(f)
	require.NoError(t, err)
	return tok
}

// readVocabGGUF returns testdata's vocab-only GGUF file of a vocabulary.
func readVocabGGUF(t *testing.T, name string) []byte {
	t.Helper()
	gz, err := os.ReadFile(filepath.Join("testdata", "ggml-vocab-"+name+".gguf.gz"))
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	data, err := io.ReadAll(zr)
	require.NoError(t, err)
	return data
}

// readVocabTest reads llama.cpp's tests/test-tokenizer-0 files: the .inp
// strings are separated by "\n__ggml_vocab_test__\n" (after the last one
// too), the .out has one line of space-separated ids per string.
func readVocabTest(t *testing.T, base string) (texts []string, want [][]int) {
	t.Helper()
	inp, err := os.ReadFile(base + ".inp")
	require.NoError(t, err)
	out, err := os.ReadFile(base + ".out")
	require.NoError(t, err)
	texts = strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	require.Equal(t, "", texts[len(texts)-1], "the .inp file ends with a separator")
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(texts))
	for _, line := range lines {
		ids := []int{}
		for _, f := range strings.Fields(line) {
			id, err := strconv.Atoi(f)
			require.NoError(t, err)
			ids = append(ids, id)
		}
		want = append(want, ids)
	}
	return texts, want
}

// TestVocabFiles checks llama.cpp's test-tokenizer-0 vectors (add_special =
// false, parse_special = false) for every vocabulary that has them.
func TestVocabFiles(t *testing.T) {
	for _, name := range allVocabs() {
		base := filepath.Join("testdata", "ggml-vocab-"+name+".gguf")
		if _, err := os.Stat(base + ".inp"); err != nil {
			continue // baichuan and gpt-neox have no vectors upstream
		}
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			texts, want := readVocabTest(t, base)
			for i, text := range texts {
				ids, err := tok.Encode(text, tokenizer.EncodeOptions{})
				require.NoError(t, err)
				assert.Equal(t, want[i], ids, "string %d %q", i, text)
			}
		})
	}
}

// golden is shared/golden/tokenizer_llama_cpp.json: llama-tokenize output
// per vocabulary and flag variant.
type golden struct {
	Strings []string `json:"strings"`
	Vocabs  map[string]struct {
		Default             [][]int `json:"default"`
		NoBOS               [][]int `json:"no_bos"`
		NoParseSpecial      [][]int `json:"no_parse_special"`
		NoBOSNoParseSpecial [][]int `json:"no_bos_no_parse_special"`
		AddBOSByDefault     bool    `json:"add_bos_by_default"`
	} `json:"vocabs"`
}

// TestLlamaTokenizeGolden checks llama-tokenize's ids for 25 strings in the
// four flag variants, for every vocabulary. --no-bos is add_special=false;
// the default parses special tokens.
//
// The file was made with llama.cpp c392e50, whose WordPiece
// kept accent marks (\p{M}); llama.cpp drops them since it reads
// tokenizer.ggml.normalizer.strip_accents (its pull request 24371), and so
// does package wordpiece, with the llama.cpp it is held to
// (TestWordPieceAsLlamaCpp). The one string where that shows, Devanagari
// with its vowel signs and virama, is left out for bert-bge.
func TestLlamaTokenizeGolden(t *testing.T) {
	stale := map[string]int{"bert-bge": 19} // "Hello Привет مرحبا שלום नमस्ते"
	data, err := os.ReadFile(filepath.Join("testdata", "tokenizer_llama_cpp.json"))
	require.NoError(t, err)
	var g golden
	require.NoError(t, json.Unmarshal(data, &g))
	for _, name := range allVocabs() {
		t.Run(name, func(t *testing.T) {
			v, ok := g.Vocabs["ggml-vocab-"+name+".gguf"]
			require.True(t, ok)
			tok := loadVocab(t, name)
			assert.Equal(t, v.AddBOSByDefault, tok.Special().AddBOS)
			for _, variant := range []struct {
				name string
				opts tokenizer.EncodeOptions
				want [][]int
			}{
				{"default", tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}, v.Default},
				{"no_bos", tokenizer.EncodeOptions{ParseSpecial: true}, v.NoBOS},
				{"no_parse_special", tokenizer.EncodeOptions{AddSpecial: true}, v.NoParseSpecial},
				{"no_bos_no_parse_special", tokenizer.EncodeOptions{}, v.NoBOSNoParseSpecial},
			} {
				require.Len(t, variant.want, len(g.Strings), variant.name)
				for i, text := range g.Strings {
					if k, ok := stale[name]; ok && k == i {
						continue
					}
					ids, err := tok.Encode(text, variant.opts)
					require.NoError(t, err)
					if len(variant.want[i]) == 0 {
						assert.Empty(t, ids, "%s: string %d %q", variant.name, i, text)
						continue
					}
					assert.Equal(t, variant.want[i], ids, "%s: string %d %q", variant.name, i, text)
				}
			}
		})
	}
}

// TestFromGGUFTypes checks that "gpt2" vocabularies become BPE tokenizers
// with the file's pre-tokenizer, "llama" ones SPM tokenizers and "bert"
// ones WordPiece tokenizers.
func TestFromGGUFTypes(t *testing.T) {
	for _, tc := range []struct{ name, pre string }{
		{"gpt-2", "gpt-2"}, {"gpt-neox", "default"}, {"falcon", "falcon"}, {"starcoder", "starcoder"},
	} {
		b, ok := loadVocab(t, tc.name).(*bpe.BPE)
		require.True(t, ok, tc.name)
		assert.Equal(t, tc.pre, b.PreTokenizer(), tc.name)
	}
	_, ok := loadVocab(t, "llama-spm").(*tokenizer.SPM)
	assert.True(t, ok)
	_, ok = loadVocab(t, "bert-bge").(*wordpiece.WordPiece)
	assert.True(t, ok)
}

// TestWordPieceKeys checks how a "bert" file's keys set the special ids, the
// flags and the normalizer, as llama.cpp's loader reads them: BOS 101,
// UNK 100, SEP 102 (tokenizer.ggml.seperator_token_id, sic), PAD 0, add_bos
// and add_sep set unless the file's keys say otherwise, a default id the
// vocabulary is too small for dropped; lowercase unless
// tokenizer.ggml.normalizer.lowercase says otherwise, and accents stripped
// as text is lower-cased unless .strip_accents says otherwise.
// TestWordPieceAsLlamaCpp holds the ids, add_bos and add_eos (llama.cpp's
// add_sep it cannot see) and the normalizer settings to llama.cpp itself.
func TestWordPieceKeys(t *testing.T) {
	bge := readVocabGGUF(t, "bert-bge")
	tiny := gguf.NewBuilder()
	tiny.Set(keyModel, gguf.ValueOf("bert"))
	tiny.Set(keyTokens, gguf.ArrayOf([]string{"[PAD]", "▁a", "b"}))
	tinyData, err := tiny.Bytes()
	require.NoError(t, err)
	bgeSpecial := tokenizer.Special{BOS: 101, EOS: -1, EOT: -1, UNK: 100, PAD: 0, SEP: 102, AddBOS: true, AddSEP: true}
	for _, tc := range []struct {
		name                    string
		data                    []byte
		special                 tokenizer.Special
		lowercase, stripAccents bool
	}{
		{"bert-bge", bge, bgeSpecial, true, true},
		{"cased", setKVs(t, bge, keyLowercase, gguf.ValueOf(false)), bgeSpecial, false, false},
		{"cased, stripped", setKVs(t, bge, keyLowercase, gguf.ValueOf(false), keyStripAccents, gguf.ValueOf(true)), bgeSpecial, false, true},
		{"accents kept", setKVs(t, bge, keyStripAccents, gguf.ValueOf(false)), bgeSpecial, true, false},
		{"keys", setKVs(t, bge, keySEP, gguf.ValueOf(uint32(103)), keyEOS, gguf.ValueOf(uint32(102)), keyAddSEP, gguf.ValueOf(false),
			keyAddBOS, gguf.ValueOf(false), keyAddEOS, gguf.ValueOf(true), keyPAD, gguf.ValueOf(uint32(40000))),
			tokenizer.Special{BOS: 101, EOS: 102, EOT: -1, UNK: 100, PAD: 0, SEP: 103, AddEOS: true}, true, true},
		{"tiny", tinyData, tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: 0, SEP: -1, AddBOS: true, AddSEP: true}, true, true},
	} {
		f, err := gguf.Parse(tc.data)
		require.NoError(t, err, tc.name)
		tok, err := FromGGUF(f)
		require.NoError(t, err, tc.name)
		w := tok.(*wordpiece.WordPiece)
		assert.Equal(t, tc.special, w.Special(), tc.name)
		lowercase, stripAccents := w.Normalization()
		assert.Equal(t, []bool{tc.lowercase, tc.stripAccents}, []bool{lowercase, stripAccents}, tc.name)
	}
}

// setKVs returns the GGUF file data with the keys set, given as key, value
// pairs.
func setKVs(t *testing.T, data []byte, kvs ...any) []byte {
	t.Helper()
	for i := 0; i < len(kvs); i += 2 {
		var err error
		data, err = modelgen.SetKV(data, kvs[i].(string), kvs[i+1].(gguf.Value))
		require.NoError(t, err)
	}
	return data
}

// TestFromGGUFErrors checks that a missing or unknown tokenizer model and an
// unknown pre-tokenizer are errors that name them.
func TestFromGGUFErrors(t *testing.T) {
	build := func(kvs map[string]gguf.Value) *gguf.File {
		t.Helper()
		b := gguf.NewBuilder()
		for k, v := range kvs {
			b.Set(k, v)
		}
		data, err := b.Bytes()
		require.NoError(t, err)
		f, err := gguf.Parse(data)
		require.NoError(t, err)
		return f
	}
	tokens := gguf.ArrayOf([]string{"a", "b", "ab"})
	merges := gguf.ArrayOf([]string{"a b"})

	_, err := FromGGUF(build(map[string]gguf.Value{keyTokens: tokens}))
	require.ErrorIs(t, err, gguf.ErrNotFound)
	assert.Contains(t, err.Error(), keyModel)

	_, err = FromGGUF(build(map[string]gguf.Value{keyModel: gguf.ValueOf("t5"), keyTokens: tokens}))
	require.ErrorIs(t, err, ErrUnsupportedModel)
	assert.Contains(t, err.Error(), `"t5"`)

	tok, err := FromGGUF(build(map[string]gguf.Value{keyModel: gguf.ValueOf("gpt2"), keyPre: gguf.ValueOf("tekken"), keyTokens: tokens, keyMerges: merges}))
	require.ErrorIs(t, err, bpe.ErrUnknownPreTokenizer)
	assert.Nil(t, tok)
	assert.Contains(t, err.Error(), `"tekken"`)

	_, err = FromGGUF(build(map[string]gguf.Value{keyModel: gguf.ValueOf("gpt2"), keyPre: gguf.ValueOf("gpt-2"), keyTokens: tokens}))
	require.ErrorIs(t, err, gguf.ErrNotFound)
	assert.Contains(t, err.Error(), keyMerges)

	_, err = FromGGUF(build(map[string]gguf.Value{keyModel: gguf.ValueOf("gpt2"), keyPre: gguf.ValueOf("gpt-2"), keyTokens: tokens,
		keyMerges: merges, keyTokenType: gguf.ArrayOf([]int32{1, 1})}))
	require.ErrorIs(t, err, ErrFormat)
}

// TestMarkerTokens checks llama.cpp's rules for tokens a file does not name
// by id: the end-of-turn token is found by its text, and fill-in-the-middle
// markers found by text become control tokens. deepseek-coder stores its
// FIM markers as user-defined tokens (type 4), which llama.cpp turns into
// control tokens, so they are split out only with ParseSpecial.
func TestMarkerTokens(t *testing.T) {
	ds := loadVocab(t, "deepseek-coder").(*bpe.BPE)
	assert.Equal(t, 32014, ds.Special().EOT) // <｜end▁of▁sentence｜>
	for id, text := range map[int]string{32015: "<｜fim▁hole｜>", 32016: "<｜fim▁begin｜>", 32017: "<｜fim▁end｜>"} {
		require.Equal(t, text, ds.TokenText(id))
		assert.Equal(t, tokenizer.TokenControl, ds.Type(id), text)
		ids, err := ds.Encode(text, tokenizer.EncodeOptions{ParseSpecial: true})
		require.NoError(t, err)
		assert.Equal(t, []int{id}, ids, text)
		ids, err = ds.Encode(text, tokenizer.EncodeOptions{})
		require.NoError(t, err)
		assert.NotEqual(t, []int{id}, ids, text)
	}
	// <|EOT|> matches no marker list and stays user-defined.
	assert.Equal(t, tokenizer.TokenUserDefined, ds.Type(32021))

	g := loadVocab(t, "gpt-2")
	assert.Equal(t, tokenizer.Special{BOS: 50256, EOS: 50256, EOT: 50256, UNK: -1, PAD: -1, SEP: -1}, g.Special())
}
