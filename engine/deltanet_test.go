package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// deltaNetRef is a float64 Gated DeltaNet layer's recurrence written from
// its formulas (the recurrent form of Qwen3.5's reference, with the state
// S_h[i][j] as a k × v matrix, not the engine's transposed layout).
type deltaNetRef struct {
	d    deltaNetDims
	conv [][]float64   // per channel: its last kernel−1 inputs, oldest first
	s    [][][]float64 // per value head: S[i][j], i over the key's width, j over the value's
}

func newDeltaNetRef(d deltaNetDims) *deltaNetRef {
	r := &deltaNetRef{d: d, conv: make([][]float64, d.convDim()), s: make([][][]float64, d.vHeads)}
	for c := range r.conv {
		r.conv[c] = make([]float64, d.kernel-1)
	}
	for h := range r.s {
		r.s[h] = make([][]float64, d.head)
		for i := range r.s[h] {
			r.s[h][i] = make([]float64, d.head)
		}
	}
	return r
}

// step runs one token (its projections qkv, z, beta and alpha) and returns
// the layer's output before ssm_out.
func (r *deltaNetRef) step(w *deltaNetWeights, convW, qkv, z, beta, alpha []float32) []float64 {
	d, S := r.d, r.d.head
	silu := func(x float64) float64 { return x / (1 + math.Exp(-x)) }
	x := make([]float64, len(qkv))
	for c := range qkv {
		window := append(append([]float64(nil), r.conv[c]...), float64(qkv[c]))
		var sum float64
		for j, v := range window {
			sum += v * float64(convW[c*d.kernel+j])
		}
		x[c] = silu(sum)
		copy(r.conv[c], window[1:])
	}
	l2 := func(v []float64) {
		var ss float64
		for _, e := range v {
			ss += e * e
		}
		n := math.Max(math.Sqrt(ss), float64(w.eps))
		for i := range v {
			v[i] /= n
		}
	}
	for h := range 2 * d.kHeads {
		l2(x[h*S : (h+1)*S])
	}
	out := make([]float64, d.valueDim())
	for h := range d.vHeads {
		kh := h % d.kHeads
		q, k := x[kh*S:(kh+1)*S], x[d.keyDim()+kh*S:d.keyDim()+(kh+1)*S]
		v := x[2*d.keyDim()+h*S : 2*d.keyDim()+(h+1)*S]
		b := 1 / (1 + math.Exp(-float64(beta[h])))
		g := float64(w.a[h]) * math.Log1p(math.Exp(float64(alpha[h])+float64(w.dtBias[h])))
		s := r.s[h]
		for i := range S {
			for j := range S {
				s[i][j] *= math.Exp(g)
			}
		}
		for j := range S {
			var mem float64
			for i := range S {
				mem += s[i][j] * k[i]
			}
			delta := (v[j] - mem) * b
			for i := range S {
				s[i][j] += k[i] * delta
			}
		}
		o := out[h*S : (h+1)*S]
		for j := range S {
			for i := range S {
				o[j] += s[i][j] * q[i]
			}
			o[j] /= math.Sqrt(float64(S))
		}
		var ss float64
		for _, e := range o {
			ss += e * e
		}
		rms := 1 / math.Sqrt(ss/float64(S)+float64(w.eps))
		for j := range o {
			o[j] = o[j] * rms * float64(w.norm[j]) * silu(float64(z[h*S+j]))
		}
	}
	return out
}

// TestDeltaNetStepMatchesReference: the engine's float32 convolution
// (shortConv, SiLU) and recurrence (deltaNetStep) follow the float64
// reference over 24 tokens, their outputs and their state, for value
// heads that share key heads (4 value heads over 2 key heads), for one
// head each, and for a convolution of one position.
func TestDeltaNetStepMatchesReference(t *testing.T) {
	for _, d := range []deltaNetDims{
		{kernel: 4, head: 16, kHeads: 2, vHeads: 4},
		{kernel: 3, head: 8, kHeads: 3, vHeads: 3},
		{kernel: 1, head: 8, kHeads: 1, vHeads: 2},
	} {
		rng := rand.New(rand.NewPCG(1, uint64(d.head)))
		normal := func(n int, mean, std float64) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(mean + std*rng.NormFloat64())
			}
			return v
		}
		convW := normal(d.convDim()*d.kernel, 0, 0.5)
		w := &deltaNetWeights{dtBias: normal(d.vHeads, 0, 1), norm: normal(d.head, 1, 0.1), eps: 1e-6}
		for _, v := range normal(d.vHeads, 0, 1) {
			w.a = append(w.a, -float32(math.Exp(float64(v)))) // −exp(A_log), as the converter writes ssm_a
		}
		ref := newDeltaNetRef(d)
		cd := d.convDim()
		conv, ssm := make([]float32, d.convState()), make([]float32, d.ssmState())
		window, x := make([]float32, d.kernel*cd), make([]float32, cd)
		out, delta := make([]float32, d.valueDim()), make([]float32, d.head)
		for tok := range 24 {
			qkv, z := normal(cd, 0, 1), normal(d.valueDim(), 0, 1)
			beta, alpha := normal(d.vHeads, 0, 1), normal(d.vHeads, 0, 1)
			want := ref.step(w, convW, qkv, z, beta, alpha)
			copy(window, conv)
			copy(window[(d.kernel-1)*cd:], qkv)
			shortConv(x, window, convW, d.kernel)
			for i, v := range x {
				x[i] = silu(v)
			}
			copy(conv, window[cd:])
			deltaNetStep(d, w, ssm, x, z, beta, alpha, out, delta)
			for i, v := range want {
				require.InDelta(t, v, out[i], 1e-4*(1+math.Abs(v)), "%+v token %d output %d", d, tok, i)
			}
		}
		S := d.head
		for h := range d.vHeads {
			for i := range S {
				for j := range S {
					v := ref.s[h][i][j]
					require.InDelta(t, v, ssm[h*S*S+j*S+i], 1e-4*(1+math.Abs(v)), "%+v state of head %d [%d][%d]", d, h, i, j)
				}
			}
		}
		for c := range d.convDim() {
			for j := range d.kernel - 1 {
				require.Equal(t, float32(ref.conv[c][j]), conv[j*cd+c], "convolution state of channel %d", c)
			}
		}
	}
}
