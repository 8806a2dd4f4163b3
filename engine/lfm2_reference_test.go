package engine

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// naiveLFM2 is the float64 reference of lfm2, from Liquid AI's modeling
// code (Lfm2ShortConv: in_proj to B, C and x; a causal depthwise conv1d
// of B·x, padded by kernel−1 on the left; C times it; out_proj) and
// llama.cpp's graph for the rest: each layer's operator norm, then either
// that short convolution or attention with an RMSNorm of each query and
// key head and NeoX rotations; an RMSNorm and SwiGLU; the final norm
// token_embd_norm. It keeps every position's convolution inputs and keys,
// not a state.
type naiveLFM2 struct {
	n      *naiveModel
	pos    int
	inputs [][][]float64 // (layer, pos, dim): a short convolution's B·x so far
	keys   [][][]float64 // (layer, pos, kvDim)
	vals   [][][]float64
}

func (r *naiveLFM2) step(token int) []float64 {
	n, c := r.n, r.n.sp
	if r.inputs == nil {
		r.inputs, r.keys, r.vals = make([][][]float64, c.Layers), make([][][]float64, c.Layers), make([][][]float64, c.Layers)
	}
	emb, _ := n.tensor("token_embd.weight")
	row := make([]float32, c.Dim)
	emb.Row(row, token)
	x := make([]float64, c.Dim)
	for i, v := range row {
		x[i] = float64(v)
	}
	pos, hd := r.pos, c.HeadSize()
	r.pos++
	for l := range c.Layers {
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		h := n.rms(x, name("attn_norm.weight"))
		var out []float64
		if kernel, ok := n.tensor(name("shortconv.conv.weight")); ok {
			bcx := n.matVec(name("shortconv.in_proj.weight"), h)
			b, cg, xx := bcx[:c.Dim], bcx[c.Dim:2*c.Dim], bcx[2*c.Dim:]
			bx := make([]float64, c.Dim)
			for i := range bx {
				bx[i] = b[i] * xx[i]
			}
			r.inputs[l] = append(r.inputs[l], bx)
			y := make([]float64, c.Dim)
			w := make([]float32, kernel.Cols)
			for ch := range y {
				kernel.Row(w, ch)
				for j := range w { // weight j reads position pos-(kernel-1)+j; before 0, the padding's zeros
					if t := pos - (kernel.Cols - 1) + j; t >= 0 {
						y[ch] += float64(w[j]) * r.inputs[l][t][ch]
					}
				}
				y[ch] *= cg[ch]
			}
			out = n.matVec(name("shortconv.out_proj.weight"), y)
		} else {
			q, k, v := n.matVec(name("attn_q.weight"), h), n.matVec(name("attn_k.weight"), h), n.matVec(name("attn_v.weight"), h)
			n.headNorm(q, name("attn_q_norm.weight"))
			n.headNorm(k, name("attn_k_norm.weight"))
			neox(q, pos, hd, float64(c.RopeTheta), 1)
			neox(k, pos, hd, float64(c.RopeTheta), 1)
			r.keys[l], r.vals[l] = append(r.keys[l], k), append(r.vals[l], v)
			att := make([]float64, c.Heads*hd)
			for head := range c.Heads {
				kvh := head * c.KVHeads / c.Heads
				scores := make([]float64, pos+1)
				for t := range scores {
					for i := range hd {
						scores[t] += q[head*hd+i] * r.keys[l][t][kvh*hd+i]
					}
					scores[t] /= math.Sqrt(float64(hd))
				}
				n.attend(att[head*hd:(head+1)*hd], scores, r.vals[l], kvh*hd)
			}
			out = n.matVec(name("attn_output.weight"), att)
		}
		add(x, out)
		h = n.rms(x, name("ffn_norm.weight"))
		gate, up := n.matVec(name("ffn_gate.weight"), h), n.matVec(name("ffn_up.weight"), h)
		for i, g := range gate {
			gate[i] = g / (1 + math.Exp(-g)) * up[i]
		}
		add(x, n.matVec(name("ffn_down.weight"), gate))
	}
	return n.matVec("output.weight", n.rms(x, "token_embd_norm.weight"))
}

// TestLFM2MatchesNaiveReference: the engine's lfm2 logits at every
// position, short convolutions (whose state fills, then slides) beside
// attention, are the float64 reference's.
func TestLFM2MatchesNaiveReference(t *testing.T) {
	for _, sep := range []bool{true, false} {
		sp := lfm2Spec(tensor.F32, 9)
		sp.SeparateOutput, sp.OutputStd, sp.MuteSpecial = sep, 0.1, false
		sp.RopeTheta, sp.NormEps = modelgen.DefaultRopeTheta, modelgen.DefaultNormEps // the reference reads them from the spec
		t.Run(fmt.Sprintf("separate output %v", sep), func(t *testing.T) {
			data := testmodel.GGUF(t, sp)
			m, err := Load(data, LoadOptions{})
			require.NoError(t, err)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			ref := &naiveLFM2{n: &naiveModel{f: f, sp: sp}}
			s := newSession(t, m)
			for pos, tok := range []int{1, 270, 5, 299, 42, 42, 100, 3, 260, 7, 8, 9} {
				want := ref.step(tok)
				require.NoError(t, s.forward(tok, pos, true))
				for i, w := range want {
					require.InDelta(t, w, s.logits[i], 1e-4*math.Max(1, math.Abs(w)), "pos %d logit %d", pos, i)
				}
			}
		})
	}
}
