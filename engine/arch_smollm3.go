package engine

// smollm3 is Hugging Face's SmolLM3 (llama.cpp's LLM_ARCH_SMOLLM3): the
// llama block (and llama's rope, adjacent pairs, as its converter permutes
// q and k as for llama) whose every 4th layer (3, 7, 11, …) attends
// without rotary embeddings: "NoPE" layers. The files do not say which:
// the Hugging Face config's no_rope_layers is not converted, and llama.cpp
// fixes the interval at 4 (n_no_rope_layer_step), as the engine does.
var smollm3 = &architecture{
	name: "smollm3", ropeStyle: RopeInterleaved, keys: llamaKeys, noRopeInterval: 4,
	// llama.cpp computes with q/k/v biases when a file has them, not with
	// rope_freqs.weight (a file that has it it refuses).
	tensors:     withoutTensors(llamaTensors(biasOptional, false), "rope_freqs.weight"),
	unsupported: []string{"blk.%d.attn_qkv.weight", "rope_freqs.weight"},
}

// withoutTensors is the table t without the tensors named.
func withoutTensors(t []tensorSpec, names ...string) []tensorSpec {
	var out []tensorSpec
	for _, s := range t {
		keep := true
		for _, n := range names {
			keep = keep && s.name != n
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}
