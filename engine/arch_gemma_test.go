package engine

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// gemmaStep is naiveModel.step for gemma2 and gemma3, from Gemma's
// formulas (the papers' and Hugging Face's modeling code, with llama.cpp's
// choices where the file leaves one: the query scale, the sliding layers
// and their rotations): the token embedding times √dim; in every layer an
// RMSNorm, q, k, v (gemma3: an RMSNorm of each q and k head), NeoX
// rotations (gemma3's sliding layers with base 10000 and no scaling), q
// times 1/√headDim, attention over every position or, in a sliding layer,
// the latest SlidingWindow ones (gemma2: soft-capped scores), an RMSNorm
// of its output, a GeGLU feed-forward and an RMSNorm of its output, each
// added to the residual stream; the output soft-capped (gemma2). All in
// float64: the engine's GELU, through llama.cpp's F16 table, is checked
// apart (TestGELUTable, TestGeGLU). The keys and values of every position
// are kept: the window is a mask, not a ring.
func (n *naiveModel) gemmaStep(token int) []float64 {
	c := n.sp
	x, pos := n.embed(token)
	for i := range x {
		x[i] *= math.Sqrt(float64(c.Dim))
	}
	hd := c.HeadSize()
	period, scalar := 2, hd // llama.cpp's pattern, and query_pre_attn_scalar
	if c.Arch == "gemma3" {
		period = 6
	}
	if (c.Arch == "gemma2" && c.Layers == 46) || (c.Arch == "gemma3" && c.Layers == 62) {
		scalar = c.Dim / c.Heads // the 27B models'
	}
	for l := range c.Layers {
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		sliding := l%period < period-1
		h := n.rms(x, name("attn_norm.weight"))
		q, k, v := n.matVec(name("attn_q.weight"), h), n.matVec(name("attn_k.weight"), h), n.matVec(name("attn_v.weight"), h)
		if c.Arch == "gemma3" {
			n.headNorm(q, name("attn_q_norm.weight"))
			n.headNorm(k, name("attn_k_norm.weight"))
		}
		theta, scale := float64(c.RopeTheta), 1.0
		if c.RopeLinearScale > 0 {
			scale = float64(c.RopeLinearScale)
		}
		if sliding && c.Arch == "gemma3" {
			theta, scale = 10000, 1
		}
		neox(q, pos, hd, theta, scale)
		neox(k, pos, hd, theta, scale)
		for i := range q {
			q[i] /= math.Sqrt(float64(scalar))
		}
		n.keys[l] = append(n.keys[l], k)
		n.vals[l] = append(n.vals[l], v)
		first := 0
		if sliding {
			first = max(0, pos-c.SlidingWindow+1)
		}
		att := make([]float64, c.Heads*hd)
		for head := range c.Heads {
			kvh := head * c.KVHeads / c.Heads
			scores := make([]float64, pos+1-first)
			for j := range scores {
				for i := range hd {
					scores[j] += q[head*hd+i] * n.keys[l][first+j][kvh*hd+i]
				}
				if c.Arch == "gemma2" {
					scores[j] = float64(c.AttnSoftCap) * math.Tanh(scores[j]/float64(c.AttnSoftCap))
				}
			}
			n.attend(att[head*hd:(head+1)*hd], scores, n.vals[l][first:], kvh*hd)
		}
		add(x, n.rms(n.matVec(name("attn_output.weight"), att), name("post_attention_norm.weight")))
		h = n.rms(x, name("ffn_norm.weight"))
		gate, up := n.matVec(name("ffn_gate.weight"), h), n.matVec(name("ffn_up.weight"), h)
		for i, g := range gate {
			gate[i] = gelu(g) * up[i]
		}
		add(x, n.rms(n.matVec(name("ffn_down.weight"), gate), name("post_ffw_norm.weight")))
	}
	logits := n.matVec("output.weight", n.rms(x, "output_norm.weight"))
	if c.FinalSoftCap > 0 {
		for i, v := range logits {
			logits[i] = float64(c.FinalSoftCap) * math.Tanh(v/float64(c.FinalSoftCap))
		}
	}
	return logits
}

// neox rotates each head of v (hd values) by position pos, pairing its
// first half with its second, pair i turning by pos/scale · theta^(-2i/hd).
func neox(v []float64, pos, hd int, theta, scale float64) {
	for h := 0; h < len(v); h += hd {
		for i := range hd / 2 {
			angle := float64(pos) / scale * math.Pow(theta, -float64(2*i)/float64(hd))
			x0, x1 := v[h+i], v[h+i+hd/2]
			v[h+i] = x0*math.Cos(angle) - x1*math.Sin(angle)
			v[h+i+hd/2] = x0*math.Sin(angle) + x1*math.Cos(angle)
		}
	}
}

// gelu is GELU's tanh approximation.
func gelu(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*x*(1+0.044715*x*x)))
}

// TestGemmaMatchesNaiveReference checks the engine's logits at every
// position of 40 tokens against the float64 reference of Gemma's formulas
// (gemmaStep), for models whose window of 8 positions the tokens pass many
// times over: gemma2 with Gemma 2's soft-caps and with small ones, with
// linear rope scaling; gemma3 of 7 layers (the sixth global) with heads
// wider than dim/heads, its global rope base 1e6, tied or separate
// output, linear scaling of its global layers, a final soft-cap. The
// engine evaluates GELU in float32 here (Config.exactGELU); the 27B
// models' query scale, whose 46 layers of float32 would need a looser
// bound, is checked against llama.cpp (TestGemmaKeysAsLlamaCpp).
func TestGemmaMatchesNaiveReference(t *testing.T) {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 3, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 64}
	gemma := func(arch string, edit func(*modelgen.Spec)) modelgen.Spec {
		sp := modelgen.Spec{Arch: arch, Shape: shape, Family: modelgen.Family{SlidingWindow: 8}, Seed: 9, Std: 0.2, OutputStd: 0.3}
		if arch == "gemma3" {
			sp.Layers, sp.HeadDim = 7, 32
		}
		edit(&sp)
		return sp
	}
	tests := []struct {
		name string
		spec modelgen.Spec
	}{
		{"gemma2", gemma("gemma2", func(*modelgen.Spec) {})},
		{"gemma2 small soft-caps", gemma("gemma2", func(sp *modelgen.Spec) { sp.AttnSoftCap, sp.FinalSoftCap = 0.5, 2 })},
		{"gemma2 linear rope scaling", gemma("gemma2", func(sp *modelgen.Spec) { sp.RopeLinearScale = 4 })},
		{"gemma3 tied output", gemma("gemma3", func(*modelgen.Spec) {})},
		{"gemma3 separate output", gemma("gemma3", func(sp *modelgen.Spec) { sp.SeparateOutput = true })},
		{"gemma3 linear rope scaling of global layers", gemma("gemma3", func(sp *modelgen.Spec) { sp.RopeLinearScale = 8 })},
		{"gemma3 final soft-cap", gemma("gemma3", func(sp *modelgen.Spec) { sp.FinalSoftCap = 3 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := testmodel.GGUF(t, tt.spec)
			m, err := Load(data, LoadOptions{})
			require.NoError(t, err)
			m.config.exactGELU = true
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			sp := tt.spec
			ref := &naiveModel{f: f, sp: sp}
			ref.sp.NormEps = modelgen.DefaultNormEps
			if sp.RopeTheta == 0 {
				ref.sp.RopeTheta = map[string]float32{"gemma2": 10000, "gemma3": 1e6}[sp.Arch]
			}
			if sp.Arch == "gemma2" && sp.AttnSoftCap == 0 {
				ref.sp.AttnSoftCap, ref.sp.FinalSoftCap = 50, 30
			}
			s := newSession(t, m)
			for pos := range 40 {
				tok := 3 + (pos*131)%290
				want := ref.gemmaStep(tok)
				require.NoError(t, s.forward(tok, pos, true))
				for i, w := range want {
					require.InDelta(t, w, s.logits[i], 1e-4*math.Max(1, math.Abs(w)), "pos %d logit %d", pos, i)
				}
			}
			assert.Equal(t, sp.SeparateOutput, m.weights.Output != m.weights.TokenEmbedding)
		})
	}
}
