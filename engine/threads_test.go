package engine

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/race"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// TestThreadsGiveTheSameTokens: sessions whose matrix products (and a
// prompt block's attention) split among 2 and 3 threads give one thread's
// logits, bit for bit, with an F32 and an F16 cache, at every step of a
// prompt (evaluated in blocks) and of a greedy continuation, on models
// whose products are big enough to split (a 256-wide stream, 1024 hidden
// units, a 4096-token vocabulary); and a decode step with threads
// allocates nothing.
func TestThreadsGiveTheSameTokens(t *testing.T) {
	shape := modelgen.Shape{Dim: 256, HiddenDim: 1024, Layers: 2, Heads: 8, KVHeads: 2, VocabSize: 4096, ContextLength: 128}
	for _, sp := range []modelgen.Spec{
		{Arch: "llama", Shape: shape, Type: tensor.Q4_K, Seed: 31, Std: 0.08},
		{Arch: "qwen3", Shape: shape, Type: tensor.Q8_0, Seed: 32, Std: 0.08},
	} {
		t.Run(sp.Arch+"-"+sp.Type.String(), func(t *testing.T) {
			m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
			require.NoError(t, err)
			prompt := []int{1, 17, 300, 5, 4000, 77, 9, 12, 800, 3, 45, 46, 47, 2000, 1024, 6, 7, 8, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114}
			run := func(threads int, kv KVType) [][]float32 {
				s, err := m.NewSession(SessionOptions{Threads: threads, KVType: kv})
				require.NoError(t, err)
				require.Equal(t, threads, s.Threads())
				for at := 0; at < len(prompt); at += DefaultPromptBlock {
					block := prompt[at:min(at+DefaultPromptBlock, len(prompt))]
					require.NoError(t, s.forwardBlock(block, at, at+len(block) == len(prompt)))
				}
				var steps [][]float32
				for pos := len(prompt); pos < len(prompt)+16; pos++ {
					steps = append(steps, append([]float32(nil), s.Logits()...))
					require.NoError(t, s.forward(argmax(s.Logits()), pos, true))
				}
				return steps
			}
			for _, kv := range []KVType{KVF32, KVF16} { // a prompt block's attention splits among the threads on either
				want := run(1, kv)
				for _, threads := range []int{2, 3} {
					got := run(threads, kv)
					for step := range want {
						for i := range want[step] {
							if math.Float32bits(got[step][i]) != math.Float32bits(want[step][i]) {
								t.Fatalf("%v cache, %d threads, step %d, logit %d: %v, one thread %v", kv, threads, step, i, got[step][i], want[step][i])
							}
						}
					}
				}
			}
			if race.Enabled {
				return // the race detector allocates
			}
			s, err := m.NewSession(SessionOptions{Threads: 2})
			require.NoError(t, err)
			pos := 0
			allocs := testing.AllocsPerRun(20, func() {
				if err := s.forward(1+pos%250, pos%s.context, true); err != nil {
					t.Fatal(err)
				}
				pos++
			})
			assert.Zero(t, allocs)
		})
	}
}

// TestThreadsOption: SessionOptions.Threads out of range is an option
// error naming the field; 0 is every core.
func TestThreadsOption(t *testing.T) {
	m := loadStories260K(t)
	for _, n := range []int{-1, MaxThreads + 1} {
		_, err := m.NewSession(SessionOptions{Threads: n})
		require.ErrorIs(t, err, ErrInvalidOption, "%d", n)
		assert.Contains(t, err.Error(), "threads")
	}
	s, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, s.Threads(), 1)
}
