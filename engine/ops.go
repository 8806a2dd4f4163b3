package engine

import (
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/fmath"
)

// The element-wise operations of the forward pass. Products are rounded
// explicitly (float32(a*b)) before they are added so no platform fuses them
// into multiply-adds: native and wasm builds compute the same bits.

// rmsNorm sets out = weight ⊙ x / sqrt(mean(x²) + eps).
func rmsNorm(out, x, weight []float32, eps float32) {
	x = x[:len(out)]
	weight = weight[:len(out)]
	var ss float32
	for _, v := range x {
		ss += float32(v * v)
	}
	ss = ss/float32(len(x)) + eps
	scale := float32(1 / math.Sqrt(float64(ss)))
	for i, v := range x {
		out[i] = weight[i] * float32(scale*v)
	}
}

// headsRMSNorm normalises each head of v (heads of len(weight) values) in
// place: an RMSNorm with the same weights for every head, computed as
// ggml computes it (rmsNormGGML).
func headsRMSNorm(v, weight []float32, eps float32) {
	for h := 0; h+len(weight) <= len(v); h += len(weight) {
		head := v[h : h+len(weight)]
		rmsNormGGML(head, head, weight, eps)
	}
}

// headsUnitRMSNorm normalises each head of v (heads of headDim values) in
// place without weights, as ggml_rms_norm computes it (rmsNormGGML's
// arithmetic): gemma4's values.
func headsUnitRMSNorm(v []float32, headDim int, eps float32) {
	for h := 0; h+headDim <= len(v); h += headDim {
		head := v[h : h+headDim]
		var ss float64
		for _, x := range head {
			ss += float64(x * x)
		}
		mean := float32(ss / float64(headDim))
		scale := 1 / float32(math.Sqrt(float64(mean+eps)))
		for i, x := range head {
			head[i] = scale * x
		}
	}
}

// rmsNormGGML is rmsNorm as ggml's CPU backend computes it (ggml_rms_norm
// then ggml_mul): the squares summed in float64, their mean rounded to
// float32, the scale 1/sqrt(mean + eps) in float32 arithmetic. The
// residual stream's norms keep rmsNorm, llama2.c's arithmetic (run.c sums
// in float32), which the engine's llama2.c parity rests on.
func rmsNormGGML(out, x, weight []float32, eps float32) {
	x = x[:len(out)]
	weight = weight[:len(out)]
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	mean := float32(ss / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		out[i] = weight[i] * float32(scale*v)
	}
}

// swiGLU sets gate = silu(gate) ⊙ up, silu(g) = g·σ(g) (tensor.SwiGLU: on
// a kernel natively).
func swiGLU(gate, up []float32) {
	tensor.SwiGLU(gate, up)
}

// addInto sets dst += src (tensor.Add).
func addInto(dst, src []float32) {
	tensor.Add(dst, src)
}

// ropeTable holds cos and sin of every position's rotation angle, for the
// pairs of a head's dimensions that rotate (Config.RotaryDims).
type ropeTable struct {
	cos, sin []float32 // (context, rotaryDims/2)
	half     int       // the pairs of a head that rotate: rotaryDims/2
}

// newRopeTable precomputes the rotations for positions [0, context):
// pair i of a head turns by pos/scale · theta^(-2i/rotaryDims) / factors[i]
// (factors may be nil), its cosine and sine multiplied by the attention
// factor (LongRoPE's; 1 without), as ggml's rope multiplies them; under
// YaRN scaling (Config.RopeYaRN) by YaRN's angle and magnitude instead
// (yarn.go).
func newRopeTable(c Config, theta, scale float32, factors []float32, context int) ropeTable {
	return newRopeTableDims(c, c.RotaryDims(), theta, scale, factors, context)
}

// newRopeTableDims is newRopeTable for heads whose first dims dimensions
// rotate (a layer's own: LayerSpec.HeadDim).
func newRopeTableDims(c Config, dims int, theta, scale float32, factors []float32, context int) ropeTable {
	half := dims / 2
	t := ropeTable{cos: make([]float32, context*half), sin: make([]float32, context*half), half: half}
	logTheta := fmath.Log64(float64(theta))
	invFreq := make([]float64, half)
	for i := range invFreq {
		// In float32, as llama2.c computes 1/powf(theta, 2i/headDim).
		expo := float32(2*i) / float32(dims)
		invFreq[i] = float64(float32(1 / fmath.Exp64(float64(expo)*logTheta)))
		if factors != nil {
			invFreq[i] = float64(float32(invFreq[i]) / factors[i])
		}
	}
	attn := c.RopeAttnFactor
	if attn == 0 {
		attn = 1
	}
	var yarn yarnRope
	if c.RopeYaRN {
		yarn = c.yarn(theta, scale)
		attn = yarn.mscale
	}
	for pos := 0; pos < context; pos++ {
		p := float32(float32(pos) / scale)
		for i, f := range invFreq {
			angle := float32(p * float32(f))
			if c.RopeYaRN {
				angle = yarn.angle(i, float32(float32(pos)*float32(f)))
			}
			s, co := math.Sincos(float64(angle))
			t.cos[pos*half+i] = float32(co) * attn
			t.sin[pos*half+i] = float32(s) * attn
		}
	}
	return t
}

// rotate applies position pos's rotation to every head in v (heads·headDim
// values), pairing dimensions as style says: the first t.half pairs of a
// head turn, (2i, 2i+1) or (i, i+t.half), and any dimensions past them
// (partial rotary, as Phi-4-mini's) stay as they are.
func (t ropeTable) rotate(v []float32, pos, headDim int, style RopeStyle) {
	cos := t.cos[pos*t.half : (pos+1)*t.half]
	sin := t.sin[pos*t.half : (pos+1)*t.half]
	for h := 0; h+headDim <= len(v); h += headDim {
		head := v[h : h+headDim]
		for i := range t.half {
			a, b := 2*i, 2*i+1
			if style == RopeHalves {
				a, b = i, i+t.half
			}
			x0, x1 := head[a], head[b]
			head[a] = float32(x0*cos[i]) - float32(x1*sin[i])
			head[b] = float32(x0*sin[i]) + float32(x1*cos[i])
		}
	}
}
