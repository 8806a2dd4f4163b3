package engine

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// TestContextBeyondTraining: a session may be longer than the model was
// trained for (the default model: 512 positions), as llama.cpp allows, and
// generates past the trained positions; ContextWarning names both numbers
// then, and says nothing within the trained context.
func TestContextBeyondTraining(t *testing.T) {
	m, err := LoadGGUF(models.Default())
	require.NoError(t, err)
	assert.Empty(t, m.ContextWarning(512))
	assert.Empty(t, m.ContextWarning(64))
	w := m.ContextWarning(1024)
	assert.Contains(t, w, "1024")
	assert.Contains(t, w, "512")

	n, err := m.SessionContextLength(1024)
	require.NoError(t, err)
	assert.Equal(t, 1024, n)
	s, err := m.NewSession(SessionOptions{ContextLength: 1024})
	require.NoError(t, err)
	assert.Equal(t, 1024, s.ContextLength())
	opts := DefaultGenerateOptions()
	opts.MaxTokens, opts.Sampling.Temperature = 700, 0
	sp := m.Tokenizer().Special()
	opts.Sampling.LogitBias = map[int]float32{sp.EOS: float32(math.Inf(-1)), sp.BOS: float32(math.Inf(-1))}
	res, err := s.Generate(context.Background(), "Once upon a time", opts, nil)
	require.NoError(t, err)
	assert.Equal(t, FinishLength, res.FinishReason)
	assert.Greater(t, len(res.PromptTokens)+len(res.Tokens), 512, "past the trained positions")
}

// TestContextBeyondTrainingRefused: beyond the trained context, the memory
// bounds a session (a model of wide heads whose KV cache at
// MaxContextLength positions exceeds what any host addresses), and so does
// MaxContextLength; a model whose positions are learned embeddings (BERT)
// holds only the trained ones.
func TestContextBeyondTrainingRefused(t *testing.T) {
	wide, err := modelgen.Build(modelgen.Spec{Arch: "llama", Type: tensor.F32, Seed: 3,
		Shape: modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 4, HeadDim: 2048, VocabSize: 300, ContextLength: 128}})
	require.NoError(t, err)
	m, err := LoadGGUF(wide)
	require.NoError(t, err)
	_, err = m.NewSession(SessionOptions{ContextLength: MaxContextLength, KVType: KVF32})
	var oe *OptionError
	require.True(t, errors.As(err, &oe), "%v", err)
	assert.Equal(t, "context_length", oe.Field)
	assert.Contains(t, err.Error(), "MiB")
	_, err = m.SessionContextLength(MaxContextLength + 1)
	require.ErrorIs(t, err, ErrInvalidOption)

	bert, err := modelgen.Build(modelgen.Spec{Arch: "bert", Shape: embedParityShape, Type: tensor.F32, Seed: 5})
	require.NoError(t, err)
	b, err := LoadGGUF(bert)
	require.NoError(t, err)
	_, err = b.SessionContextLength(embedParityShape.ContextLength + 1)
	require.ErrorIs(t, err, ErrInvalidOption)
	assert.Contains(t, err.Error(), "must be in 0..256")
}
