package engine

// The steps of a layer whose variants its recipe (LayerSpec) chooses, and
// those of the model's ends; each is the llama family's step for the zero
// recipe.

// scaleEmbedding multiplies the token embeddings in x (rows of Dim values)
// by EmbeddingScale (granite, gemma), as ggml_scale does.
func (c *Config) scaleEmbedding(x []float32) {
	if c.EmbeddingScale != 0 {
		scaleInto(x, c.EmbeddingScale)
	}
}

// preNorm sets xn to a sub-layer's input: x normalised with weight, or,
// for a layer without pre-norms (olmo2), x itself.
func (c *Config) preNorm(norms Norms, xn, x, weight []float32) {
	if !norms.pre() {
		copy(xn, x)
		return
	}
	rmsNorm(xn, x, weight, c.NormEps)
}

// addSublayer adds a sub-layer's output out to the residual stream x (rows
// of Dim values each): normalised first with post where the layer has
// post-norms (olmo2, gemma; ggml's RMSNorm arithmetic, as llama.cpp
// computes it), scaled by its ResidualScale (granite). out is changed.
func (c *Config) addSublayer(spec *LayerSpec, x, out, post []float32) {
	if spec.Norms.post() {
		for i := 0; i+c.Dim <= len(out); i += c.Dim {
			row := out[i : i+c.Dim]
			rmsNormGGML(row, row, post, c.NormEps)
		}
	}
	if spec.ResidualScale != 0 {
		scaleInto(out, spec.ResidualScale)
	}
	addInto(x, out)
}

// scaleQueries multiplies the rotated queries q by the attention's scale
// where the layer scales its queries rather than its scores (gemma).
func scaleQueries(a *AttentionSpec, q []float32) {
	if a.ScaleQueries {
		scaleInto(q, a.Scale)
	}
}

// attentionWeights turns one head's scores into its attention weights:
// soft-capped at limit (AttentionSpec.SoftCap; 0: not capped), scaled by
// scale (Config.scoreScale), softmax.
func attentionWeights(scores []float32, limit, scale float32) {
	if limit != 0 {
		softCap(scores, limit)
	}
	scaledSoftmax(scores, scale)
}

// gateUnits sets gate to the feed-forward's gated units, act(gate) ⊙ up:
// SwiGLU, or gemma's GeGLU.
func (c *Config) gateUnits(ffn FFN, gate, up []float32) {
	switch {
	case ffn == FFNGeGLU && c.exactGELU:
		for i, g := range gate {
			gate[i] = geluF32(g) * up[i]
		}
	case ffn == FFNGeGLU:
		geglu(gate, up)
	default:
		swiGLU(gate, up)
	}
}

// scaleLogits divides the logits by LogitScale (granite): as llama.cpp, a
// product with its reciprocal in float32.
func (c *Config) scaleLogits(logits []float32) {
	if c.LogitScale != 0 {
		scaleInto(logits, 1/c.LogitScale)
	}
}

// capLogits soft-caps the logits (FinalSoftCap).
func (c *Config) capLogits(logits []float32) {
	if c.FinalSoftCap != 0 {
		softCap(logits, c.FinalSoftCap)
	}
}

// scaleInto sets x *= s.
func scaleInto(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
