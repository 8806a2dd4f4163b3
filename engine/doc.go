// Package engine runs llama-family language models: it loads weights from
// model bytes without copying them, runs the transformer forward pass with a
// KV cache, and drives generation (sampling, streaming text, stop conditions).
//
// The engine knows nothing of JavaScript, HTTP or files: it takes []byte and
// reports through callbacks, so the same code runs natively, in a browser's
// Web Worker and in an edge worker.
//
// Each model family is declared once, as a table (arch.go): its
// hyper-parameter keys and its tensors, each with its GGUF name, its shape
// and, for a model split across workers, the axis along which a part keeps
// only some rows. The llama family's:
//
//	key prefix "llama."   context_length, embedding_length, feed_forward_length, block_count,
//	                      attention.head_count, attention.head_count_kv (= head_count),
//	                      rope.freq_base (10000), attention.layer_norm_rms_epsilon (1e-5)
//
//	tensor                      rows × cols          split along   held in
//	token_embd.weight           vocab × dim          vocab         TokenEmbedding
//	output_norm.weight          dim                  —             OutputNorm
//	output.weight (optional)    vocab × dim          vocab         Output (else tied to token_embd)
//	rope_freqs.weight (opt.)    headDim/2            —             RopeFreqFactors
//	blk.N.attn_norm.weight      dim                  —             Layers[N].AttnNorm
//	blk.N.attn_q.weight         heads·headDim × dim  q heads       Layers[N].Wq
//	blk.N.attn_k.weight         kvDim × dim          kv heads      Layers[N].Wk
//	blk.N.attn_v.weight         kvDim × dim          kv heads      Layers[N].Wv
//	blk.N.attn_q.bias           heads·headDim        q heads       Layers[N].Bq  ┐ optional, all or none
//	blk.N.attn_{k,v}.bias       kvDim                kv heads      Layers[N].Bk  ┘ (qwen2: required)
//	blk.N.attn_output.weight    dim × dim            —             Layers[N].Wo
//	blk.N.ffn_norm.weight       dim                  —             Layers[N].FFNNorm
//	blk.N.ffn_gate.weight       hidden × dim         hidden        Layers[N].WGate
//	blk.N.ffn_up.weight         hidden × dim         hidden        Layers[N].WUp
//	blk.N.ffn_down.weight       dim × hidden         dim           Layers[N].WDown
//
// qwen2 and qwen3 are that table with biases, or with per-head q/k norms;
// the families whose blocks differ more (phi3's fused matrices and
// LongRoPE, smollm3's layers without rope, olmo2's post-norms, granite's
// multipliers, gemma's sliding windows) have a file each, arch_<family>.go.
//
// What a layer computes is a value, its recipe (LayerSpec, layer.go): its
// kind, where it normalises, its q/k norm, its attention (a sliding
// window, rotations or none, the scale, a soft-cap), its feed-forward
// (SwiGLU, GeGLU, GELU) and its residual scale. A family's table gives the
// recipe its layers share, the file's keys what differs layer by layer,
// and Config.LayerSpecs holds one per layer (Info.LayerSpecs shows them).
// The forward pass asks the recipe of the layer it computes, never the
// family; the zero recipe is the llama family's layer.
//
// The forward pass (forward.go) reads like llama2.c's run.c: one layer
// loop, for a token and for a block of prompt tokens. It computes through
// a bounded set of steps (forward_steps.go, and attention over the KV
// cache in kv.go): the products with the weights, the norms, the q/k
// finishing (rotary embeddings), attention, the gated units and the
// model's ends. That set is the seam where a second compute backend (the
// GPU) plugs in under the same loop; the CPU's steps are the bit-exact
// reference. A model split across workers (engine/shard) plugs into the
// loop at its gather points through the Peers interface, and a whole
// model's Peers does nothing.
package engine
