package engine_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// headerOf reads data's header as a host reading a file from the network
// would: from a small prefix, doubled until ParseHeader has enough.
func headerOf(t *testing.T, data []byte) *engine.Header {
	t.Helper()
	n := 256
	for {
		f, err := gguf.ParseHeader(data[:min(n, len(data))], int64(len(data)))
		if err == nil {
			h, err := engine.ReadHeader(f)
			require.NoError(t, err)
			return h
		}
		require.ErrorIs(t, err, gguf.ErrNeedMore)
		require.Less(t, n, len(data), "ParseHeader asked for more than the whole file")
		n *= 2
	}
}

// TestMemoryEstimateCovers loads models and runs a generation, measuring
// what the Go runtime took from the system for them (beyond the model's
// bytes, which the test holds before it starts measuring), and checks that
// EstimateMemory's scratch and KV cache cover it without overshooting by
// much: the estimate is what a host relies on to refuse a model that would
// not fit.
func TestMemoryEstimateCovers(t *testing.T) {
	shapes := []struct {
		name  string
		arch  string
		shape modelgen.Shape
		typ   tensor.Type
	}{
		{"15M Q8_0", "llama", modelgen.Stories15M(), tensor.Q8_0},
		{"wide vocab F16", "llama", modelgen.Shape{Dim: 256, HiddenDim: 512, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 64000, ContextLength: 2048}, tensor.F16},
		{"long context Q4_0", "llama", modelgen.Shape{Dim: 512, HiddenDim: 1024, Layers: 4, Heads: 8, KVHeads: 4, VocabSize: 32000, ContextLength: 4096}, tensor.Q4_0},
		// Heads twice as wide as dim/heads, as Qwen3-0.6B's.
		{"qwen3 wide heads Q8_0", "qwen3", modelgen.Shape{Dim: 256, HiddenDim: 768, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 64, VocabSize: 32000, ContextLength: 4096}, tensor.Q8_0},
		// Gemma-3-1B's layout: one kv head of 256, five of every six layers
		// keeping a ring of 512 positions (modelgen's default window), and
		// the sliding layers' rotations of their own.
		{"gemma3 sliding window Q8_0", "gemma3", modelgen.Shape{Dim: 256, HiddenDim: 768, Layers: 7, Heads: 4, KVHeads: 1, HeadDim: 256, VocabSize: 32000, ContextLength: 4096}, tensor.Q8_0},
		// Gemma 3n's parts: AltUp's four streams, LAuReL, per-layer
		// embeddings of 256 values a layer.
		{"gemma3n streams Q8_0", "gemma3n", modelgen.Shape{Dim: 256, HiddenDim: 768, Layers: 6, Heads: 4, KVHeads: 2, HeadDim: 64, VocabSize: 32000, ContextLength: 4096}, tensor.Q8_0},
	}
	for _, tc := range shapes {
		for _, kv := range []engine.KVType{engine.KVF32, engine.KVF16} {
			t.Run(tc.name+" "+kv.String(), func(t *testing.T) {
				memoryEstimateCovers(t, modelgen.Spec{Arch: tc.arch, Shape: tc.shape, Type: tc.typ, Seed: 3, MuteSpecial: true}, kv)
			})
		}
	}
}

// memoryEstimateCovers is TestMemoryEstimateCovers for one model and a KV
// cache of type kv.
func memoryEstimateCovers(t *testing.T, sp modelgen.Spec, kv engine.KVType) {
	shape := sp.Shape
	data, err := modelgen.Build(sp)
	require.NoError(t, err)
	h := headerOf(t, data)
	est := engine.EstimateMemory(h.Config(), int64(len(data)), min(shape.ContextLength, engine.DefaultContextLength), kv)
	assert.Equal(t, h.Config().KVCacheBytes(min(shape.ContextLength, engine.DefaultContextLength), kv), est.KVCache)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := engine.LoadGGUF(data)
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{KVType: kv})
	require.NoError(t, err)
	_, err = s.Generate(context.Background(), "Once upon a time", engine.GenerateOptions{MaxTokens: 8}, nil)
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	used := int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)
	budget := est.KVCache + est.Scratch - 24<<20 // the runtime's share was there before
	t.Logf("used %.1f MiB; estimated KV %.1f + scratch %.1f MiB (runtime's share excluded: %.1f)",
		mib(used), mib(est.KVCache), mib(est.Scratch), mib(budget))
	assert.LessOrEqual(t, used, budget, "the estimate must cover what loading and generating took")
	assert.Less(t, budget, used*2+8<<20, "the estimate should not be far above what it took")
	runtime.KeepAlive(s)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
