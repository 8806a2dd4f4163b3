package engine

// phi3 is Microsoft's Phi-3, Phi-3.5 and Phi-4-mini (llama.cpp's
// LLM_ARCH_PHI3): the llama block with
//
//   - q, k and v in one fused matrix, blk.N.attn_qkv (rows: the queries,
//     then the keys, then the values), and the gate and up projections in
//     one, blk.N.ffn_up (2·hidden rows: the gate's first, SwiGLU's silu(gate)
//     ⊙ up as ggml_swiglu takes them). Each piece is a view of its rows
//     (tensorSpec.fused), so the forward pass is the llama one;
//   - NeoX rope over the first rope.dimension_count dimensions of a head
//     (partial rotary: Phi-4-mini turns 96 of 128);
//   - LongRoPE (Phi-3/3.5 128k, Phi-4-mini): frequency factors
//     rope_factors_long.weight and rope_factors_short.weight, the long ones
//     for a session whose context exceeds rope.scaling.original_context_length
//     (ropeFactors), and rope.scaling.attn_factor on every rotation.
//
// Its files say attention.sliding_window (2047 for Phi-3-mini, 0 for
// Phi-4-mini, as the converter writes it), which llama.cpp ignores,
// warning that Phi's sliding window is disabled: so does the engine, and
// every layer attends over the whole context.
var phi3 = &architecture{
	name: "phi3", ropeStyle: RopeHalves, keys: llamaKeys, partialRope: true,
	tensors: phi3Tensors(),
	// llama.cpp would also take separate q, k and v, and biases of the
	// fused q/k/v, which the converter never writes.
	unsupported: []string{"blk.%d.attn_q.weight", "blk.%d.attn_k.weight", "blk.%d.attn_v.weight", "blk.%d.attn_qkv.bias"},
}

// phi3Tensors is phi3's tensor table (llama.cpp's, and its converter's).
func phi3Tensors() []tensorSpec {
	qkv := []dimension{dimQ, dimKV, dimKV}
	gateUp := []dimension{dimHidden, dimHidden}
	return []tensorSpec{
		{name: "token_embd.weight", rows: dimVocab, cols: dimModel, split: true, at: slotTokenEmbedding},
		{name: "output_norm.weight", rows: dimModel, at: slotOutputNorm},
		{name: nameOutput, rows: dimVocab, cols: dimModel, split: true, optional: true, at: slotOutput}, // absent: tied (Phi-4-mini)
		{name: "rope_factors_long.weight", rows: dimRopePairs, optional: true, together: "LongRoPE factors", at: slotRopeFactorsLong},
		{name: "rope_factors_short.weight", rows: dimRopePairs, optional: true, together: "LongRoPE factors", at: slotRopeFactorsShort},

		{name: "blk.%d.attn_norm.weight", rows: dimModel, at: slotAttnNorm},
		{name: "blk.%d.attn_qkv.weight", rows: dimQ, cols: dimModel, split: true, fused: qkv, piece: 0, at: slotWq},
		{name: "blk.%d.attn_qkv.weight", rows: dimKV, cols: dimModel, split: true, fused: qkv, piece: 1, at: slotWk},
		{name: "blk.%d.attn_qkv.weight", rows: dimKV, cols: dimModel, split: true, fused: qkv, piece: 2, at: slotWv},
		{name: "blk.%d.attn_output.weight", rows: dimModel, cols: dimQ, at: slotWo},
		{name: "blk.%d.ffn_norm.weight", rows: dimModel, at: slotFFNNorm},
		{name: "blk.%d.ffn_up.weight", rows: dimHidden, cols: dimModel, split: true, fused: gateUp, piece: 0, at: slotWGate},
		{name: "blk.%d.ffn_up.weight", rows: dimHidden, cols: dimModel, split: true, fused: gateUp, piece: 1, at: slotWUp},
		{name: "blk.%d.ffn_down.weight", rows: dimModel, cols: dimHidden, split: true, at: slotWDown},
	}
}

// ropeFactors are the frequency factors a session of context positions
// rotates by, as llama.cpp's get_rope_factors chooses them: the file's
// rope_freqs, or LongRoPE's long factors when the session's context
// exceeds the original training context and its short ones otherwise
// (nil when the file has none). llama.cpp compares its context rounded up
// to a multiple of 256, as it rounds every context it allocates, so the
// engine compares the same: a session of 100 positions of a model first
// trained for 128 rotates by the long factors in both.
func (w *modelWeights) ropeFactors(c Config, context int) []float32 {
	if w.RopeFreqFactors != nil || w.RopeFactorsLong == nil {
		return w.RopeFreqFactors
	}
	original := c.RopeOriginalContext
	if original == 0 {
		original = c.ContextLength
	}
	if llamaCppContext(context) > original {
		return w.RopeFactorsLong
	}
	return w.RopeFactorsShort
}

// llamaCppContext is the context llama.cpp allocates when asked for n
// positions: n rounded up to a multiple of 256.
func llamaCppContext(n int) int { return (n + 255) / 256 * 256 }
