package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// Shift tolerances, as measured on the families of shiftCases (the worst
// case of each cache type, relative to the largest logit's magnitude): a
// turned key differs from a freshly rotated one by float32 rounding, and
// over an F16 cache by one more rounding to F16 of some of its values.
const (
	shiftToleranceF32 = 2e-6 // measured at most 6.4e-7
	shiftToleranceF16 = 2e-3 // measured at most 5.7e-4
)

// shiftCases are the families a context shift is checked on, each of one
// layer: both rope layouts, partial rotary with LongRoPE's long factors and
// attention factor, YaRN, sliding windows (rings that wrap round) with a
// base of their own (gemma3's sliding layers). One layer, because only
// there do the kept tokens' keys and values not depend on the dropped ones:
// a deeper layer's were computed attending to them, and keep what they
// took from them after a shift (llama.cpp's too), so that no fresh
// evaluation reproduces them (see docs/context.md).
func shiftCases() []modelgen.Spec {
	one := withLayers(familyShape, 1)
	phi3 := modelgen.Spec{Arch: "phi3", Shape: one, Seed: 9, Std: 0.1,
		Family: modelgen.Family{RopeDims: 12, RopeOriginalContext: 16, RopeAttnFactor: 1.2,
			RopeFactorsLong: []float32{1, 2, 3, 5, 7, 9}, RopeFactorsShort: []float32{1, 1.1, 1.2, 1.3, 1.4, 1.5}}}
	qwen3 := modelgen.Spec{Arch: "qwen3", Shape: one, Seed: 5, Std: 0.1}
	qwen3.HeadDim = 32
	gemma2, gemma3 := gemmaSpec("gemma2", tensor.F32, 8), gemmaSpec("gemma3", tensor.F32, 8)
	gemma2.Layers, gemma3.Layers = 1, 1
	gptoss := modelgen.Spec{Arch: "gpt-oss",
		Shape:  modelgen.Shape{Dim: 64, HiddenDim: 64, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 300, ContextLength: 128},
		Family: modelgen.Family{SlidingWindow: 8, RopeYaRNFactor: 4, RopeOriginalContext: 32},
		MoE:    modelgen.MoE{Experts: 4, ExpertsUsed: 2, ExpertHiddenDim: 64}, Seed: 11, Std: 0.1, SeparateOutput: true}
	return []modelgen.Spec{
		{Arch: "llama", Shape: one, Seed: 1, Std: 0.1},
		{Arch: "qwen2", Shape: one, Seed: 2, Std: 0.1},
		qwen3,
		phi3,
		gemma2,
		gemma3,
		gptoss,
	}
}

// shiftContext is the sessions' context in the shift tests: a sliding
// window of 8 (a ring of 8, or 11 over an F16 cache) wraps round in it.
const shiftContext = 40

// TestShiftMatchesFreshEvaluation: after a full context shifts, the logits
// of the next tokens equal those of a fresh session that evaluates the
// kept tokens and then the same tokens, to the tolerance measured, for
// every family of shiftCases and both cache types.
func TestShiftMatchesFreshEvaluation(t *testing.T) {
	ctx := context.Background()
	for _, sp := range shiftCases() {
		m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
		require.NoError(t, err)
		require.NoError(t, m.ShiftSupport(), sp.Arch)
		for _, kv := range []KVType{KVF32, KVF16} {
			t.Run(sp.Arch+"/"+kv.String(), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(sp.Seed, 7))
				tokens := make([]int, shiftContext+4)
				for i := range tokens {
					tokens[i] = 10 + rng.IntN(m.config.VocabSize-20)
				}
				prompt, next := tokens[:shiftContext], tokens[shiftContext:]
				keep := 3
				discard := shiftDiscard(keep, shiftContext)
				kept := append(slices.Clone(prompt[:keep]), prompt[keep+discard:]...)

				shifted := newShiftSession(t, m, kv)
				_, err := shifted.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 1}, nil)
				require.NoError(t, err)
				require.NoError(t, shifted.Shift(keep, discard))
				assert.Equal(t, kept, shifted.tokens)
				fresh := newShiftSession(t, m, kv)
				worst := 0.0
				for i := range next {
					// Each step evaluates one more token after the kept
					// ones: the shifted session reuses its cache.
					in := append(slices.Clone(kept), next[:i+1]...)
					for _, s := range []*Session{shifted, fresh} {
						_, err := s.GenerateTokens(ctx, in, GenerateOptions{MaxTokens: 1}, nil)
						require.NoError(t, err)
					}
					worst = max(worst, relativeDifference(shifted.Logits(), fresh.Logits()))
				}
				tolerance := shiftToleranceF32
				if kv == KVF16 {
					tolerance = shiftToleranceF16
				}
				t.Logf("worst relative difference %.2g", worst)
				assert.Less(t, worst, tolerance)
				assert.NotZero(t, worst, "a shifted cache that equals a fresh one bit for bit: the test would not see a wrong turn")
			})
		}
	}
}

// newShiftSession is a session of shiftContext positions holding kv.
func newShiftSession(t *testing.T, m *Model, kv KVType) *Session {
	t.Helper()
	s, err := m.NewSession(SessionOptions{ContextLength: shiftContext, KVType: kv, Threads: 1})
	require.NoError(t, err)
	return s
}

// relativeDifference is the largest absolute difference of a and b over
// the largest magnitude in b.
func relativeDifference(a, b []float32) float64 {
	diff, scale := 0.0, 0.0
	for i := range b {
		diff = max(diff, math.Abs(float64(a[i]-b[i])))
		scale = max(scale, math.Abs(float64(b[i])))
	}
	return diff / scale
}

// TestGenerateShiftsTheContext: a greedy generation with ContextShift runs
// past a context of shiftContext positions, shifting as llama.cpp does, and
// the tokens it writes after its first shift are those a fresh session
// writes greedily after the tokens the shift kept; without ContextShift it
// ends at the context. (Of one layer, as shiftCases: with more, the
// continuation after a shift is not a fresh evaluation's.)
func TestGenerateShiftsTheContext(t *testing.T) {
	ctx := context.Background()
	cases := shiftCases()
	for _, sp := range []modelgen.Spec{cases[0], cases[5]} { // llama, gemma3
		m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
		require.NoError(t, err)
		t.Run(sp.Arch, func(t *testing.T) {
			prompt := []int{1, 40, 41, 42, 43, 44, 45, 46, 47, 48}
			opts := GenerateOptions{MaxTokens: 70, ContextShift: true, ShiftKeep: 2, StopTokens: nil}
			s := newShiftSession(t, m, KVF32)
			res, err := s.GenerateTokens(ctx, prompt, opts, nil)
			require.NoError(t, err)
			require.Equal(t, FinishLength, res.FinishReason, "a generation that stopped early tests nothing")
			require.Len(t, res.Tokens, 70)
			// The context fills after 31 tokens (the last is evaluated
			// after the shift); each shift drops 19, refilling 19 later.
			assert.Equal(t, 3, res.Shifts)
			assert.Equal(t, 3*19, res.ShiftedTokens)

			first := shiftContext - len(prompt) + 1 // tokens written at the first shift
			all := append(slices.Clone(prompt), res.Tokens[:first-1]...)
			kept := append(all[:2:2], all[2+19:]...)
			fresh := newShiftSession(t, m, KVF32)
			opts.MaxTokens = len(res.Tokens) - first
			want, err := fresh.GenerateTokens(ctx, append(kept, res.Tokens[first-1]), opts, nil)
			require.NoError(t, err)
			assert.Equal(t, want.Tokens, res.Tokens[first:])
			assert.Equal(t, 2, want.Shifts)

			opts = GenerateOptions{MaxTokens: 70}
			res, err = newShiftSession(t, m, KVF32).GenerateTokens(ctx, prompt, opts, nil)
			require.NoError(t, err)
			assert.Equal(t, FinishContext, res.FinishReason)
			assert.Zero(t, res.Shifts)
		})
	}
}

// TestShiftKeepsAtMostThePrompt: a ShiftKeep past the prompt's length
// keeps the prompt and no generated token, as llama.cpp clamps n_keep to
// the prompt: the generation shifts as one that asks for the prompt's
// length exactly, not in steps of a token or two.
func TestShiftKeepsAtMostThePrompt(t *testing.T) {
	m, err := Load(testmodel.GGUF(t, shiftCases()[0]), LoadOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	prompt := []int{1, 40, 41, 42, 43, 44, 45, 46, 47, 48}
	exact := GenerateOptions{MaxTokens: 70, ContextShift: true, ShiftKeep: len(prompt), StopTokens: nil}
	want, err := newShiftSession(t, m, KVF32).GenerateTokens(ctx, prompt, exact, nil)
	require.NoError(t, err)
	require.Len(t, want.Tokens, 70)
	// (40-10)/2 = 15 dropped a shift.
	assert.Equal(t, 15*want.Shifts, want.ShiftedTokens)
	over := exact
	over.ShiftKeep = 600
	got, err := newShiftSession(t, m, KVF32).GenerateTokens(ctx, prompt, over, nil)
	require.NoError(t, err)
	assert.Equal(t, want.Shifts, got.Shifts)
	assert.Equal(t, want.ShiftedTokens, got.ShiftedTokens)
	assert.Equal(t, want.Tokens, got.Tokens)
}

// TestGenerateCutsALongPrompt: with ContextShift a prompt longer than the
// context is cut as shifts would have cut it (the kept tokens, then the
// latest after whole blocks of half the rest), and a generation from the
// cut prompt reuses the cache of one that shifted the same tokens away.
func TestGenerateCutsALongPrompt(t *testing.T) {
	m, err := Load(testmodel.GGUF(t, shiftCases()[0]), LoadOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	prompt := make([]int, 70)
	for i := range prompt {
		prompt[i] = 20 + i
	}
	s := newShiftSession(t, m, KVF32)
	_, err = s.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 1}, nil)
	require.ErrorIs(t, err, ErrPromptTooLong)

	opts := GenerateOptions{MaxTokens: 1, ContextShift: true, ShiftKeep: 2}
	res, err := s.GenerateTokens(ctx, prompt, opts, nil)
	require.NoError(t, err)
	// Blocks of (40-2)/2 = 19: two bring 70 tokens to 32.
	assert.Equal(t, 1, res.Shifts)
	assert.Equal(t, 38, res.ShiftedTokens)
	assert.Equal(t, prompt, res.PromptTokens)
	assert.Equal(t, append(slices.Clone(prompt[:2]), prompt[40:]...), s.tokens)
	res, err = s.GenerateTokens(ctx, append(slices.Clone(prompt), 99), opts, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Timings.PrefillTokens, "the cut prompt's cache is reused")
}

// TestShiftRefusals: the families and positions a shift cannot take say
// why, and a generation of a model that cannot shift ends at the context.
func TestShiftRefusals(t *testing.T) {
	lfm2, err := Load(testmodel.GGUF(t, lfm2Spec(tensor.F32, 1)), LoadOptions{})
	require.NoError(t, err)
	err = lfm2.ShiftSupport()
	require.ErrorIs(t, err, ErrShiftUnsupported)
	assert.Contains(t, err.Error(), "recurrent layers")
	res, err := newShiftSession(t, lfm2, KVF32).GenerateTokens(context.Background(), []int{1, 2, 3},
		GenerateOptions{MaxTokens: 100, ContextShift: true}, nil)
	require.NoError(t, err)
	assert.Equal(t, FinishContext, res.FinishReason)
	assert.Zero(t, res.Shifts)

	m, err := Load(testmodel.GGUF(t, gemmaSpec("gemma2", tensor.F32, 8)), LoadOptions{})
	require.NoError(t, err)
	s := newShiftSession(t, m, KVF32)
	prompt := make([]int, shiftContext)
	for i := range prompt {
		prompt[i] = 20 + i
	}
	_, err = s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 1}, nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name          string
		keep, discard int
		want          error
		field         string
	}{
		{"keep past the cache", 41, 0, ErrInvalidOption, "n_keep"},
		{"discard past the cache", 30, 11, ErrInvalidOption, "n_discard"},
		{"a kept position the ring lost", 35, 2, ErrShiftUnsupported, ""},
	} {
		err := s.Shift(tc.keep, tc.discard)
		require.ErrorIs(t, err, tc.want, tc.name)
		if tc.field != "" {
			var oe *OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.field, oe.Field)
		}
	}
	assert.Len(t, s.tokens, shiftContext, "a refused shift changes nothing")
	err = (GenerateOptions{ContextShift: true}).Validate(300)
	var oe *OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "max_tokens", oe.Field)
}

// TestShiftingGenerationAllocatesOnce: a generation that shifts many times
// allocates no more than one that shifts once (the shift's scratch is the
// session's, the token list reserved for MaxTokens).
func TestShiftingGenerationAllocatesOnce(t *testing.T) {
	m, err := Load(testmodel.GGUF(t, gemmaSpec("gemma2", tensor.F32, 8)), LoadOptions{})
	require.NoError(t, err)
	s := newShiftSession(t, m, KVF16)
	allocs := func(maxTokens int) (float64, int) {
		var shifts int
		a := testing.AllocsPerRun(3, func() {
			s.Reset()
			res, err := s.GenerateTokens(context.Background(), []int{1, 2, 3}, GenerateOptions{MaxTokens: maxTokens, ContextShift: true}, nil)
			require.NoError(t, err)
			shifts = res.Shifts
		})
		return a, shifts
	}
	once, n := allocs(50)
	require.Equal(t, 1, n)
	many, n := allocs(200)
	require.Greater(t, n, 5)
	assert.LessOrEqual(t, many, once+3, "the token list and text grow with MaxTokens; nothing per token")
}

// TestShiftRunsOverDeeperModels: models of several layers shift too, with
// layers without rope (smollm3's 4th), a global layer of another base among
// sliding ones (gemma3) and layers reading another's cache (gemma4): the
// generation runs past the context, and a shift moves a shared cache once.
func TestShiftRunsOverDeeperModels(t *testing.T) {
	for _, sp := range []modelgen.Spec{
		{Arch: "smollm3", Shape: withLayers(familyShape, 4), Seed: 7, Std: 0.1},
		gemmaSpec("gemma3", tensor.F32, 8),
		gemma4Spec(tensor.F32),
	} {
		m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
		require.NoError(t, err)
		for _, kv := range []KVType{KVF32, KVF16} {
			prompt := []int{1, 40, 41, 42, 43, 44, 45, 46, 47, 48}
			s := newShiftSession(t, m, kv)
			res, err := s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 60, ContextShift: true, ShiftKeep: 1, StopTokens: []int{}}, nil)
			require.NoError(t, err, sp.Arch)
			assert.Equal(t, FinishLength, res.FinishReason, sp.Arch)
			assert.Equal(t, 2, res.Shifts, sp.Arch)
			assert.Len(t, s.tokens, shiftContext-2*19+(len(prompt)+59-shiftContext), sp.Arch)
		}
	}
}

// TestShiftIsExactWhereWindowsSlide: in a model whose every layer slides
// (gemma3 of 3 layers, windows of 8), the positions the next tokens attend
// to were never computed from a dropped token beyond their windows, and
// attention depends on positions only through their differences: so after
// a shift the next tokens' logits equal, to rounding, those of the session
// that never shifted, in every layer — what a deeper model's shift cannot
// promise (see shiftCases).
func TestShiftIsExactWhereWindowsSlide(t *testing.T) {
	sp := gemmaSpec("gemma3", tensor.F32, 8)
	sp.Layers = 3 // all sliding: gemma3's 6th layer is its first global one
	m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
	require.NoError(t, err)
	for l := range m.config.Layers {
		require.True(t, m.config.Sliding(l))
	}
	ctx := context.Background()
	for _, kv := range []KVType{KVF32, KVF16} {
		rng := rand.New(rand.NewPCG(3, 7))
		tokens := make([]int, shiftContext+4)
		for i := range tokens {
			tokens[i] = 10 + rng.IntN(m.config.VocabSize-20)
		}
		prompt, next := tokens[:shiftContext], tokens[shiftContext:]
		keep := 3
		discard := shiftDiscard(keep, shiftContext)
		shifted := newShiftSession(t, m, kv)
		_, err := shifted.GenerateTokens(ctx, prompt, GenerateOptions{MaxTokens: 1}, nil)
		require.NoError(t, err)
		require.NoError(t, shifted.Shift(keep, discard))
		kept := slices.Clone(shifted.tokens)
		whole, err := m.NewSession(SessionOptions{ContextLength: 2 * shiftContext, KVType: kv, Threads: 1})
		require.NoError(t, err)
		worst := 0.0
		for i := range next {
			for _, run := range []struct {
				s      *Session
				prefix []int
			}{{shifted, kept}, {whole, prompt}} {
				_, err := run.s.GenerateTokens(ctx, append(slices.Clone(run.prefix), next[:i+1]...), GenerateOptions{MaxTokens: 1}, nil)
				require.NoError(t, err)
			}
			worst = max(worst, relativeDifference(shifted.Logits(), whole.Logits()))
		}
		tolerance := shiftToleranceF32
		if kv == KVF16 {
			tolerance = shiftToleranceF16
		}
		t.Logf("%v: worst relative difference %.2g", kv, worst)
		assert.Less(t, worst, tolerance, "%v", kv)
	}
}
