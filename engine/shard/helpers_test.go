package shard

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
	"github.com/wasmlm/wasmlm/models"
)

const onceUpon = "Once upon a time"

// shardCounts are the splits every equivalence test runs.
var shardCounts = []int{2, 3, 4}

// defaultModel is the embedded stories260K (4 kv heads).
func defaultModel(t testing.TB) *engine.Model {
	t.Helper()
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	return m
}

// stories260K is the llama2.c checkpoint of the default model.
func stories260K(t testing.TB) *engine.Model {
	t.Helper()
	m, err := engine.LoadLlama2C(testmodel.Stories260K())
	require.NoError(t, err)
	return m
}

func newSession(t testing.TB, m *engine.Model) *engine.Session {
	t.Helper()
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	return s
}

// loadGGUF builds sp and loads it.
func loadGGUF(t testing.TB, sp modelgen.Spec) ([]byte, *engine.Model) {
	t.Helper()
	data := testmodel.GGUF(t, sp)
	m, err := engine.LoadGGUF(slices.Clone(data)) // data stays the file's bytes, whatever m's sessions pack
	require.NoError(t, err)
	return data, m
}

// splitModel returns Cut(m, i, n) for every i.
func splitModel(t testing.TB, m *engine.Model, n int) []*Part {
	t.Helper()
	out := make([]*Part, n)
	for i := range out {
		var err error
		out[i], err = Cut(m, i, n)
		require.NoError(t, err)
	}
	return out
}

// sessionsOf makes a session for each shard on its exchange; opts (if not
// nil) gives each its options.
func sessionsOf(t testing.TB, parts []*Part, ex []Exchange, opts []engine.SessionOptions) []*Session {
	t.Helper()
	out := make([]*Session, len(parts))
	for i, p := range parts {
		var o engine.SessionOptions
		if opts != nil {
			o = opts[i]
		}
		s, err := NewSession(p, ex[i], o)
		require.NoError(t, err)
		out[i] = s
	}
	return out
}

func exchanges(local []*LocalExchange) []Exchange {
	out := make([]Exchange, len(local))
	for i, e := range local {
		out[i] = e
	}
	return out
}

// startGroup starts Follow for sessions 1..n-1; their results arrive on the
// returned channel.
func startGroup(sessions []*Session) <-chan error {
	done := make(chan error, len(sessions))
	for _, s := range sessions[1:] {
		go func() { done <- s.Follow() }()
	}
	return done
}

// startShards connects the shards with a local exchange, starts Follow for
// shards 1..n-1, and returns shard 0's session. The test ends by closing it
// and checking that every follower returned nil.
func startShards(t testing.TB, parts []*Part, opts engine.SessionOptions) *Session {
	t.Helper()
	o := make([]engine.SessionOptions, len(parts))
	for i := range o {
		o[i] = opts
	}
	sessions := sessionsOf(t, parts, exchanges(NewLocalExchange(len(parts))), o)
	done := startGroup(sessions)
	t.Cleanup(func() {
		assert.NoError(t, sessions[0].Close())
		for range sessions[1:] {
			assert.NoError(t, <-done, "Follow returns nil when shard 0 closes")
		}
	})
	return sessions[0]
}

// generated is what a generation produced, stream included.
type generated struct {
	res      engine.Result
	streamed []engine.Token
}

func generate(t testing.TB, s *engine.Session, prompt string, opts engine.GenerateOptions) generated {
	t.Helper()
	var g generated
	res, err := s.Generate(context.Background(), prompt, opts, func(tok engine.Token) error {
		tok.Trace = nil
		g.streamed = append(g.streamed, tok)
		return nil
	})
	require.NoError(t, err)
	res.Timings = engine.Timings{}
	g.res = res
	return g
}

// randomSpecs are random-weight GGUF models whose kv heads do not divide
// evenly by every split: llama with grouped-query attention (12 heads, 4 kv
// heads: 3 shards get 1, 1 and 2), with a separate output and a quantized
// variant, qwen2 (q/k/v biases, NeoX rope; 6 heads over 3 kv heads: 2
// shards get 1 and 2), qwen3 (q/k norms, which every shard holds
// whole; heads of 32 over a 96-wide stream, so the queries and Wo's rows
// are 192 wide), phi3 (fused q/k/v and gate/up, of which a shard holds its
// rows of each piece; partial rotary, LongRoPE), smollm3 (a layer without
// rope), granite (multipliers), and gemma2 and gemma3 (post-norms, which
// every shard holds whole and applies to the gathered vectors; GeGLU on
// each shard's hidden units; sliding windows of 8, whose rings each shard
// keeps for its kv heads).
func randomSpecs() map[string]modelgen.Spec {
	gqa := modelgen.Shape{Dim: 96, HiddenDim: 160, Layers: 2, Heads: 12, KVHeads: 4, VocabSize: 300, ContextLength: 64}
	qwen := modelgen.Shape{Dim: 96, HiddenDim: 136, Layers: 2, Heads: 6, KVHeads: 3, VocabSize: 320, ContextLength: 64}
	qwen3 := modelgen.Shape{Dim: 96, HiddenDim: 160, Layers: 2, Heads: 6, KVHeads: 3, HeadDim: 32, VocabSize: 320, ContextLength: 64}
	gemma3 := qwen3
	gemma3.Layers = 7 // layer 5 attends to every position, the others to 8
	return map[string]modelgen.Spec{
		"llama-gqa-F32":      {Shape: gqa, Seed: 1, Std: 0.08},
		"llama-gqa-Q8_0-out": {Shape: gqa, Seed: 2, Std: 0.08, Type: tensor.Q8_0, SeparateOutput: true},
		"llama-gqa-Q4_K":     {Shape: gqa, Seed: 3, Std: 0.08, Type: tensor.Q4_K},
		"qwen2-F16":          {Arch: "qwen2", Shape: qwen, Seed: 4, Std: 0.08, Type: tensor.F16},
		"qwen3-Q8_0-wide":    {Arch: "qwen3", Shape: qwen3, Seed: 5, Std: 0.08, Type: tensor.Q8_0, SeparateOutput: true},
		"phi3-Q8_0-fused": {Arch: "phi3", Shape: withHidden(qwen, 160), Seed: 6, Std: 0.08, Type: tensor.Q8_0, Family: modelgen.Family{
			RopeDims: 12, RopeOriginalContext: 32, RopeAttnFactor: 1.2,
			RopeFactorsLong: []float32{1, 2, 4, 8, 16, 32}, RopeFactorsShort: []float32{1, 1, 1, 1.1, 1.2, 1.3}}},
		"smollm3-F32": {Arch: "smollm3", Shape: withLayers(gqa, 4), Seed: 7, Std: 0.08},
		"granite-Q8_0": {Arch: "granite", Shape: gqa, Seed: 8, Std: 0.08, Type: tensor.Q8_0,
			Family: modelgen.Family{EmbeddingScale: 12, AttentionScale: 0.1, ResidualScale: 0.22, LogitScale: 8}},
		"gemma2-Q8_0":     {Arch: "gemma2", Shape: gqa, Family: modelgen.Family{SlidingWindow: 8}, Seed: 6, Std: 0.08, Type: tensor.Q8_0},
		"gemma3-F32-wide": {Arch: "gemma3", Shape: gemma3, Family: modelgen.Family{SlidingWindow: 8}, Seed: 7, Std: 0.08, SeparateOutput: true},
	}
}

// withHidden is s with n hidden units.
func withHidden(s modelgen.Shape, n int) modelgen.Shape {
	s.HiddenDim = n
	return s
}

// withLayers is s with n layers.
func withLayers(s modelgen.Shape, n int) modelgen.Shape {
	s.Layers = n
	return s
}
