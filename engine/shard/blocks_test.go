package shard

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/sampling"
)

// blockSpecs are random llama models (12 heads over 4 kv heads: 3 shards
// get 1, 1 and 2) in a float type, a block-quantized pair and a K-quant.
func blockSpecs() map[string]modelgen.Spec {
	gqa := modelgen.Shape{Dim: 96, HiddenDim: 160, Layers: 2, Heads: 12, KVHeads: 4, VocabSize: 300, ContextLength: 128}
	return map[string]modelgen.Spec{
		"F32":  {Shape: gqa, Seed: 11, Std: 0.08},
		"Q4_0": {Shape: gqa, Seed: 12, Std: 0.08, Type: tensor.Q4_0, SeparateOutput: true},
		"Q8_0": {Shape: gqa, Seed: 13, Std: 0.08, Type: tensor.Q8_0},
		"Q4_K": {Shape: gqa, Seed: 14, Std: 0.08, Type: tensor.Q4_K},
		// Dim not whole groups of 8 rows: every shard computes all of Wo
		"F32 Dim 60": {Shape: modelgen.Shape{Dim: 60, HiddenDim: 100, Layers: 2, Heads: 6, KVHeads: 3, VocabSize: 300, ContextLength: 128}, Seed: 15, Std: 0.08},
	}
}

// promptIDs is a prompt of n token ids of a 300-token vocabulary, none of
// them the first three (BOS, EOS and the unknown token).
func promptIDs(n, seed int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 3 + (i*97+seed*31)%297
	}
	return out
}

// generateIDs is generate for a prompt of token ids; it also returns how
// many prompt tokens the generation evaluated.
func generateIDs(t testing.TB, s *engine.Session, prompt []int, opts engine.GenerateOptions) (generated, int) {
	t.Helper()
	var g generated
	res, err := s.GenerateTokens(context.Background(), prompt, opts, func(tok engine.Token) error {
		g.streamed = append(g.streamed, tok)
		return nil
	})
	require.NoError(t, err)
	evaluated := res.Timings.PrefillTokens
	res.Timings = engine.Timings{}
	g.res = res
	return g, evaluated
}

// TestShardedPromptBlocksMatchWhole: a split model that evaluates its
// prompt in blocks (each gather carrying every token's parts at once)
// leaves bit for bit the whole model's logits and generates its tokens,
// traces and log-probabilities included — for 1, 2 and 3 shards, blocks of
// 1, 2, 7 and 32 tokens, float, block-quantized and K-quant weights, and
// prompts of several blocks and a part of one; a prompt that extends the
// last one evaluates only its new tokens, as a whole model's does.
func TestShardedPromptBlocksMatchWhole(t *testing.T) {
	traced := engine.GenerateOptions{MaxTokens: 12, Trace: true, Logprobs: true, TopLogprobs: 3}
	sampled := engine.GenerateOptions{MaxTokens: 12, Trace: true, Sampling: sampling.Params{Temperature: 0.8, TopK: 40, Seed: 3}}
	for name, sp := range blockSpecs() {
		data, _ := loadGGUF(t, sp)
		// The whole model evaluates token by token: the reference bits.
		wm, err := engine.LoadGGUF(slices.Clone(data))
		require.NoError(t, err)
		whole, err := wm.NewSession(engine.SessionOptions{PromptBlock: 1})
		require.NoError(t, err)
		long, short := promptIDs(45, 1), promptIDs(5, 2)
		var wantLogits [][]float32
		for pos, tok := range long {
			require.NoError(t, whole.Forward(tok, pos, true))
			wantLogits = append(wantLogits, slices.Clone(whole.Logits()))
		}
		want := map[string]generated{}
		for _, p := range []struct {
			name   string
			prompt []int
			opts   engine.GenerateOptions
		}{{"long", long, traced}, {"short", short, sampled}, {"longer", append(slices.Clone(long), short...), traced}} {
			want[p.name], _ = generateIDs(t, whole, p.prompt, p.opts)
			whole.Reset()
		}
		for _, n := range []int{1, 2, 3} {
			for _, block := range []int{1, 2, 7, 32} {
				t.Run(fmt.Sprintf("%s/%d shards/block %d", name, n, block), func(t *testing.T) {
					m, err := engine.LoadGGUF(slices.Clone(data))
					require.NoError(t, err)
					leader := startShards(t, splitModel(t, m, n), engine.SessionOptions{PromptBlock: block})
					require.Equal(t, block, leader.PromptBlock())

					// Forward passes of whole blocks, then of a part of one.
					for pos := 0; pos < len(long); pos += block {
						end := min(pos+block, len(long))
						require.NoError(t, leader.ForwardBlock(long[pos:end], pos, true))
						require.Equal(t, wantLogits[end-1], leader.Logits(), "logits after positions %d..%d", pos, end-1)
					}

					got, evaluated := generateIDs(t, leader.Session, long, traced)
					assert.Equal(t, want["long"], got, "a prompt of %d tokens", len(long))
					assert.Equal(t, len(long), evaluated)
					got, _ = generateIDs(t, leader.Session, short, sampled)
					assert.Equal(t, want["short"], got, "a prompt of %d tokens", len(short))
					// The cache holds short and its reply: long+short
					// shares nothing with it, so long goes first again.
					_, _ = generateIDs(t, leader.Session, long, traced)
					got, evaluated = generateIDs(t, leader.Session, append(slices.Clone(long), short...), traced)
					assert.Equal(t, want["longer"], got, "a prompt extending the cached one")
					assert.Equal(t, len(short), evaluated, "only the new tokens are evaluated")
				})
			}
		}
	}
}

// TestFailureMidBlockLeavesSessionUsable: a gather's message lost in the
// middle of a prompt block, by the leader or a follower, fails that
// generation with ErrExchange naming the shard; the next generation, on the
// same sessions and from the same prompt, reuses the blocks evaluated before
// the failure and gives the whole model's tokens.
func TestFailureMidBlockLeavesSessionUsable(t *testing.T) {
	data, m := loadGGUF(t, blockSpecs()["Q8_0"])
	whole := newSession(t, m)
	prompt := promptIDs(40, 5)
	opts := engine.GenerateOptions{MaxTokens: 10}
	want, _ := generateIDs(t, whole, prompt, opts)
	for _, faulty := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("shard %d loses a message", faulty), func(t *testing.T) {
			m, err := engine.LoadGGUF(slices.Clone(data))
			require.NoError(t, err)
			local := NewLocalExchange(3)
			ex := exchanges(local)
			f := &faultyExchange{Exchange: local[faulty]}
			// A block of 7 tokens is 9 gathers over 2 layers (the
			// embedding, then 4 a layer), each of which a shard receives
			// from 2 others: the 24th is in the second block, past the
			// hello.
			f.failAt.Store(24)
			ex[faulty] = f
			o := engine.SessionOptions{PromptBlock: 7}
			sessions := sessionsOf(t, splitModel(t, m, 3), ex, []engine.SessionOptions{o, o, o})
			done := startGroup(sessions)

			_, err = sessions[0].GenerateTokens(context.Background(), prompt, opts, nil)
			require.ErrorIs(t, err, ErrExchange)
			assert.Contains(t, err.Error(), fmt.Sprintf("shard %d could not receive from shard", faulty))
			assert.GreaterOrEqual(t, f.recvs.Load(), int64(24), "the fault was injected")

			got, evaluated := generateIDs(t, sessions[0].Session, prompt, opts)
			assert.Equal(t, want, got)
			assert.Equal(t, len(prompt)-7, evaluated, "the first block stays cached, the failed second one is evaluated again")
			require.NoError(t, sessions[0].Close())
			for range 2 {
				assert.NoError(t, <-done)
			}
		})
	}
}

// TestMalformedHeaderBreaksTheGroup: a follower that receives a step header
// it cannot follow — token ids that are not whole numbers, more of them
// than the header says or than a block holds, a token outside the
// vocabulary, positions past the context — leaves the group with an
// ErrExchange saying so, and tells the leader.
func TestMalformedHeaderBreaksTheGroup(t *testing.T) {
	m := defaultModel(t)
	parts := splitModel(t, m, 2)
	header := func(n, pos int, ids ...float32) []float32 {
		return append([]float32{1, kindHeader, opForward, float32(n), float32(pos), 0}, ids...)
	}
	for name, c := range map[string]struct {
		msg  []float32
		want string
	}{
		"empty":             {nil, "not a step header"},
		"short head":        {[]float32{1, kindHeader, opForward}, "not a step header"},
		"fewer ids":         {header(3, 0, 5, 6), "not a step header"},
		"more ids":          {header(1, 0, 5, 6), "not a step header"},
		"more than a block": {header(5, 0, 5, 6, 7, 8, 9), "not a step header"},
		"id not whole":      {header(2, 0, 5, 6.5), "not a step header"},
		"no tokens":         {header(0, 0), "0 tokens at position 0"},
		"past the vocab":    {header(2, 0, 5, float32(m.Config().VocabSize)), "2 tokens at position 0"},
		"past the context":  {header(2, 63, 5, 6), "2 tokens at position 63"},
	} {
		t.Run(name, func(t *testing.T) {
			local := NewLocalExchange(2)
			follower, err := NewSession(parts[1], local[1], engine.SessionOptions{ContextLength: 64, PromptBlock: 4})
			require.NoError(t, err)
			done := startGroup([]*Session{nil, follower})
			require.NoError(t, local[0].Send(1, c.msg, nil))
			err = <-done
			require.ErrorIs(t, err, ErrExchange)
			assert.Contains(t, err.Error(), c.want)
			m, err := local[0].Recv(1)
			require.NoError(t, err)
			assert.Equal(t, []float32{kindBroken, 1}, m[1:3], "the follower tells the leader it left")
		})
	}
}
