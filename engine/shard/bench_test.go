package shard

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

var promptBench = modelgen.PromptBenchFlags("BenchmarkShardedPrompt")

// BenchmarkShardedPrompt measures prompt evaluation (prefill) of a model
// split in two against the whole model, every session on one thread (as a
// Web Worker runs), the shards on goroutines talking over the local
// exchange: token by token (blocks of 1, one exchange per gather point per
// token) and in blocks of 32 (one per gather point per block); and, for
// scale, the whole model's blocks on two threads. It reports prompt tokens
// per second, on a random-weight model of -prompt-shape in -prompt-type:
//
//	go test ./engine/shard/ -run '^$' -bench ShardedPrompt -benchtime 2x -args -prompt-shape=stories110M
func BenchmarkShardedPrompt(b *testing.B) {
	spec, prompt, err := promptBench()
	require.NoError(b, err)
	data := testmodel.GGUF(b, spec)
	for _, c := range []struct{ shards, block, threads int }{{1, 1, 1}, {1, 32, 1}, {2, 1, 1}, {2, 32, 1}, {1, 32, 2}} {
		b.Run(fmt.Sprintf("%d shards/block-%d/threads-%d", c.shards, c.block, c.threads), func(b *testing.B) {
			// A model's first session packs its weights: cut it before.
			m, err := engine.LoadGGUF(slices.Clone(data))
			require.NoError(b, err)
			opts := engine.SessionOptions{PromptBlock: c.block, ContextLength: len(prompt) + 1, Threads: c.threads}
			var s *engine.Session
			if c.shards == 1 {
				s, err = m.NewSession(opts)
				require.NoError(b, err)
			} else {
				s = startShards(b, splitModel(b, m, c.shards), opts).Session
			}
			b.ReportAllocs()
			for b.Loop() {
				s.Reset()
				if _, err := s.GenerateTokens(context.Background(), prompt, engine.GenerateOptions{MaxTokens: 1}, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "prompt-tokens/s")
		})
	}
}
