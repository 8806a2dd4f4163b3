package engine

import (
	"math"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// Google's Gemma 2 and Gemma 3 (text), as llama.cpp's converter writes them
// and llama.cpp runs them (LLM_ARCH_GEMMA2, LLM_ARCH_GEMMA3). Their layers
// are the llama family's with:
//
//   - the token embeddings multiplied by √dim (in float32, after the
//     lookup); the output tied to them (gemma2 always; gemma3 unless the
//     file has output.weight);
//   - an RMSNorm of the attention's output and one of the feed-forward's
//     output before each is added to the residual stream
//     (blk.N.post_attention_norm, blk.N.post_ffw_norm). The converter adds
//     1 to every norm weight (Gemma's RMSNorm multiplies by 1 + w), so the
//     file's weights are used as they are;
//   - a GELU-gated feed-forward (GeGLU), GELU's tanh approximation as
//     ggml's CPU backend computes it (gelu.go);
//   - NeoX rotations, then the queries scaled by 1/√query_pre_attn_scalar,
//     which llama.cpp does not read from the file: 1/√headDim, but for the
//     27B models (46 layers of gemma2, 62 of gemma3) 1/√(dim/heads); the
//     scores are then not scaled again;
//   - sliding-window attention on some layers (AttentionSpec.Window), of a window
//     of attention.sliding_window positions (gemma2: 4096 when the file
//     does not say; gemma3: none): of every attention.sliding_window_pattern
//     layers (gemma2: 2, gemma3: 6 when absent) all but the last. The
//     sliding layers rotate with a base of their own, rope.freq_base_swa
//     (when absent gemma2's is the model's, gemma3's 10000), gemma2's with
//     the file's linear scaling, gemma3's unscaled;
//   - gemma2: the attention scores soft-capped, cap·tanh(score/cap), before
//     the softmax (attn_logit_softcapping, 50 when absent) and the logits
//     likewise (final_logit_softcapping, 30);
//   - gemma3: an RMSNorm of each query and key head (attn_q_norm,
//     attn_k_norm) before the rotation; no attention soft-capping, and the
//     logits soft-capped only if the file says (Gemma 3's do not).
//
// The keys llama.cpp reads for them, and what it does with each, were
// checked against its build in node-llama-cpp 3.21.1 (see
// TestGemmaKeysAsLlamaCpp).
var (
	gemma2 = &architecture{
		name: "gemma2", ropeStyle: RopeHalves, tensors: gemmaTensors(false), layer: gemmaLayer(QKNormNone),
		keys: gemmaKeys(4096, 2, func(c Config) float32 { return c.RopeTheta },
			configKey{key: "attn_logit_softcapping", float: func(p *hyperParams) *float32 { return &p.layers.softCap },
				defaultFloat: func(Config) float32 { return 50 }},
			configKey{key: "final_logit_softcapping", float: func(p *hyperParams) *float32 { return &p.FinalSoftCap },
				defaultFloat: func(Config) float32 { return 30 }}),
		configure: func(_ *gguf.File, p *hyperParams) error {
			configureGemma(p, 46)
			p.layers.windowScale = p.RopeScale
			return nil
		},
	}
	gemma3 = &architecture{
		name: "gemma3", ropeStyle: RopeHalves, tensors: gemmaTensors(true), layer: gemmaLayer(QKNormHeads),
		keys: gemmaKeys(0, 6, func(Config) float32 { return 10000 },
			configKey{key: "final_logit_softcapping", float: func(p *hyperParams) *float32 { return &p.FinalSoftCap },
				defaultFloat: func(Config) float32 { return 0 }}),
		configure: func(_ *gguf.File, p *hyperParams) error {
			configureGemma(p, 62)
			p.layers.windowScale = 1
			return nil
		},
	}
)

// gemmaLayer is the gemma families' layer: pre- and post-norms, q/k norms
// as qk says, queries scaled, GeGLU.
func gemmaLayer(qk QKNorm) LayerSpec {
	return LayerSpec{Norms: NormsPreAndPost, QKNorm: qk, Attention: AttentionSpec{ScaleQueries: true}, FFN: FFNGeGLU}
}

// gemmaKeys are the gemma families' hyper-parameters: the llama family's,
// the sliding window (window positions when absent), its pattern (period
// when absent), the sliding layers' rope base (rope.freq_base_swa;
// ropeBase when absent), and more.
func gemmaKeys(window, period int, ropeBase func(Config) float32, more ...configKey) []configKey {
	return append(append(slices.Clip(llamaKeys),
		configKey{key: "attention.sliding_window", int: func(p *hyperParams) *int { return &p.layers.window },
			defaultInt: func(Config) int { return window }},
		configKey{key: "attention.sliding_window_pattern", int: func(p *hyperParams) *int { return &p.layers.windowPeriod },
			defaultInt: func(Config) int { return period }},
		configKey{key: "rope.freq_base_swa", float: func(p *hyperParams) *float32 { return &p.layers.windowTheta },
			defaultFloat: ropeBase}),
		more...)
}

// configureGemma sets what both gemma families derive: the embedding
// scale and the query scale (1/√headDim but for the 27B model, which has
// layers27B layers).
func configureGemma(p *hyperParams, layers27B int) {
	c := &p.Config
	if c.Dim <= 0 || c.Heads <= 0 {
		return // validate says what is wrong
	}
	// In float32, as llama.cpp: sqrtf(n_embd), and 1.0f/sqrtf(n) where n
	// is an integer (dim/heads divides as integers).
	c.EmbeddingScale = float32(math.Sqrt(float64(float32(c.Dim))))
	n := c.HeadDim()
	if c.Layers == layers27B {
		n = c.Dim / c.Heads
	}
	p.layers.attnScale = 1 / float32(math.Sqrt(float64(float32(n))))
}

// gemmaTensors is the gemma families' tensor table: the llama family's,
// without biases or rope frequency factors, with post-attention and
// post-feed-forward norms, and for gemma3 q/k norms and an optional output
// (gemma2's is always the token embedding: llama.cpp reads no
// output.weight).
func gemmaTensors(gemma3 bool) []tensorSpec {
	var t []tensorSpec
	for _, s := range llamaTensors(biasNone, gemma3) {
		if s.name == "rope_freqs.weight" || (!gemma3 && s.name == nameOutput) {
			continue
		}
		t = append(t, s)
	}
	return append(t, postNormTensors()...)
}

// postNormTensors are the norms of the attention's and the feed-forward's
// outputs (gemma, olmo2).
func postNormTensors() []tensorSpec {
	return []tensorSpec{
		{name: "blk.%d.post_attention_norm.weight", rows: dimModel, at: slotAttnPostNorm},
		{name: "blk.%d.post_ffw_norm.weight", rows: dimModel, at: slotFFNPostNorm},
	}
}

// softCap sets x = limit·tanh(x/limit) as ggml computes it: x times the
// float32 1/limit, tanh, times limit.
func softCap(x []float32, limit float32) {
	inv := 1 / limit
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(float32(v*inv)))) * limit
	}
}
