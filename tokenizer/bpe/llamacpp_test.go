package bpe

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// TestLlamaCppVocabFiles checks llama.cpp's own tokenizer test vectors
// (models/ggml-vocab-<name>.gguf.inp/.out, add_special=false,
// parse_special=false) for the vocabularies whose GGUF llama.cpp did not
// ship, using the Hugging Face tokenizer.json of the same vocabulary:
// Llama 3 for llama-bpe, Qwen3 (whose first 151643 ids are Qwen2's) for
// qwen2 and for deepseek-r1-qwen (Qwen2.5's vocabulary).
func TestLlamaCppVocabFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		tok  func(testing.TB) *BPE
	}{
		{"llama-bpe", llama3},
		{"qwen2", qwen3},
		{"deepseek-r1-qwen", qwen3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.tok(t)
			cases := readVocabTest(t, "testdata/vocab/ggml-vocab-"+tc.name+".gguf")
			require.NotEmpty(t, cases)
			for i, c := range cases {
				ids, err := tok.Encode(c.text, tokenizer.EncodeOptions{})
				require.NoError(t, err)
				assert.Equal(t, c.ids, ids, "string %d %q", i, c.text)
			}
		})
	}
}
