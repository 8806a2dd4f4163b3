package engine

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/sampling"
)

// logSoftmax64 is the log-softmax of logits, in float64: the reference.
func logSoftmax64(logits []float32) []float64 {
	peak := math.Inf(-1)
	for _, x := range logits {
		peak = math.Max(peak, float64(x))
	}
	sum := 0.0
	for _, x := range logits {
		sum += math.Exp(float64(x) - peak)
	}
	out := make([]float64, len(logits))
	for i, x := range logits {
		out[i] = float64(x) - peak - math.Log(sum)
	}
	return out
}

// TestLogprobsMatchLlamaCpp: the first generated token's log-probability
// and its 10 most likely alternatives are the log-softmax of llama.cpp's
// logits after each golden prompt, to twice the logits' parity tolerance
// (a shift of every logit by d moves a log-probability by at most 2d); a
// sampling chain that would change the draw (temperature, penalties, a
// bias) changes none of them.
func TestLogprobsMatchLlamaCpp(t *testing.T) {
	m := loadGGUFModel(t, "stories260K-F32.gguf")
	for _, run := range loadLlamacppGolden(t, KVF32)["F32"] {
		want := logSoftmax64(run.Logits)
		for _, opts := range []GenerateOptions{
			{MaxTokens: 1, Logprobs: true, TopLogprobs: 10},
			{MaxTokens: 1, Logprobs: true, TopLogprobs: 10, Sampling: sampling.Params{Temperature: 2, RepeatPenalty: 1.5, Seed: 3,
				LogitBias: map[int]float32{run.GeneratedIDs[0]: -100}}},
		} {
			var got []Logprobs
			chosen := -1
			_, err := newSession(t, m).GenerateTokens(context.Background(), run.PromptIDs, opts, func(tok Token) error {
				if tok.Logprobs != nil {
					chosen = tok.ID
					got = append(got, Logprobs{Logprob: tok.Logprobs.Logprob, Top: append([]TokenLogprob(nil), tok.Logprobs.Top...)})
				}
				return nil
			})
			require.NoError(t, err)
			require.Len(t, got, 1, "prompt %q", run.Prompt)
			require.Len(t, got[0].Top, 10)
			for i, e := range got[0].Top {
				assert.Equal(t, int(run.Top10[i][0]), e.ID, "prompt %q, rank %d", run.Prompt, i)
				assert.InDelta(t, want[e.ID], e.Logprob, 2*exactTolerance, "prompt %q, rank %d", run.Prompt, i)
			}
			assert.InDelta(t, want[chosen], got[0].Logprob, 2*exactTolerance, "prompt %q, token %d", run.Prompt, chosen)
			if opts.Sampling.LogitBias != nil {
				assert.NotEqual(t, run.GeneratedIDs[0], chosen, "the bias moved the draw, not the log-probabilities")
			}
		}
	}
}
