package engine

import (
	"fmt"
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Gemma 4's mixtures of experts (Gemma-4-26B-A4B; llama.cpp's gemma4
// graph) add to moe.go's what its recipe's options and weights say:
//
//   - a dense feed-forward beside the experts (MoESpec.Dense): the
//     layer's ffn_gate, ffn_up and ffn_down on the layer's normalised
//     input (ffn_norm), its output normalised by post_ffw_norm_1; the
//     experts on the residual stream normalised by their own
//     pre_ffw_norm_2, their weighted sum normalised by post_ffw_norm_2;
//     the two added, then normalised by the layer's post_ffw_norm and
//     added to the residual stream as a dense feed-forward's output is;
//   - the router on the residual stream RMS-normalised without weights,
//     scaled by 1/√dim and by a weight per channel, ffn_gate_inp.scale
//     (MoESpec.RouterNorm);
//   - each expert's output scaled by its own factor,
//     ffn_down_exps.scale (one per expert), where the layer has it
//     (llama.cpp multiplies it in after the down product, before the
//     router's weight);
//   - the experts' gate and up stacked in one tensor,
//     ffn_gate_up_exps (each expert's gate rows, then its up rows), as
//     the converter writes Gemma 4's, in place of ffn_gate_exps and
//     ffn_up_exps: each expert's gate and up are views of its rows of it.

// moeOwnInputs reports whether some layer of c gives its experts or its
// router inputs of their own (MoESpec.Dense, RouterNorm), which the
// session's scratch then holds.
func (c Config) moeOwnInputs() bool {
	for _, s := range c.LayerSpecs {
		if s.FFN == FFNMoE && (s.MoE.Dense || s.MoE.RouterNorm) {
			return true
		}
	}
	return false
}

// moeInputs are the experts' and the router's inputs for the pass's n
// rows: xn, the layer's normalised input, unless the recipe gives them
// their own: with Dense, the residual stream x normalised by the
// experts' norm (FFNPreNorm2, ggml's arithmetic), which the router then
// reads too; with RouterNorm, the router x RMS-normalised without
// weights, times 1/√dim (in float32, as llama.cpp's 1.0f/sqrtf(n_embd)),
// times RouterScale, each a rounded product as ggml's operations are.
func (s *Session) moeInputs(moe *MoESpec, lw *layerWeights, x, xn []float32, n int) (in, router []float32) {
	c, sc := &s.model.config, s.moe
	dim := c.Dim
	in, router = xn, xn
	if moe.Dense {
		in = sc.in[:n*dim]
		for i := range n {
			rmsNormGGML(row(in, i, dim), row(x, i, dim), lw.FFNPreNorm2, c.NormEps)
		}
		router = in
	}
	if moe.RouterNorm {
		router = sc.router[:n*dim]
		copy(router, x[:n*dim])
		headsUnitRMSNorm(router, dim, c.NormEps) // each row a "head" of dim values
		scaleInto(router, 1/float32(math.Sqrt(float64(float32(dim)))))
		for i := range n {
			r := row(router, i, dim)
			for d, w := range lw.RouterScale {
				r[d] *= w
			}
		}
	}
	return in, router
}

// denseBeside adds the layer's dense feed-forward of the n rows xn (its
// normalised input) to the experts' weighted outputs out, each branch
// normalised on its own (ggml's arithmetic) as MoESpec.Dense says:
// out = RMSNorm(out)·post_ffw_norm_2 + RMSNorm(down(act(gate·xn) ⊙
// up·xn))·post_ffw_norm_1, the products in a's feed-forward buffers.
func (s *Session) denseBeside(moe *MoESpec, lw *layerWeights, a *activations, xn, out []float32, n int) {
	c := &s.model.config
	dim, hidden := c.Dim, lw.WGate.Rows
	gate, up, down := a.gate[:n*hidden], a.up[:n*hidden], a.down[:n*dim]
	s.products(xn, n, tensor.Product{Out: gate, M: lw.WGate}, tensor.Product{Out: up, M: lw.WUp})
	c.gateUnits(moe.Activation, gate, up)
	s.products(gate, n, tensor.Product{Out: down, M: lw.WDown})
	for i := range n {
		o, d := row(out, i, dim), row(down, i, dim)
		rmsNormGGML(o, o, lw.FFNPostNorm2, c.NormEps)
		rmsNormGGML(d, d, lw.FFNPostNorm1, c.NormEps)
		addInto(o, d)
	}
}

// scaleExpertOutput multiplies o, expert e's down product, by the
// expert's output scale where the layer has them (DownExpsScale).
func (lw *layerWeights) scaleExpertOutput(o []float32, e int) {
	if lw.DownExpsScale != nil {
		scaleInto(o, lw.DownExpsScale[e])
	}
}

// gateUpOf views expert e's gate and up matrices in the stack of n
// experts' gate and up rows (ffn_gate_up_exps: each expert's gate rows,
// then its up rows).
func gateUpOf(stack *tensor.Matrix, n, e int) (gate, up *tensor.Matrix, err error) {
	rows := stack.Rows / n
	if rows%2 != 0 {
		return nil, nil, fmt.Errorf("an expert's gate and up of %d rows in all", rows)
	}
	if gate, err = stack.Slice(e*rows, e*rows+rows/2); err != nil {
		return nil, nil, err
	}
	up, err = stack.Slice(e*rows+rows/2, (e+1)*rows)
	return gate, up, err
}
