package engine

import "github.com/wasmlm/wasmlm/engine/tensor"

// Batched prompt evaluation. A prompt is run through the model a block of
// tokens at a time: each layer's products take the whole block at once
// (tensor.MatMuls), so every weight row is read from memory once per block
// instead of once per token — decoding reads the whole model for each
// token, and at a billion parameters that, not arithmetic, bounds it. The
// element-wise steps and attention run token by token as forward does,
// token i of the block attending to the positions up to its own (its
// block's earlier tokens are in the cache by then: causal attention), and
// tensor.MatMuls computes exactly MatVec's bits, so a block leaves the
// cache, the logits and every later token exactly as forward, token by
// token, would.

// DefaultPromptBlock is how many prompt tokens a session evaluates at once
// unless SessionOptions.PromptBlock says otherwise. Measured with
// BenchmarkPromptBlock (TinyLlama-1.1B's shape, Q4_0 and Q8_0, natively and
// in wasm): the gain grows quickly to 16–32 tokens and little beyond, while
// the block's scratch grows with it (for that shape, 32 tokens take 2.5 MB).
const DefaultPromptBlock = 32

// blockState is the scratch of batched prompt evaluation, token after
// token in each slice: allocated at a session's first block, for its
// block size.
type blockState struct {
	x, xn, q, k, v, attn, proj, gate, up, down []float32
}

func newBlockState(c Config, w *modelWeights, n int) *blockState {
	l := w.Layers[0]
	return &blockState{
		x: make([]float32, n*c.Dim), xn: make([]float32, n*c.Dim),
		q: make([]float32, n*l.Wq.Rows), k: make([]float32, n*l.Wk.Rows), v: make([]float32, n*l.Wv.Rows),
		attn: make([]float32, n*l.Wq.Rows), proj: make([]float32, n*c.Dim),
		gate: make([]float32, n*l.WGate.Rows), up: make([]float32, n*l.WUp.Rows), down: make([]float32, n*c.Dim),
	}
}

// rows is x cut into n rows of width elements: row i is x[i·width:(i+1)·width].
func row(x []float32, i, width int) []float32 { return x[i*width : (i+1)*width] }

// forwardBlock runs tokens, at positions pos..pos+len(tokens)-1, through a
// whole model, storing their keys and values in the cache; with
// wantLogits it leaves the last token's next-token logits in s.logits. It
// allocates nothing once the session's block scratch exists. Non-finite
// values fail it as they fail forward, naming the first token at fault.
func (s *Session) forwardBlock(tokens []int, pos int, wantLogits bool) error {
	c, w, st := &s.model.config, s.model.weights, s.state
	n := len(tokens)
	if s.block == nil {
		s.block = newBlockState(*c, w, s.promptBlock)
	}
	b := s.block
	dim, qDim, kvDim, hidden := c.Dim, len(st.q), s.kv.kvDim, len(st.gate)
	x, xn := b.x[:n*dim], b.xn[:n*dim]
	q, k, v, attn := b.q[:n*qDim], b.k[:n*kvDim], b.v[:n*kvDim], b.attn[:n*qDim]
	gate, up := b.gate[:n*hidden], b.up[:n*hidden]

	var guard blockGuard
	for i, token := range tokens {
		w.TokenEmbedding.Row(row(x, i, dim), token)
	}
	c.scaleEmbedding(x)
	guard.check(x, dim, guardEmbedding, 0)
	for l := range w.Layers {
		lw, spec := &w.Layers[l], c.Layer(l)

		for i := range n {
			c.preNorm(spec.Norms, row(xn, i, dim), row(x, i, dim), lw.AttnNorm)
		}
		tensor.MatMuls(xn, n, st.ws, tensor.Product{Out: q, M: lw.Wq},
			tensor.Product{Out: k, M: lw.Wk}, tensor.Product{Out: v, M: lw.Wv})
		for i := range n {
			s.adjustQKV(&spec, l, row(q, i, qDim), row(k, i, kvDim), row(v, i, kvDim), pos+i)
		}
		s.attentionBlock(attn, q, k, v, n, l, pos) // stores k and v
		guard.check(attn, qDim, guardAttention, l)
		tensor.MatMul(b.proj[:n*dim], lw.Wo, attn, n, st.ws)
		c.addSublayer(&spec, x, b.proj[:n*dim], lw.AttnPostNorm)

		for i := range n {
			c.preNorm(spec.Norms, row(xn, i, dim), row(x, i, dim), lw.FFNNorm)
		}
		tensor.MatMuls(xn, n, st.ws, tensor.Product{Out: gate, M: lw.WGate}, tensor.Product{Out: up, M: lw.WUp})
		c.gateUnits(spec.FFN, gate, up)
		guard.check(gate, hidden, guardHidden, l)
		tensor.MatMul(b.down[:n*dim], lw.WDown, gate, n, st.ws)
		c.addSublayer(&spec, x, b.down[:n*dim], lw.FFNPostNorm)
	}
	if s.hidden != nil {
		for i := range n {
			s.hidden(row(x, i, dim))
		}
	}
	if wantLogits {
		copy(st.x, row(x, n-1, dim))
		rmsNorm(st.x, st.x, w.OutputNorm, c.NormEps)
		guard.checkAt(st.x, n-1, guardFinalState, 0)
		tensor.MatVec(st.logits, w.Output, st.x, st.ws)
		s.logits = st.logits
		c.scaleLogits(s.logits)
		c.capLogits(s.logits)
		guard.checkAt(s.logits, n-1, guardLogits, 0)
	}
	if guard.what == "" {
		return nil
	}
	return guard.finiteGuard.err(tokens[guard.at], pos+guard.at)
}

// blockGuard is a finiteGuard over a block: it also remembers which token
// of the block the first non-finite vector was.
type blockGuard struct {
	finiteGuard
	at int // the token of the block
}

// check checks the block's rows of x, width elements each.
func (g *blockGuard) check(x []float32, width int, what string, layer int) {
	if g.what != "" || allFinite(x) {
		return
	}
	for i := 0; i < len(x); i += width {
		if !allFinite(x[i : i+width]) {
			g.checkAt(x[i:i+width], i/width, what, layer)
			return
		}
	}
}

// checkAt checks x, token at's.
func (g *blockGuard) checkAt(x []float32, at int, what string, layer int) {
	if g.what == "" {
		g.finiteGuard.check(x, what, layer)
		if g.what != "" {
			g.at = at
		}
	}
}
