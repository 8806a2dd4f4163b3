package engine

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/race"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// TestGreedyMatchesLlama2C: greedy decoding of stories260K reproduces
// llama2.c's run.c token for token and character for character, for every
// prompt in the golden file. run.c runs `steps` positions: the prompt and the
// generated tokens together make steps+1 ids.
func TestGreedyMatchesLlama2C(t *testing.T) {
	g := golden.RuncStories260K(t)
	m := loadStories260K(t)
	for _, run := range g.Runs {
		t.Run(run.Prompt, func(t *testing.T) {
			s := newSession(t, m)
			maxTokens := g.Steps + 1 - len(run.PromptIDs)
			var streamed string
			chunks := 0
			res, err := s.Generate(context.Background(), run.Prompt, GenerateOptions{MaxTokens: maxTokens},
				func(tok Token) error {
					streamed += tok.Text
					chunks++
					return nil
				})
			require.NoError(t, err)
			assert.Equal(t, run.PromptIDs, res.PromptTokens, "prompt ids")
			assert.Equal(t, run.GeneratedIDs, res.Tokens, "generated ids")
			want := FinishLength
			if run.StoppedAtBOS {
				want = FinishStop
			}
			assert.Equal(t, want, res.FinishReason)
			// run.c prints the prompt, then the completion.
			assert.Equal(t, run.Text, run.Prompt+res.Text, "text")
			assert.Equal(t, res.Text, streamed, "streamed text equals the result")
			assert.Equal(t, len(res.Tokens), chunks, "one callback per generated token")
		})
	}
}

// TestLogitsMatchLlama2C compares the full logit vector after "Once upon a
// time" with run.c's. run.c sums each dot product left to right; we sum in
// four lanes, so values differ by float32 rounding: |Δ| ≤ 1e-4 on logits of
// magnitude ~10 is a few hundred ulps of slack, yet any real arithmetic bug
// moves logits by far more.
func TestLogitsMatchLlama2C(t *testing.T) {
	g := golden.RuncStories260K(t)
	want := g.LogitsAfterPrompt
	s := newSession(t, loadStories260K(t))
	for pos, id := range want.PromptIDs {
		require.NoError(t, s.forward(id, pos, pos == len(want.PromptIDs)-1))
	}
	require.Len(t, s.logits, len(want.Logits))
	worst := 0.0
	for i, w := range want.Logits {
		d := math.Abs(float64(s.logits[i] - w))
		worst = math.Max(worst, d)
		require.InDelta(t, w, s.logits[i], 1e-4, "logit %d", i)
	}
	t.Logf("max |logit - run.c| = %.2e", worst)
}

// TestDecodeStepAllocatesNothing: the forward pass of one token uses only
// buffers allocated with the session, whatever its KV cache type: for
// stories260K, for a qwen3 model whose queries are wider than its
// residual stream (the products' workspace must fit them), and for the
// families' reference models.
func TestDecodeStepAllocatesNothing(t *testing.T) {
	race.SkipAllocationCount(t)
	qwen3 := specOf("qwen3", tinyShape, 3, 0.1)
	qwen3.HeadDim, qwen3.Type = 32, tensor.Q8_0
	qm, err := Load(testmodel.GGUF(t, qwen3), LoadOptions{})
	require.NoError(t, err)
	models := map[string]*Model{"stories260K": loadStories260K(t), "qwen3 Q8_0": qm,
		"gemma3 Q8_0":    loadGemma(t, "gemma3", tensor.Q8_0, 8), // past its window of 8: the rings wrap
		"qwen35 Q8_0":    loadQwen35(t, tensor.Q8_0),             // its DeltaNet scratch made at the first step
		"gemma4 Q8_0":    loadGemma4(t, tensor.Q8_0),             // shared caches, per-layer embeddings
		"qwen35moe Q8_0": loadQwen35MoE(t, tensor.Q8_0)}
	models["gpt-oss MXFP4"] = gptOSSModel(t, tensor.MXFP4) // sinks, rings, biased experts
	models["gemma3n Q8_0"] = loadGemma3n(t, tensor.Q8_0)   // AltUp's streams, LAuReL, shared caches
	for _, c := range familyReferenceCases() {
		c.spec.Type = tensor.Q8_0
		m, err := Load(testmodel.GGUF(t, c.spec), LoadOptions{})
		require.NoError(t, err)
		models[c.name] = m
	}
	for name, m := range models {
		for _, kv := range []KVType{KVF32, KVF16} {
			s := newSessionKV(t, m, kv)
			pos := 0
			allocs := testing.AllocsPerRun(50, func() {
				if err := s.forward(1+pos%250, pos%s.context, true); err != nil {
					t.Fatal(err)
				}
				pos++
			})
			assert.Zero(t, allocs, "%s %v", name, kv)
		}
	}
}
