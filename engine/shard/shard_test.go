package shard

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/race"
	"github.com/wasmlm/wasmlm/sampling"
)

func TestPlanTilesEveryVector(t *testing.T) {
	configs := []engine.Config{
		{Dim: 64, HiddenDim: 172, Layers: 1, Heads: 8, KVHeads: 4, VocabSize: 512},
		{Dim: 96, HiddenDim: 160, Layers: 1, Heads: 12, KVHeads: 4, VocabSize: 300},
		{Dim: 288, HiddenDim: 768, Layers: 1, Heads: 6, KVHeads: 6, VocabSize: 32000},
		{Dim: 48, HiddenDim: 7, Layers: 1, Heads: 6, KVHeads: 3, VocabSize: 5},
		{Dim: 60, HiddenDim: 100, Layers: 1, Heads: 6, KVHeads: 3, VocabSize: 50}, // Dim not whole groups of 8 rows
	}
	for _, c := range configs {
		for n := 1; n <= c.KVHeads; n++ {
			t.Run(fmt.Sprintf("heads%d-kv%d-n%d", c.Heads, c.KVHeads, n), func(t *testing.T) {
				hd := c.HeadDim()
				var prev engine.Part // the spans must follow each other without gaps
				var prevWo engine.Span
				for i := range n {
					p, err := newPlan(c, i, n)
					require.NoError(t, err)
					for _, s := range []struct {
						name     string
						got, was engine.Span
						parts    []int
					}{
						{"q", p.rows.Q, prev.Q, p.parts[engine.GatherAttention]},
						{"kv", p.rows.KV, prev.KV, nil},
						{"model", p.rows.Model, prev.Model, p.parts[engine.GatherDown]},
						{"hidden", p.rows.Hidden, prev.Hidden, p.parts[engine.GatherHidden]},
						{"vocab", p.rows.Vocab, prev.Vocab, p.parts[engine.GatherLogits]},
					} {
						assert.Equal(t, s.was.Hi, s.got.Lo, "%s of shard %d starts where shard %d's ends", s.name, i, i-1)
						assert.Positive(t, s.got.Len(), "%s of shard %d is not empty", s.name, i)
						if s.parts != nil {
							assert.Equal(t, []int{s.got.Lo, s.got.Hi}, s.parts[i:i+2], "%s parts", s.name)
						}
					}
					// Whole GQA groups: the query heads are the groups of the kv heads.
					assert.Zero(t, p.rows.KV.Lo%hd)
					assert.Equal(t, p.rows.KV.Lo*c.GroupSize(), p.rows.Q.Lo)
					assert.Equal(t, p.rows.KV.Hi*c.GroupSize(), p.rows.Q.Hi)
					// Balanced: sizes differ by at most one kv head.
					assert.LessOrEqual(t, p.rows.KV.Len()/hd, c.KVHeads/n+1)
					assert.GreaterOrEqual(t, p.rows.KV.Len()/hd, c.KVHeads/n)
					// Wo's rows for prompt blocks: whole groups of a packed
					// layout, one after another; none where Dim is not
					// whole groups, or for one shard.
					wo := p.parts[engine.GatherProjection]
					if n == 1 || c.Dim%tensor.PackedGroupRows != 0 {
						assert.Zero(t, p.projection.Len(), "shard %d computes all of Wo", i)
						assert.Equal(t, make([]int, n+1), wo)
					} else {
						assert.Equal(t, []int{p.projection.Lo, p.projection.Hi}, wo[i:i+2], "Wo's parts")
						assert.Equal(t, prevWo.Hi, p.projection.Lo)
						assert.Positive(t, p.projection.Len())
						assert.Zero(t, p.projection.Lo%tensor.PackedGroupRows)
						assert.Zero(t, p.projection.Hi%tensor.PackedGroupRows)
						prevWo = p.projection
						if i == n-1 {
							assert.Equal(t, c.Dim, p.projection.Hi)
						}
					}
					prev = p.rows
				}
				assert.Equal(t, c.Dim, prev.Model.Hi)
				assert.Equal(t, c.KVDim(), prev.KV.Hi)
				assert.Equal(t, c.Dim, prev.Q.Hi)
				assert.Equal(t, c.HiddenDim, prev.Hidden.Hi)
				assert.Equal(t, c.VocabSize, prev.Vocab.Hi)
			})
		}
		_, err := newPlan(c, 0, c.KVHeads+1)
		assert.ErrorIs(t, err, ErrSplit, "more shards than kv heads")
	}
}

// TestShardedGreedyMatchesLlama2C: the default model split 2, 3 and 4 ways
// (stories260K has 4 kv heads: the 3-way split gives 1, 1 and 2) generates
// llama2.c's golden greedy ids and text for every golden prompt, as the whole
// model does. One leader session serves every prompt, so the prompt cache is
// reused across generations as it is in a whole session.
func TestShardedGreedyMatchesLlama2C(t *testing.T) {
	g := golden.RuncStories260K(t)
	m := defaultModel(t)
	whole := newSession(t, m)
	for _, n := range shardCounts {
		t.Run(fmt.Sprintf("%d shards", n), func(t *testing.T) {
			leader := startShards(t, splitModel(t, m, n), engine.SessionOptions{})
			for _, run := range g.Runs {
				opts := engine.GenerateOptions{MaxTokens: g.Steps + 1 - len(run.PromptIDs)}
				want := generate(t, whole, run.Prompt, opts)
				got := generate(t, leader.Session, run.Prompt, opts)
				assert.Equal(t, run.GeneratedIDs, got.res.Tokens, "%q: generated ids", run.Prompt)
				assert.Equal(t, run.Text, run.Prompt+got.res.Text, "%q: text", run.Prompt)
				assert.Equal(t, want, got, "%q: the whole model's result and stream", run.Prompt)
			}
		})
	}
}

// TestShardedSamplingMatchesWhole: seeded sampling (every stage of the
// chain, penalties included) picks the same tokens from a split model as
// from the whole one, for the default GGUF model and the llama2.c
// checkpoint, with either KV cache type (each shard holds its key/value
// heads' part of the cache).
func TestShardedSamplingMatchesWhole(t *testing.T) {
	for name, m := range map[string]*engine.Model{"gguf": defaultModel(t), "llama2c": stories260K(t)} {
		for _, c := range []struct {
			n  int
			kv engine.KVType
		}{{2, engine.KVF32}, {3, engine.KVF32}, {4, engine.KVF32}, {2, engine.KVF16}, {3, engine.KVF16}} {
			n, opts := c.n, engine.SessionOptions{ContextLength: 256, KVType: c.kv}
			t.Run(fmt.Sprintf("%s/%d shards/%v", name, n, c.kv), func(t *testing.T) {
				leader := startShards(t, splitModel(t, m, n), opts)
				whole, err := m.NewSession(opts)
				require.NoError(t, err)
				for _, seed := range []uint64{1, 42, 31337} {
					opts := engine.GenerateOptions{MaxTokens: 120, Trace: true, Sampling: sampling.Params{
						Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, Seed: seed,
					}}
					want := generate(t, whole, onceUpon, opts)
					got := generate(t, leader.Session, onceUpon, opts)
					require.NotEmpty(t, want.res.Tokens)
					assert.Equal(t, want, got, "seed %d", seed)
				}
			})
		}
	}
}

// TestShardedRandomModelsMatchWhole: on random models, every forward pass of
// a split model leaves bit for bit the logits of the whole model, and
// generation gives the same tokens, greedy and sampled; the shards are cut
// in memory (Cut) and written as files (File), as a browser's workers
// receive them.
func TestShardedRandomModelsMatchWhole(t *testing.T) {
	for name, sp := range randomSpecs() {
		data, m := loadGGUF(t, sp)
		for n := 2; n <= min(4, m.Config().KVHeads); n++ {
			t.Run(fmt.Sprintf("%s/%d shards", name, n), func(t *testing.T) {
				// A model whose sessions ran may have packed its bytes in
				// place (tensor.Pack), the parts' rows included: each split
				// and the whole model start from the file's bytes.
				m, err := engine.LoadGGUF(slices.Clone(data))
				require.NoError(t, err)
				parts := splitModel(t, m, n)
				for i := 1; i < n; i++ { // followers from shard files, as in the browser
					b, err := File(data, i, n)
					require.NoError(t, err)
					parts[i], err = Load(b)
					require.NoError(t, err)
				}
				leader := startShards(t, parts, engine.SessionOptions{})
				wm, err := engine.LoadGGUF(slices.Clone(data))
				require.NoError(t, err)
				whole := newSession(t, wm)
				for pos, tok := range []int{1, 260, 7, 299, 3, 42, 150, 2} {
					require.NoError(t, whole.Forward(tok, pos, true))
					require.NoError(t, leader.Forward(tok, pos, true))
					require.Equal(t, whole.Logits(), leader.Logits(), "logits after position %d", pos)
				}
				for _, opts := range []engine.GenerateOptions{
					{MaxTokens: 40},
					{MaxTokens: 40, Sampling: sampling.Params{Temperature: 1, TopK: 50, TopP: 0.9, Seed: 7}},
				} {
					assert.Equal(t, generate(t, whole, "abc", opts), generate(t, leader.Session, "abc", opts))
				}
			})
		}
	}
}

// TestFileIsTheShard: a shard's file holds exactly its rows of every split
// tensor (read back with the gguf package and compared with the whole
// file's bytes), every other tensor whole, the file's metadata and keys
// saying which shard it is; and it loads as the shard Cut makes: the same
// rows, fingerprint and parameters.
func TestFileIsTheShard(t *testing.T) {
	data, m := loadGGUF(t, randomSpecs()["qwen2-F16"])
	whole, err := gguf.Parse(data)
	require.NoError(t, err)
	splits := map[string]engine.TensorSplit{}
	for _, ts := range m.Tensors() {
		splits[ts.Name] = ts
	}
	for n := 1; n <= 3; n++ {
		matrixBytes, fileBytes, wo := 0, 0, 0
		for i := range n {
			b, err := File(data, i, n)
			require.NoError(t, err)
			fileBytes += len(b)
			index, count, ok := FileInfo(b)
			require.True(t, ok)
			assert.Equal(t, []int{i, n}, []int{index, count})

			fromFile, err := Load(b)
			require.NoError(t, err)
			cut, err := Cut(m, i, n)
			require.NoError(t, err)
			assert.Equal(t, cut.plan, fromFile.plan)
			assert.Equal(t, cut.source, fromFile.source)
			assert.Equal(t, cut.Model.Config(), fromFile.Model.Config())
			assert.Equal(t, cut.Model.Fingerprint(), fromFile.Model.Fingerprint())
			assert.Equal(t, cut.Model.Info().Parameters, fromFile.Model.Info().Parameters)
			assert.Equal(t, fmt.Sprint(i), fmt.Sprint(fromFile.Model.Info().Metadata[keyIndex]))

			f, err := gguf.Parse(b)
			require.NoError(t, err)
			assert.Len(t, f.KVs(), len(whole.KVs())+4, "the whole file's metadata and the four shard keys")
			for _, ti := range f.Tensors() {
				src, ok := whole.Tensor(ti.Name)
				require.True(t, ok, ti.Name)
				split, used := splits[ti.Name]
				require.True(t, used, "%s: only tensors the engine uses", ti.Name)
				want := src.Data
				if split.Split {
					s := cut.plan.rows.Rows(split.Axis)
					rowBytes := src.Size / int(src.Dims[len(src.Dims)-1])
					want = src.Data[s.Lo*rowBytes : s.Hi*rowBytes]
				}
				require.Equal(t, want, ti.Data, "%s of shard %d/%d", ti.Name, i, n)
				if len(ti.Dims) == 2 {
					matrixBytes += ti.Size
				}
				if split.Split || len(ti.Dims) != 2 {
					continue
				}
				if i == 0 {
					wo += ti.Size // only Wo is a matrix every shard holds whole
				}
			}
		}
		wholeMatrices := 0
		for _, ti := range whole.Tensors() {
			if len(ti.Dims) == 2 {
				wholeMatrices += ti.Size
			}
		}
		assert.Equal(t, wholeMatrices+(n-1)*wo, matrixBytes, "%d shards hold every row once, Wo n times", n)
		t.Logf("%d shards: %d bytes of files for a %d-byte model", n, fileBytes, len(data))
	}
	_, err = File(data, 3, 3)
	assert.ErrorIs(t, err, ErrSplit)
	one, err := File(data, 0, 2)
	require.NoError(t, err)
	_, err = File(one, 0, 1)
	assert.ErrorIs(t, err, ErrSplit, "a shard cannot be split again")
	_, _, ok := FileInfo(data)
	assert.False(t, ok, "a whole model's file is not a shard's")
}

// TestShardedDecodeStepAllocatesNothing: forward passes of a split model —
// every shard's, with the local exchange — allocate nothing at all once
// running (counted over many steps: AllocsPerRun's average would hide an
// occasional allocation). The local exchange's message slots grow to the
// longest message a link has carried, so the warm-up sends every kind of
// message: tokens of every shard's embedding rows, with and without logits.
// The goroutines share one thread, as in WebAssembly: with several, the Go
// runtime itself now and then allocates for goroutines parked on channels
// (sudogs), which is not the engine's doing. Even on one thread the runtime
// may preempt a shard mid-step, so more goroutines wait at once than in the
// warm-up and the runtime allocates a sudog for the extra one: the cache is
// filled beforehand by parking many goroutines at once, and the collector,
// which would empty that cache, is off while counting.
func TestShardedDecodeStepAllocatesNothing(t *testing.T) {
	race.SkipAllocationCount(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	m := defaultModel(t)
	token := func(pos int) int { return pos * 37 % m.Config().VocabSize }
	for _, n := range []int{2, 3} {
		leader := startShards(t, splitModel(t, m, n), engine.SessionOptions{})
		for pos := range 100 { // greets, grows the exchange's slots
			require.NoError(t, leader.Forward(token(pos), pos, pos%2 == 0))
		}
		fillSudogCache()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for pos := 100; pos < 400; pos++ {
			if err := leader.Forward(token(pos), pos, pos%2 == 0); err != nil {
				t.Fatal(err) // not require: its first type assertion allocates
			}
		}
		runtime.ReadMemStats(&after)
		assert.Zero(t, after.Mallocs-before.Mallocs, "%d shards: allocations in 300 steps", n)
	}
}

// fillSudogCache parks many goroutines on one select at once and releases
// them, so the runtime's cache of wait records (sudogs) holds more than any
// step of the engine needs.
func fillSudogCache() {
	release, done := make(chan struct{}), make(chan struct{})
	never := make(chan struct{})
	const parked = 512
	for range parked {
		go func() {
			select {
			case <-release:
			case <-never:
			}
			done <- struct{}{}
		}()
	}
	runtime.Gosched()
	close(release)
	for range parked {
		<-done
	}
}

// TestStatsCountGathers: shard 0 reports how many gathers it waited for —
// one hello, then per forward pass (a prompt block of up to 2 tokens here,
// or a decode step's token) three per layer and a block's fourth (Wo's
// output), the embedding when another
// shard holds a row of the pass's tokens, and the logits when computed —
// and the time it waited.
func TestStatsCountGathers(t *testing.T) {
	m := defaultModel(t)
	parts := splitModel(t, m, 2)
	const block = 2
	leader := startShards(t, parts, engine.SessionOptions{PromptBlock: block})
	waited0, gathers0 := leader.Stats()
	res, err := leader.Generate(context.Background(), onceUpon, engine.GenerateOptions{MaxTokens: 20}, nil)
	require.NoError(t, err)
	require.Len(t, res.Tokens, 20)
	require.Greater(t, len(res.PromptTokens), 2*block, "a prompt of several blocks")
	waited, gathers := leader.Stats()
	var passes [][]int
	for at := 0; at < len(res.PromptTokens); at += block {
		passes = append(passes, res.PromptTokens[at:min(at+block, len(res.PromptTokens))])
	}
	lastBlock := len(passes) - 1
	for _, tok := range res.Tokens[:19] {
		passes = append(passes, []int{tok})
	}
	require.NotZero(t, parts[0].plan.projection.Len(), "the shards split Wo for prompt blocks")
	want := 1 // the hello
	for i, pass := range passes {
		want += 3 * m.Config().Layers
		if len(pass) > 1 {
			want += m.Config().Layers // Wo's output, a prompt block's
		}
		if slices.ContainsFunc(pass, func(tok int) bool { return !parts[0].plan.rows.Vocab.Contains(tok) }) {
			want++
		}
		if i >= lastBlock {
			want++ // the logits: the prompt's last block's, every decode step's
		}
	}
	assert.Equal(t, want, gathers-gathers0)
	assert.Greater(t, waited, waited0)
}

// BenchmarkShardedDecodeStep measures one forward pass with logits of a
// model split in two, natively, with the shards on goroutines talking over
// the local exchange: the compute halves, plus the cost of the gathers.
func BenchmarkShardedDecodeStep(b *testing.B) {
	models := map[string]*engine.Model{"stories260K": defaultModel(b)}
	specs, err := modelgen.BenchModels("stories15M")
	require.NoError(b, err)
	for _, s := range specs {
		_, models[s.Name] = loadGGUF(b, s.Spec)
	}
	for name, m := range models {
		for _, n := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/%d shards", name, n), func(b *testing.B) {
				var s *engine.Session
				if n == 1 {
					s = newSession(b, m)
				} else {
					s = startShards(b, splitModel(b, m, n), engine.SessionOptions{}).Session
				}
				half := s.ContextLength() / 2
				for pos := range half {
					require.NoError(b, s.Forward(1, pos, false))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := s.Forward(1, half, true); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

// TestOneKVHeadDoesNotSplit: a model with one kv head, as Gemma-3-1B
// (modelgen's gemma3-1b shape, from its header alone), cannot split: each
// shard holds whole GQA groups, and there is one. Cutting it, or planning
// it, fails with ErrSplit saying so.
func TestOneKVHeadDoesNotSplit(t *testing.T) {
	sh, err := modelgen.ShapeByName("gemma3-1b")
	require.NoError(t, err)
	l, err := modelgen.Header(modelgen.Spec{Arch: "gemma3", Shape: sh, Type: tensor.Q8_0})
	require.NoError(t, err)
	f, err := gguf.ParseHeader(l.Header, int64(l.Size))
	require.NoError(t, err)
	h, err := engine.ReadHeader(f)
	require.NoError(t, err)
	_, err = newPlan(h.Config(), 0, 2)
	require.ErrorIs(t, err, ErrSplit)
	assert.Contains(t, err.Error(), "2 shards, but the model has 1 kv heads: at most 1 shards (each holds whole GQA groups)")

	small := sh
	small.Dim, small.HiddenDim, small.Layers, small.HeadDim, small.VocabSize, small.ContextLength = 64, 96, 2, 32, 300, 64
	_, m := loadGGUF(t, modelgen.Spec{Arch: "gemma3", Shape: small, Seed: 1})
	_, err = Cut(m, 1, 2)
	require.ErrorIs(t, err, ErrSplit)
	assert.Contains(t, err.Error(), "1 kv heads")
	one, err := Cut(m, 0, 1)
	require.NoError(t, err, "one shard is the whole model")
	assert.Equal(t, 1, one.Count)
}
