package engine

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/vocab"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// TestStopTokensEndGeneration: an extra stop token ends generation like EOS
// and is not part of the result.
func TestStopTokensEndGeneration(t *testing.T) {
	m := loadStories260K(t)
	plain, err := newSession(t, m).Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 20}, nil)
	require.NoError(t, err)
	stopAt := plain.Tokens[6]
	res, err := newSession(t, m).Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 20, StopTokens: []int{stopAt}}, nil)
	require.NoError(t, err)
	assert.Equal(t, FinishStop, res.FinishReason)
	assert.Equal(t, plain.Tokens[:indexOf(plain.Tokens, stopAt)], res.Tokens)
}

func indexOf(ids []int, id int) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}

// TestMaxTokenBytesBoundsTheTokens: no text of n bytes takes fewer than
// n / MaxTokenBytes tokens — with the default model's SentencePiece
// vocabulary (byte fallback included) and llama.cpp's byte-level BPE and
// SentencePiece vocabularies, on llama.cpp's tokenizer test strings, random
// bytes as UTF-8 and runs of one character — so hosts may refuse longer
// texts than their context without tokenizing them.
func TestMaxTokenBytesBoundsTheTokens(t *testing.T) {
	toks := map[string]tokenizer.Tokenizer{"stories260K": loadStories260K(t).Tokenizer()}
	for _, name := range []string{"ggml-vocab-gpt-2", "ggml-vocab-llama-spm", "ggml-vocab-falcon"} {
		gz := readFile(t, "vocab/testdata/"+name+".gguf.gz")
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		require.NoError(t, err)
		data, err := io.ReadAll(zr)
		require.NoError(t, err)
		f, err := gguf.Parse(data)
		require.NoError(t, err)
		toks[name], err = vocab.FromGGUF(f)
		require.NoError(t, err)
	}
	texts := strings.Split(string(readFile(t, "vocab/testdata/ggml-vocab-gpt-2.gguf.inp")), "\n__ggml_vocab_test__\n")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		b := make([]byte, 1+rng.IntN(300))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		texts = append(texts, strings.ToValidUTF8(string(b), "\uFFFD"))
	}
	for _, r := range []string{" ", "a", "\n", "é", "日", "🦙", "<s>", "<|endoftext|>"} {
		texts = append(texts, strings.Repeat(r, 500))
	}
	for name, tok := range toks {
		most := longestToken(tok)
		for _, text := range texts {
			for _, opts := range []tokenizer.EncodeOptions{{}, {AddSpecial: true, ParseSpecial: true}} {
				ids, err := tok.Encode(text, opts)
				require.NoError(t, err)
				assert.GreaterOrEqual(t, len(ids)*most, len(text), "%s: %q takes %d tokens of at most %d bytes", name, text, len(ids), most)
			}
		}
	}
}
