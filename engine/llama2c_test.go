package engine

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

func TestLlama2CSharedAndSeparateClassifier(t *testing.T) {
	c := Config{Dim: 16, HiddenDim: 24, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 8}
	tok := syntheticTokenizerBin(300)
	shared, err := LoadLlama2C(llama2cCheckpoint(c, true, 1, 0.1), tok)
	require.NoError(t, err)
	assert.Same(t, shared.weights.TokenEmbedding, shared.weights.Output)
	separate, err := LoadLlama2C(llama2cCheckpoint(c, false, 1, 0.1), tok)
	require.NoError(t, err)
	assert.NotSame(t, separate.weights.TokenEmbedding, separate.weights.Output)
	assert.Equal(t, 2, separate.Config().GroupSize())
	assert.False(t, separate.Info().SharedOutput)
}

// TestLlama2CBadInput: every malformed checkpoint is an error that says
// what is wrong, never a panic.
func TestLlama2CBadInput(t *testing.T) {
	good, tok := testmodel.Stories260K()
	withHeader := func(i int, v int32) []byte {
		b := append([]byte(nil), good...)
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
		return b
	}
	tests := []struct {
		name string
		data []byte
		tok  []byte
		want string
	}{
		{"empty", nil, tok, "shorter than its 28-byte header"},
		{"header only", good[:28], tok, "describes a 1056540-byte checkpoint, file has 28"},
		{"truncated", good[:len(good)-1], tok, "file has 1056539 bytes"},
		{"trailing bytes", append(append([]byte(nil), good...), 0, 0, 0, 0), tok, "file has 1056544 bytes"},
		{"huge dim", withHeader(0, 1<<30), tok, "dim = 1073741824 is out of range"},
		{"zero layers", withHeader(2, 0), tok, "n_layers = 0 is out of range"},
		{"negative heads", withHeader(3, -8), tok, "n_heads = -8 is out of range"},
		{"kv heads do not divide", withHeader(4, 3), tok, "not a multiple of n_kv_heads 3"},
		{"dim not multiple of heads", withHeader(3, 7), tok, "dim 64 is not a multiple of n_heads 7"},
		{"claims more data than the file", withHeader(6, 1<<20), tok, "file has 1056540 bytes"},
		{"flipped vocab sign", withHeader(5, -512), tok, "file has 1056540 bytes"},
		{"v1 export magic", []byte("24ka\x01\x00\x00\x00" + string(make([]byte, 40))), tok, "version 1/2"},
		{"gguf given as llama2.c", append([]byte("GGUF"), good[4:]...), tok, "GGUF file"},
		{"no tokenizer", good, nil, "needs its tokenizer.bin"},
		{"tokenizer of another vocabulary", good, syntheticTokenizerBin(1000), "tokenizer has 1000 tokens, model has 512"},
		{"corrupt tokenizer", good, tok[:len(tok)-3], "tokenizer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := LoadLlama2C(tt.data, tt.tok)
			require.Error(t, err)
			assert.Nil(t, m)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestLlama2CTruncatedEverywhere cuts the checkpoint at many points.
func TestLlama2CTruncatedEverywhere(t *testing.T) {
	good, tok := testmodel.Stories260K()
	for cut := 0; cut < len(good); cut += 997 {
		_, err := LoadLlama2C(good[:cut], tok)
		require.Error(t, err, "cut at %d", cut)
	}
}

func FuzzLoadLlama2C(f *testing.F) {
	c := Config{Dim: 8, HiddenDim: 12, Layers: 1, Heads: 2, KVHeads: 1, VocabSize: 260, ContextLength: 4}
	f.Add(llama2cCheckpoint(c, true, 1, 0.1))
	f.Add(llama2cCheckpoint(c, false, 2, 0.1)[:100])
	tok := syntheticTokenizerBin(260)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := LoadLlama2C(data, tok)
		if err != nil {
			return
		}
		// Whatever loads must run.
		s, err := m.NewSession(SessionOptions{ContextLength: min(4, m.Config().ContextLength)})
		require.NoError(t, err)
		require.NoError(t, s.forward(0, 0, true))
	})
}
