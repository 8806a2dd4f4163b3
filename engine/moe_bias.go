package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// gpt-oss's mixtures of experts have biases (llama.cpp's build_moe_ffn
// with ffn_gate_inp_b and the experts' ffn_*_exps_b): the router's, added
// to its logits before the experts are chosen, and each expert's gate,
// up and down products', added to the products' outputs (before the
// activation, and before the weighted sum). The experts' biases are 2-D
// tensors in the file (GGUF dims [rows, experts]: a row per expert),
// which llama-quantize leaves F32; each expert's row is a view of it.

// moeBiasTensors are the biases of a mixture of experts' router and
// experts (gpt-oss).
func moeBiasTensors() []tensorSpec {
	return []tensorSpec{
		{name: "blk.%d.ffn_gate_inp.bias", rows: dimExperts, at: slotRouterBias},
		{name: "blk.%d.ffn_gate_exps.bias", rows: dimExperts, cols: dimExpertFF, at: slotBGateExps},
		{name: "blk.%d.ffn_down_exps.bias", rows: dimExperts, cols: dimModel, at: slotBDownExps},
		{name: "blk.%d.ffn_up_exps.bias", rows: dimExperts, cols: dimExpertFF, at: slotBUpExps},
	}
}

// viewExpertBiases sets expert e's bias views in x, where the layer has
// the experts' biases: its rows of BGateExps, BUpExps and BDownExps,
// which must be F32 (all three, or none).
func (lw *layerWeights) viewExpertBiases(e int, x *expertWeights) error {
	biases := []*tensor.Matrix{lw.BGateExps, lw.BUpExps, lw.BDownExps}
	if lw.BGateExps == nil && lw.BUpExps == nil && lw.BDownExps == nil {
		return nil
	}
	for i, out := range []*[]float32{&x.gateBias, &x.upBias, &x.downBias} {
		m := biases[i]
		switch {
		case m == nil:
			return fmt.Errorf("%w: the experts have %d of their 3 biases (gate, up, down)", ErrFormat, countNonNil(biases))
		case m.Type != tensor.F32:
			return fmt.Errorf("%w: an expert bias of type %v (want F32, as llama-quantize leaves biases)", ErrUnsupported, m.Type)
		case e >= m.Rows:
			return fmt.Errorf("%w: an expert bias of %d rows for expert %d", ErrFormat, m.Rows, e)
		}
		all := tensor.Float32s(m.Data)
		*out = all[e*m.Cols : (e+1)*m.Cols : (e+1)*m.Cols]
	}
	return nil
}

// countNonNil is how many of ms are not nil.
func countNonNil(ms []*tensor.Matrix) int {
	n := 0
	for _, m := range ms {
		if m != nil {
			n++
		}
	}
	return n
}
