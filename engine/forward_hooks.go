package engine

// The steps some families add to the llama family's forward pass, each a
// no-op for llama: forward and forwardBlock call the same functions, so a
// prompt block keeps computing the bits of token-by-token decoding.

// scaleEmbedding multiplies the token embeddings in x (rows of Dim values)
// by EmbeddingScale (granite), as ggml_scale does.
func (c *Config) scaleEmbedding(x []float32) {
	if c.EmbeddingScale != 0 {
		scaleInto(x, c.EmbeddingScale)
	}
}

// preNorm sets xn to a sub-layer's input: x normalised with weight, or,
// for a family without pre-norms (weight nil: olmo2), x itself.
func (c *Config) preNorm(xn, x, weight []float32) {
	if weight == nil {
		copy(xn, x)
		return
	}
	rmsNorm(xn, x, weight, c.NormEps)
}

// addSublayer adds a sub-layer's output out to the residual stream x (rows
// of Dim values each): normalised first with post where the family has
// post-norms (olmo2; ggml's RMSNorm arithmetic, as llama.cpp computes it),
// scaled by ResidualScale (granite). out is changed.
func (c *Config) addSublayer(x, out, post []float32) {
	if post != nil {
		for i := 0; i+c.Dim <= len(out); i += c.Dim {
			row := out[i : i+c.Dim]
			rmsNormGGML(row, row, post, c.NormEps)
		}
	}
	if c.ResidualScale != 0 {
		scaleInto(out, c.ResidualScale)
	}
	addInto(x, out)
}

// scaleLogits divides the logits by LogitScale (granite): as llama.cpp, a
// product with its reciprocal in float32.
func (c *Config) scaleLogits(logits []float32) {
	if c.LogitScale != 0 {
		scaleInto(logits, 1/c.LogitScale)
	}
}

// scaleInto sets x *= s.
func scaleInto(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
