package bpe

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// hfDoc is a small byte-level tokenizer.json: the 256 byte tokens, two
// merges, one special and one non-special added token. Tests edit it.
func hfDoc() map[string]any {
	vocab := map[string]any{}
	for b, tok := range byteVocab() {
		vocab[tok] = b
	}
	vocab["ab"] = 256
	vocab["abc"] = 257
	return map[string]any{
		"added_tokens": []any{
			map[string]any{"id": 258, "content": "<s>", "special": true, "lstrip": false, "rstrip": false},
			map[string]any{"id": 259, "content": "<tool>", "special": false, "lstrip": true, "rstrip": true},
		},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false,
			"vocab": vocab, "merges": []any{"a b", "ab c"},
		},
	}
}

func loadDoc(t *testing.T, doc map[string]any, config map[string]any) (*BPE, error) {
	t.Helper()
	tj, err := json.Marshal(doc)
	require.NoError(t, err)
	var cj []byte
	if config != nil {
		cj, err = json.Marshal(config)
		require.NoError(t, err)
	}
	return LoadHF(tj, cj)
}

// TestLoadHFSmall checks a minimal file end to end: merges, added tokens as
// control (special) and user-defined (not special) tokens with their
// lstrip/rstrip, and BOS/EOS named in tokenizer_config.json in both forms.
func TestLoadHFSmall(t *testing.T) {
	tok, err := loadDoc(t, hfDoc(), map[string]any{
		"bos_token": "<s>", "eos_token": map[string]any{"content": "<s>", "special": true}, "add_bos_token": true,
	})
	require.NoError(t, err)
	assert.Equal(t, 260, tok.VocabSize())
	assert.Equal(t, "gpt-2", tok.PreTokenizer())
	assert.Equal(t, tokenizer.Special{BOS: 258, EOS: 258, EOT: -1, UNK: -1, PAD: -1, SEP: -1, AddBOS: true}, tok.Special())
	assert.Equal(t, tokenizer.TokenControl, tok.Type(258))
	assert.Equal(t, tokenizer.TokenUserDefined, tok.Type(259))

	for _, tc := range []struct {
		text string
		opts tokenizer.EncodeOptions
		want []int
	}{
		{"abc", tokenizer.EncodeOptions{}, []int{257}},
		{"abc", tokenizer.EncodeOptions{AddSpecial: true}, []int{258, 257}},
		{"<s>ab", tokenizer.EncodeOptions{}, []int{'<', 's', '>', 256}},
		{"<s>ab", tokenizer.EncodeOptions{ParseSpecial: true}, []int{258, 256}},
		{"ab <tool> c", tokenizer.EncodeOptions{}, []int{256, 259, 'c'}}, // lstrip and rstrip eat the spaces
	} {
		ids, err := tok.Encode(tc.text, tc.opts)
		require.NoError(t, err)
		assert.Equal(t, tc.want, ids, "%q %+v", tc.text, tc.opts)
	}
}

// TestLoadHFTemplate checks the BOS policy against the JavaScript reference:
// Llama 3 with the post_processor of Llama 3.1's tokenizer.json (a Sequence
// of ByteLevel and a TemplateProcessing that puts <|begin_of_text|> first)
// adds BOS with AddSpecial and not without; add_bos_token in
// tokenizer_config.json overrides it.
func TestLoadHFTemplate(t *testing.T) {
	raw, conf := hfFiles(t, "llama3")
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &doc))
	var err error
	doc["post_processor"], err = os.ReadFile("testdata/llama31_post_processor.json")
	require.NoError(t, err)
	tj, err := json.Marshal(doc)
	require.NoError(t, err)

	tok, err := LoadHF(tj, conf)
	require.NoError(t, err)
	sp := tok.Special()
	assert.True(t, sp.AddBOS)
	assert.False(t, sp.AddEOS)
	assert.Equal(t, 128000, sp.BOS)
	assert.Equal(t, 128001, sp.EOS)
	assert.Equal(t, 128009, sp.EOT) // <|eot_id|>, found by its text

	var ref struct {
		Template []struct {
			Text         string `json:"text"`
			IDs          []int  `json:"ids"`
			IDsNoSpecial []int  `json:"ids_no_special"`
		} `json:"llama31_template"`
	}
	gz, err := os.ReadFile("testdata/reference.json.gz")
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	require.NoError(t, json.NewDecoder(zr).Decode(&ref))
	require.NotEmpty(t, ref.Template)
	for _, c := range ref.Template {
		ids, err := tok.Encode(c.Text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
		require.NoError(t, err)
		assert.Equal(t, c.IDs, ids, "%q", c.Text)
		ids, err = tok.Encode(c.Text, tokenizer.EncodeOptions{ParseSpecial: true})
		require.NoError(t, err)
		assert.Equal(t, c.IDsNoSpecial, ids, "%q", c.Text)
	}

	var confDoc map[string]any
	require.NoError(t, json.Unmarshal(conf, &confDoc))
	confDoc["add_bos_token"] = false
	cj, err := json.Marshal(confDoc)
	require.NoError(t, err)
	tok, err = LoadHF(tj, cj)
	require.NoError(t, err)
	assert.False(t, tok.Special().AddBOS)
}

// TestLoadHFRealFiles checks what the two real files declare.
func TestLoadHFRealFiles(t *testing.T) {
	l := llama3(t)
	assert.Equal(t, "llama-bpe", l.PreTokenizer())
	assert.True(t, l.ignoreMerges)
	assert.Equal(t, 128256, l.VocabSize())
	assert.Equal(t, tokenizer.Special{BOS: 128000, EOS: 128001, EOT: 128009, UNK: -1, PAD: -1, SEP: -1}, l.Special())

	q := qwen3(t)
	assert.Equal(t, "qwen2", q.PreTokenizer())
	assert.False(t, q.ignoreMerges)
	assert.Equal(t, 151669, q.VocabSize())
	// tokenizer_config.json: no BOS, eos <|im_end|>, pad <|endoftext|>.
	assert.Equal(t, tokenizer.Special{BOS: -1, EOS: 151645, EOT: 151645, UNK: -1, PAD: 151643, SEP: -1}, q.Special())
}

// TestLoadHFErrors checks that files this package cannot reproduce are
// refused with an error that says what was found.
func TestLoadHFErrors(t *testing.T) {
	set := func(path []string, v any) map[string]any {
		doc := hfDoc()
		m := doc
		for _, k := range path[:len(path)-1] {
			m = m[k].(map[string]any)
		}
		m[path[len(path)-1]] = v
		return doc
	}
	split := func(regex string) map[string]any {
		return map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": regex}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}}
	}
	for _, tc := range []struct {
		name   string
		doc    map[string]any
		config map[string]any
		want   error
		text   string
	}{
		{"model type", set([]string{"model", "type"}, "WordPiece"), nil, ErrUnsupported, `"WordPiece"`},
		{"byte fallback", set([]string{"model", "byte_fallback"}, true), nil, ErrUnsupported, "byte_fallback"},
		{"suffix", set([]string{"model", "end_of_word_suffix"}, "</w>"), nil, ErrUnsupported, "</w>"},
		{"normalizer", set([]string{"normalizer"}, map[string]any{"type": "Lowercase"}), nil, ErrUnsupported, "Lowercase"},
		{"prefix space", set([]string{"pre_tokenizer", "add_prefix_space"}, true), nil, ErrUnknownPreTokenizer, "add_prefix_space"},
		{"metaspace", set([]string{"pre_tokenizer"}, map[string]any{"type": "Metaspace"}), nil, ErrUnknownPreTokenizer, "Metaspace"},
		{"regex", set([]string{"pre_tokenizer"}, split(`\p{L}+|\p{N}+`)), nil, ErrUnknownPreTokenizer, `\\p{L}+|\\p{N}+`},
		{"post processor", set([]string{"post_processor"}, map[string]any{"type": "BertProcessing"}), nil, ErrUnsupported, "BertProcessing"},
		{"merges", set([]string{"model", "merges"}, 3), nil, tokenizer.ErrFormat, "merges"},
		{"vocab id", set([]string{"model", "vocab"}, map[string]any{"a": -1}), nil, tokenizer.ErrFormat, "id -1"},
		{"sparse", set([]string{"model", "vocab"}, map[string]any{"a": 1 << 20}), nil, tokenizer.ErrFormat, "entries"},
		{"bos text", hfDoc(), map[string]any{"bos_token": "<nope>"}, tokenizer.ErrFormat, "<nope>"},
		{"bos object", hfDoc(), map[string]any{"bos_token": map[string]any{"special": true}}, tokenizer.ErrFormat, "content"},
		{"add bos without bos", hfDoc(), map[string]any{"add_bos_token": true}, tokenizer.ErrFormat, "AddBOS"},
	} {
		_, err := loadDoc(t, tc.doc, tc.config)
		require.ErrorIs(t, err, tc.want, tc.name)
		assert.Contains(t, err.Error(), tc.text, tc.name)
	}
	_, err := LoadHF([]byte("{"), nil)
	require.ErrorIs(t, err, tokenizer.ErrFormat)

	// Recognised variants load.
	for _, doc := range []map[string]any{
		set([]string{"normalizer"}, map[string]any{"type": "NFC"}),
		set([]string{"pre_tokenizer"}, split(hfRegexLlama3)),
		set([]string{"pre_tokenizer"}, split(hfRegexQwen2)),
		set([]string{"pre_tokenizer"}, split(hfRegexGPT2)),
		set([]string{"model", "merges"}, []any{[]any{"a", "b"}, []any{"ab", "c"}}),
		set([]string{"post_processor"}, nil),
	} {
		tok, err := loadDoc(t, doc, nil)
		require.NoError(t, err)
		ids, err := tok.Encode("abc", tokenizer.EncodeOptions{})
		require.NoError(t, err)
		assert.Equal(t, []int{257}, ids)
	}
}
