package engine

import (
	"math"

	"github.com/wasmlm/wasmlm/internal/fmath"
)

// YaRN rope scaling (Peng et al., "YaRN: Efficient Context Window
// Extension of Large Language Models"), as llama.cpp computes it
// (ggml-cpu's rope_yarn, llama_context's yarn_attn_factor): a file whose
// rope.scaling.type is yarn (gpt-oss: factor 32 over an original context
// of 4096) rotates the pairs of a head that turn fast, those making many
// turns over the original context, as they are (extrapolated), those that
// turn slowly with their angle divided by the factor (interpolated, as
// linear scaling does), and those between by a linear mix of both; and it
// multiplies every cosine and sine by a magnitude factor.
//
// Pair i's mix of the extrapolated angle is ramp(i) = 1 - clamp((i - low)
// / max(0.001, high - low), 0, 1), low and high the correction dimensions
// where a pair makes betaFast and betaSlow turns over the original
// context: dim(β) = dims · ln(original / (2π·β)) / (2·ln θ), low =
// max(0, floor(dim(betaFast))), high = min(dims-1, ceil(dim(betaSlow))).
// The magnitude is the product of llama.cpp's two factors: the
// context's, mscale(factor) / (1 + 0.1·ln factor) · rope.scaling.attn_factor
// (mscale(s) = 1 + 0.1·ln s, 1 for s ≤ 1: so 1 up to rounding, times the
// attention factor), and the operation's own, 1 + 0.1·ln(1/freqScale)
// with the layer's scale (gpt-oss: 1 + 0.1·ln 32, 1.35). llama.cpp reads
// neither beta nor the extrapolation factor from the files of the
// families the engine runs: its defaults, betaFast 32, betaSlow 1 and an
// extrapolation factor of 1, hold. Everything is float32 arithmetic in
// llama.cpp's order.

// llama.cpp's YaRN parameters (llama_hparams' yarn_beta_fast,
// yarn_beta_slow; yarn_ext_factor 1 under YaRN scaling).
const (
	yarnBetaFast  = 32
	yarnBetaSlow  = 1
	yarnExtFactor = 1
)

// yarnRope is YaRN's rotation of one table: its correction dimensions,
// the layer's position scale and the magnitude of every cosine and sine.
type yarnRope struct {
	low, high float32 // the correction dimensions (pairs)
	freqScale float32 // 1/scale: an interpolated angle is the extrapolated one times it
	mscale    float32 // the cosines' and sines' magnitude
}

// yarn is YaRN's rotation for a table of rotary base theta and position
// scale scale in a model of config c (c.RopeYaRN).
func (c Config) yarn(theta, scale float32) yarnRope {
	dims := c.RotaryDims()
	original := c.RopeOriginalContext
	if original == 0 {
		original = c.ContextLength
	}
	logf := func(x float32) float32 { return float32(fmath.Log64(float64(x))) }
	// ggml_rope_yarn_corr_dim: n_dims·logf(n_ctx_orig/(n_rot·2·π)) / (2·logf(base))
	corrDim := func(beta float32) float32 {
		turns := float32(float32(beta*2) * float32(math.Pi))
		return float32(float32(dims)*logf(float32(original)/turns)) / float32(2*logf(theta))
	}
	low := float32(math.Floor(float64(corrDim(yarnBetaFast))))
	high := float32(math.Ceil(float64(corrDim(yarnBetaSlow))))
	// llama_context: the context's magnitude factor from the model's
	// scale, times rope.scaling.attn_factor
	factor := 1 / float32(1/c.RopeScale)
	mscale := float32(1)
	if factor > 1 {
		mscale = float32(0.1*logf(factor)) + 1
	}
	mscale *= 1 / (1 + float32(0.1*logf(factor)))
	if c.RopeAttnFactor != 0 {
		mscale *= c.RopeAttnFactor
	}
	// rope_yarn: the operation's own, from the layer's scale
	freqScale := 1 / scale
	mscale *= 1 + float32(0.1*logf(1/freqScale))
	return yarnRope{low: max(0, low), high: min(float32(dims-1), high), freqScale: freqScale, mscale: mscale}
}

// angle is pair i's angle from its extrapolated (unscaled) angle.
func (y yarnRope) angle(i int, extrap float32) float32 {
	interp := float32(y.freqScale * extrap)
	mix := y.ramp(i) * yarnExtFactor
	return float32(interp*(1-mix)) + float32(extrap*mix)
}

// ramp is how much of pair i's angle is extrapolated: 1 below the
// correction dimensions, 0 above, linear between (rope_yarn_ramp, whose
// i0/2 is the pair).
func (y yarnRope) ramp(i int) float32 {
	v := (float32(i) - y.low) / max(0.001, y.high-y.low)
	return 1 - min(1, max(0, v))
}
