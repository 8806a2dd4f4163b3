//go:build !js

package vocab

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/bpe"
)

// TestChatMarkersAsLlamaCpp checks llama.cpp's rules for the markers of
// gpt-oss's harmony format and Gemma 4's turns on GPT-2's vocabulary with
// those markers appended as control tokens (<|tool_response>
// user-defined, as Gemma 4's converter writes it): which of them llama.cpp splits out
// of text without parse_special (it makes <|channel|>, <|message|>,
// <|start|>, <|constrain|> and, beside <|return|> and <|call|>, <|end|>
// user-defined), which it renders when detokenizing, and which end a
// generation here (EOS and EOT: <|call|> for harmony, <turn|> for Gemma 4).
func TestChatMarkersAsLlamaCpp(t *testing.T) {
	r := llamacppref.Need(t)
	markers := []string{"<|return|>", "<|call|>", "<|end|>", "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", "<turn|>", "<|turn>", "<|tool_response>"}
	base, err := gguf.Parse(readVocabGGUF(t, "gpt-2"))
	require.NoError(t, err)
	tokens, err := base.Strings(keyTokens)
	require.NoError(t, err)
	n := len(tokens)
	types := make([]int32, n, n+len(markers))
	for i := range types {
		types[i] = int32(tokenizer.TokenNormal)
	}
	for _, m := range markers {
		tokens = append(tokens, m)
		typ := tokenizer.TokenControl
		if m == "<|tool_response>" {
			typ = tokenizer.TokenUserDefined
		}
		types = append(types, int32(typ))
	}
	data := setKVs(t, readVocabGGUF(t, "gpt-2"), keyTokens, gguf.ArrayOf(tokens), keyTokenType, gguf.ArrayOf(types),
		keyEOS, gguf.ValueOf(uint32(n)))
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	tok, err := FromGGUF(f)
	require.NoError(t, err)
	sp := tok.Special()
	assert.Equal(t, n, sp.EOS, "<|return|>, from the file")
	assert.Equal(t, n+1, sp.EOT, "<|call|> ends a generation, <|end|> does not")
	assert.False(t, sp.IsEndOfGeneration(n+2), "<|end|>")
	assert.Equal(t, tokenizer.TokenControl, tok.(*bpe.BPE).Type(n+len(markers)-1), "<|tool_response>")

	texts := []string{
		"<|start|>assistant<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Hi!<|return|>",
		"<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
		"<|turn>model\nHello<turn|><|tool_response>x",
	}
	path := filepath.Join(t.TempDir(), "markers.gguf")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	outs, err := r.Run([]llamacppref.Job{{Model: path, Texts: texts, Detokenize: true}, {Model: path, Texts: texts, ParseSpecial: true, Detokenize: true}})
	require.NoError(t, err)
	for k, parse := range []bool{false, true} {
		out := outs[k]
		require.Empty(t, out.Error, "llama.cpp refused the vocabulary")
		assert.Equal(t, n, out.Special.EOS)
		for i, text := range texts {
			got, err := tok.Encode(text, tokenizer.EncodeOptions{ParseSpecial: parse})
			require.NoError(t, err)
			assert.Equal(t, out.Tokenized[i], got, "%q, parse_special %v", text, parse)
			back, err := tokenizer.Decode(tok, out.Tokenized[i])
			require.NoError(t, err)
			assert.Equal(t, out.Detokenized[i], back, "%q, parse_special %v", text, parse)
		}
	}
}
