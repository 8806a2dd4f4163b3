package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/sampling"
)

// shardCounts are the splits every equivalence test runs.
var shardCounts = []int{2, 3, 4}

// startShards connects the given shards (shard i at index i) with a local
// exchange, starts Follow for shards 1..n-1, and returns shard 0's session.
// The test ends by closing it and checking that every follower returned nil.
func startShards(t testing.TB, shards []*Model, opts SessionOptions) *Session {
	t.Helper()
	ex := NewLocalExchange(len(shards))
	sessions := make([]*Session, len(shards))
	for i, m := range shards {
		o := opts
		o.Exchange = ex[i]
		s, err := m.NewSession(o)
		require.NoError(t, err)
		sessions[i] = s
	}
	done := make(chan error, len(shards))
	for _, s := range sessions[1:] {
		go func() { done <- s.Follow() }()
	}
	t.Cleanup(func() {
		assert.NoError(t, sessions[0].Close())
		for range sessions[1:] {
			assert.NoError(t, <-done, "Follow returns nil when shard 0 closes")
		}
	})
	return sessions[0]
}

// splitModel returns Shard(i, n) of m for every i.
func splitModel(t testing.TB, m *Model, n int) []*Model {
	t.Helper()
	out := make([]*Model, n)
	for i := range out {
		var err error
		out[i], err = m.Shard(i, n)
		require.NoError(t, err)
	}
	return out
}

// generated is what a generation produced, stream included.
type generated struct {
	res      Result
	streamed []Token
}

func generate(t testing.TB, s *Session, prompt string, opts GenerateOptions) generated {
	t.Helper()
	var g generated
	res, err := s.Generate(context.Background(), prompt, opts, func(tok Token) error {
		tok.Trace = nil
		g.streamed = append(g.streamed, tok)
		return nil
	})
	require.NoError(t, err)
	res.Timings = Timings{}
	g.res = res
	return g
}

func TestShardPlanTilesEveryVector(t *testing.T) {
	configs := []Config{
		{Dim: 64, HiddenDim: 172, Layers: 1, Heads: 8, KVHeads: 4, VocabSize: 512},
		{Dim: 96, HiddenDim: 160, Layers: 1, Heads: 12, KVHeads: 4, VocabSize: 300},
		{Dim: 288, HiddenDim: 768, Layers: 1, Heads: 6, KVHeads: 6, VocabSize: 32000},
		{Dim: 48, HiddenDim: 7, Layers: 1, Heads: 6, KVHeads: 3, VocabSize: 5},
	}
	for _, c := range configs {
		for n := 1; n <= c.KVHeads; n++ {
			t.Run(fmt.Sprintf("heads%d-kv%d-n%d", c.Heads, c.KVHeads, n), func(t *testing.T) {
				hd := c.HeadDim()
				next := shardPlan{} // the spans must follow each other without gaps
				for i := range n {
					p, err := newShardPlan(c, i, n)
					require.NoError(t, err)
					for _, s := range []struct {
						name     string
						got, was span
						parts    []int
						unit     int
					}{
						{"kv heads", p.kvHeads, next.kvHeads, nil, 0},
						{"dim", p.dim, next.dim, p.dimParts, 1},
						{"hidden", p.hidden, next.hidden, p.hiddenParts, 1},
						{"vocab", p.vocab, next.vocab, p.vocabParts, 1},
					} {
						assert.Equal(t, s.was.hi, s.got.lo, "%s of shard %d starts where shard %d's ends", s.name, i, i-1)
						assert.Positive(t, s.got.len(), "%s of shard %d is not empty", s.name, i)
						if s.parts != nil {
							assert.Equal(t, []int{s.got.lo, s.got.hi}, s.parts[i:i+2], "%s parts", s.name)
						}
					}
					group := c.Heads / c.KVHeads
					assert.Equal(t, span{p.kvHeads.lo * group, p.kvHeads.hi * group}, p.heads, "query heads are the groups of the kv heads")
					assert.Equal(t, []int{p.heads.lo * hd, p.heads.hi * hd}, p.attnParts[i:i+2])
					// Balanced: sizes differ by at most one unit.
					assert.LessOrEqual(t, p.kvHeads.len(), c.KVHeads/n+1)
					assert.GreaterOrEqual(t, p.kvHeads.len(), c.KVHeads/n)
					next = p
				}
				assert.Equal(t, c.KVHeads, next.kvHeads.hi)
				assert.Equal(t, c.Dim, next.dim.hi)
				assert.Equal(t, c.HiddenDim, next.hidden.hi)
				assert.Equal(t, c.VocabSize, next.vocab.hi)
			})
		}
		_, err := newShardPlan(c, 0, c.KVHeads+1)
		assert.ErrorIs(t, err, ErrShard, "more shards than kv heads")
	}
}

// TestShardedGreedyMatchesLlama2C: the default model split 2, 3 and 4 ways
// (stories260K has 4 kv heads: the 3-way split gives 1, 1 and 2) generates
// llama2.c's golden greedy ids and text for every golden prompt, as the whole
// model does. One leader session serves every prompt, so the prompt cache is
// reused across generations as it is in a whole session.
func TestShardedGreedyMatchesLlama2C(t *testing.T) {
	g := loadRuncGolden(t)
	m, err := Load(models.Default(), LoadOptions{})
	require.NoError(t, err)
	whole := newSession(t, m)
	for _, n := range shardCounts {
		t.Run(fmt.Sprintf("%d shards", n), func(t *testing.T) {
			leader := startShards(t, splitModel(t, m, n), SessionOptions{})
			for _, run := range g.Runs {
				opts := GenerateOptions{MaxTokens: g.Steps + 1 - len(run.PromptIDs)}
				want := generate(t, whole, run.Prompt, opts)
				got := generate(t, leader, run.Prompt, opts)
				assert.Equal(t, run.GeneratedIDs, got.res.Tokens, "%q: generated ids", run.Prompt)
				assert.Equal(t, run.Text, run.Prompt+got.res.Text, "%q: text", run.Prompt)
				assert.Equal(t, want, got, "%q: the whole model's result and stream", run.Prompt)
			}
		})
	}
}

// TestShardedSamplingMatchesWhole: seeded sampling (every stage of the
// chain, penalties included) picks the same tokens from a split model as
// from the whole one, for the default GGUF model and the llama2.c checkpoint.
func TestShardedSamplingMatchesWhole(t *testing.T) {
	gguf, err := Load(models.Default(), LoadOptions{})
	require.NoError(t, err)
	for name, m := range map[string]*Model{"gguf": gguf, "llama2c": loadStories260K(t)} {
		for _, n := range shardCounts {
			t.Run(fmt.Sprintf("%s/%d shards", name, n), func(t *testing.T) {
				leader := startShards(t, splitModel(t, m, n), SessionOptions{ContextLength: 256})
				whole, err := m.NewSession(SessionOptions{ContextLength: 256})
				require.NoError(t, err)
				for _, seed := range []uint64{1, 42, 31337} {
					opts := GenerateOptions{MaxTokens: 120, Trace: true, Sampling: sampling.Params{
						Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, Seed: seed,
					}}
					want := generate(t, whole, "Once upon a time", opts)
					got := generate(t, leader, "Once upon a time", opts)
					require.NotEmpty(t, want.res.Tokens)
					assert.Equal(t, want, got, "seed %d", seed)
				}
			})
		}
	}
}

// randomSpecs are random-weight GGUF models whose kv heads do not divide
// evenly by every split: llama with grouped-query attention (12 heads, 4 kv
// heads: 3 shards get 1, 1 and 2), with a separate output and a quantized
// variant, and qwen2 (q/k/v biases, NeoX rope; 6 heads over 3 kv heads: 2
// shards get 1 and 2).
func randomSpecs() map[string]modelgen.Spec {
	gqa := modelgen.Shape{Dim: 96, HiddenDim: 160, Layers: 2, Heads: 12, KVHeads: 4, VocabSize: 300, ContextLength: 64}
	qwen := modelgen.Shape{Dim: 96, HiddenDim: 136, Layers: 2, Heads: 6, KVHeads: 3, VocabSize: 320, ContextLength: 64}
	return map[string]modelgen.Spec{
		"llama-gqa-F32":      {Shape: gqa, Seed: 1, Std: 0.08},
		"llama-gqa-Q8_0-out": {Shape: gqa, Seed: 2, Std: 0.08, Type: tensor.Q8_0, SeparateOutput: true},
		"llama-gqa-Q4_K":     {Shape: gqa, Seed: 3, Std: 0.08, Type: tensor.Q4_K},
		"qwen2-F16":          {Arch: "qwen2", Shape: qwen, Seed: 4, Std: 0.08, Type: tensor.F16},
	}
}

// TestShardedRandomModelsMatchWhole: on random models, every forward pass of
// a split model leaves bit for bit the logits of the whole model, and
// generation gives the same tokens, greedy and sampled; the shards are cut
// in memory (Shard) and written as files (ShardGGUF), as a browser's workers
// receive them.
func TestShardedRandomModelsMatchWhole(t *testing.T) {
	for name, sp := range randomSpecs() {
		data := buildGGUF(t, sp)
		m, err := LoadGGUF(data)
		require.NoError(t, err)
		for n := 2; n <= min(4, m.Config.KVHeads); n++ {
			t.Run(fmt.Sprintf("%s/%d shards", name, n), func(t *testing.T) {
				shards := splitModel(t, m, n)
				for i := 1; i < n; i++ { // followers from shard files, as in the browser
					b, err := ShardGGUF(data, i, n)
					require.NoError(t, err)
					shards[i], err = LoadGGUF(b)
					require.NoError(t, err)
				}
				leader := startShards(t, shards, SessionOptions{})
				whole := newSession(t, m)
				for pos, tok := range []int{1, 260, 7, 299, 3, 42, 150, 2} {
					require.NoError(t, whole.forward(tok, pos, true))
					require.NoError(t, leader.forward(tok, pos, true))
					require.Equal(t, whole.state.logits, leader.state.logits, "logits after position %d", pos)
				}
				for _, opts := range []GenerateOptions{
					{MaxTokens: 40},
					{MaxTokens: 40, Sampling: sampling.Params{Temperature: 1, TopK: 50, TopP: 0.9, Seed: 7}},
				} {
					assert.Equal(t, generate(t, whole, "abc", opts), generate(t, leader, "abc", opts))
				}
			})
		}
	}
}

// TestShardGGUFIsTheShard: a shard file loads as the in-memory shard — the
// same shard plan and fingerprint, the same bytes in every matrix and vector
// — it holds only its rows, and its metadata says which shard it is.
func TestShardGGUFIsTheShard(t *testing.T) {
	data := buildGGUF(t, randomSpecs()["qwen2-F16"])
	m, err := LoadGGUF(data)
	require.NoError(t, err)
	for n := 1; n <= 3; n++ {
		matrixBytes, fileBytes := 0, 0
		for i := range n {
			b, err := ShardGGUF(data, i, n)
			require.NoError(t, err)
			fileBytes += len(b)
			fromFile, err := LoadGGUF(b)
			require.NoError(t, err)
			view, err := m.Shard(i, n)
			require.NoError(t, err)
			require.Equal(t, *view.shard, *fromFile.shard)
			index, count := fromFile.Shards()
			assert.Equal(t, []int{i, n}, []int{index, count})
			assert.Equal(t, view.Config, fromFile.Config)
			assert.Equal(t, view.Tokenizer.VocabSize(), fromFile.Tokenizer.VocabSize())
			assertSameWeights(t, view.Weights, fromFile.Weights)
			assert.Equal(t, fmt.Sprint(i), fmt.Sprint(fromFile.Info().Metadata[keyShardIndex]))
			matrixBytes += weightBytes(fromFile.Weights)
		}
		// The matrices are split without overlap, but for Wo, which every
		// shard holds whole; every shard repeats the metadata and the norms.
		wo := 0
		for _, l := range m.Weights.Layers {
			wo += len(l.Wo.Data)
		}
		assert.Equal(t, weightBytes(m.Weights)+(n-1)*wo, matrixBytes, "%d shards hold every row once, Wo n times", n)
		t.Logf("%d shards: %d bytes of files for a %d-byte model", n, fileBytes, len(data))
	}
	_, err = ShardGGUF(data, 3, 3)
	assert.ErrorIs(t, err, ErrShard)
	one, err := ShardGGUF(data, 0, 2)
	require.NoError(t, err)
	_, err = ShardGGUF(one, 0, 1)
	assert.ErrorIs(t, err, ErrShard, "a shard cannot be split again")
}

// weightBytes is the size of every matrix of w (a tied output once).
func weightBytes(w *Weights) int {
	n := len(w.TokenEmbedding.Data)
	if w.Output != w.TokenEmbedding {
		n += len(w.Output.Data)
	}
	for _, l := range w.Layers {
		for _, m := range []*tensor.Matrix{l.Wq, l.Wk, l.Wv, l.Wo, l.WGate, l.WDown, l.WUp} {
			n += len(m.Data)
		}
	}
	return n
}

func assertSameWeights(t *testing.T, want, got *Weights) {
	t.Helper()
	mat := func(name string, a, b *tensor.Matrix) {
		require.Equal(t, a.Type, b.Type, name)
		require.Equal(t, []int{a.Rows, a.Cols}, []int{b.Rows, b.Cols}, name)
		require.Equal(t, a.Data, b.Data, name)
	}
	mat("token_embd", want.TokenEmbedding, got.TokenEmbedding)
	mat("output", want.Output, got.Output)
	assert.Equal(t, want.Output == want.TokenEmbedding, got.Output == got.TokenEmbedding, "tied output")
	assert.Equal(t, want.OutputNorm, got.OutputNorm)
	for l := range want.Layers {
		a, b := &want.Layers[l], &got.Layers[l]
		for _, m := range []struct {
			name string
			a, b *tensor.Matrix
		}{{"q", a.Wq, b.Wq}, {"k", a.Wk, b.Wk}, {"v", a.Wv, b.Wv}, {"o", a.Wo, b.Wo}, {"gate", a.WGate, b.WGate}, {"down", a.WDown, b.WDown}, {"up", a.WUp, b.WUp}} {
			mat(fmt.Sprintf("layer %d %s", l, m.name), m.a, m.b)
		}
		assert.Equal(t, [][]float32{a.AttnNorm, a.FFNNorm, a.Bq, a.Bk, a.Bv}, [][]float32{b.AttnNorm, b.FFNNorm, b.Bq, b.Bk, b.Bv})
	}
}

// TestShardedDecodeStepAllocatesNothing: forward passes of a split model —
// every shard's, with the local exchange — allocate nothing at all once
// running (counted over many steps: AllocsPerRun's average would hide an
// occasional allocation). The local exchange's message slots grow to the
// longest message a link has carried, so the warm-up sends every kind of
// message: tokens of every shard's embedding rows, with and without logits.
// The goroutines share one thread, as in WebAssembly: with several, the Go
// runtime itself now and then allocates for goroutines parked on channels
// (sudogs), which is not the engine's doing.
func TestShardedDecodeStepAllocatesNothing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	m, err := Load(models.Default(), LoadOptions{})
	require.NoError(t, err)
	token := func(pos int) int { return pos * 37 % m.Config.VocabSize }
	for _, n := range []int{2, 3} {
		leader := startShards(t, splitModel(t, m, n), SessionOptions{})
		for pos := range 100 { // greets, grows the exchange's slots
			require.NoError(t, leader.forward(token(pos), pos, pos%2 == 0))
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for pos := 100; pos < 400; pos++ {
			if err := leader.forward(token(pos), pos, pos%2 == 0); err != nil {
				t.Fatal(err) // not require: its first type assertion allocates
			}
		}
		runtime.ReadMemStats(&after)
		assert.Zero(t, after.Mallocs-before.Mallocs, "%d shards: allocations in 300 steps", n)
	}
}

// TestShardedTimingsCountGathers: shard 0 reports how many gathers it waited
// for — one hello, then per forward pass three per layer, the embedding when
// another shard holds the token's row, and the logits when computed — and
// the time it waited.
func TestShardedTimingsCountGathers(t *testing.T) {
	m, err := Load(models.Default(), LoadOptions{})
	require.NoError(t, err)
	shards := splitModel(t, m, 2)
	leader := startShards(t, shards, SessionOptions{})
	res, err := leader.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 20}, nil)
	require.NoError(t, err)
	require.Len(t, res.Tokens, 20)
	evaluated := append(append([]int(nil), res.PromptTokens...), res.Tokens[:19]...)
	want := 1 // the hello
	for i, tok := range evaluated {
		want += 3 * m.Config.Layers
		if !shards[0].shard.vocab.contains(tok) {
			want++
		}
		if i >= len(res.PromptTokens)-1 {
			want++ // the logits
		}
	}
	assert.Equal(t, want, res.Timings.Exchanges)
	assert.Positive(t, res.Timings.ExchangeWait)

	whole, err := newSession(t, m).Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 5}, nil)
	require.NoError(t, err)
	assert.Zero(t, whole.Timings.Exchanges)
}

// BenchmarkShardedDecodeStep measures one forward pass with logits of a
// model split in two, natively, with the shards on goroutines talking over
// the local exchange: the compute halves, plus the cost of the gathers.
func BenchmarkShardedDecodeStep(b *testing.B) {
	for _, bm := range benchModels(b) {
		for _, n := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%d shards", bm.name, n), func(b *testing.B) {
				var s *Session
				if n == 1 {
					s = newSession(b, bm.model)
				} else {
					s = startShards(b, splitModel(b, bm.model, n), SessionOptions{})
				}
				half := s.context / 2
				for pos := range half {
					require.NoError(b, s.forward(1, pos, false))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := s.forward(1, half, true); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
