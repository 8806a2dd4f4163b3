package engine

import "github.com/wasmlm/wasmlm/engine/tensor"

// runState is a session's scratch memory for the forward pass, allocated
// once. The sizes are the model's; a part of a split model computes only its
// rows of each product (q, k, v, attn, gate, up, down and logits are then
// shorter) and Peers joins them.
type runState struct {
	x      []float32 // (dim): the residual stream
	xn     []float32 // (dim): x normalised, the input of a sub-layer
	q      []float32 // (heads·headDim): the queries
	k      []float32 // (kvDim): the key of the current position
	v      []float32 // (kvDim): its value
	attn   []float32 // (heads·headDim): the heads' outputs
	proj   []float32 // (dim): the attention output projected back by Wo
	gate   []float32 // (hidden): the feed-forward gate, then the gated units
	up     []float32 // (hidden): the feed-forward up projection
	down   []float32 // (dim): the feed-forward output
	logits []float32 // (vocab): the classifier's output
	ws     *tensor.Workspace
	attnScratch
}

// attnScratch is attention's scratch memory: a session's run state has
// one, and a prompt block's attention split among threads one per thread
// (Session.attnParts).
type attnScratch struct {
	scores []float32 // (context): one head's attention over the positions; with an F16 cache (tokens, heads, context)
	// With an F16 cache (see attentionF16): the queries rounded to F16,
	// and a chunk of positions' keys or values decoded.
	qHalf   []float32 // (tokens, heads·headDim)
	kvChunk []float32 // (kvChunkValues/kvDim, kvDim)
}

func newRunState(c Config, w *modelWeights, context int) *runState {
	l := w.Layers[0] // every layer has the same shapes
	return &runState{
		x: make([]float32, c.Dim), xn: make([]float32, c.Dim),
		q: make([]float32, l.Wq.Rows), k: make([]float32, l.Wk.Rows), v: make([]float32, l.Wv.Rows),
		attnScratch: attnScratch{scores: make([]float32, context)}, attn: make([]float32, l.Wq.Rows), proj: make([]float32, c.Dim),
		gate: make([]float32, l.WGate.Rows), up: make([]float32, l.WUp.Rows), down: make([]float32, l.WDown.Rows),
		logits: make([]float32, w.Output.Rows),
		ws:     tensor.NewWorkspace(max(c.Dim, c.HiddenDim, c.QDim())),
	}
}

// adjustQKV finishes one position's q, k and v from their products in
// layer l, in place, as its recipe says: adds the biases (where the layer
// has them: qwen2), normalises q and k (each head: qwen3, gemma3; all of q
// and all of k at once: olmo2), rotates them by position pos (unless the
// layer has no positional embedding: smollm3's every 4th) by the layer's
// rotations, and scales q (gemma).
func (s *Session) adjustQKV(spec *LayerSpec, l int, q, k, v []float32, pos int) {
	c, lw := &s.model.config, &s.model.weights.Layers[l]
	if lw.Bq != nil {
		addInto(q, lw.Bq)
		addInto(k, lw.Bk)
		addInto(v, lw.Bv)
	}
	if spec.QKNorm != QKNormNone {
		headsRMSNorm(q, lw.QNorm, c.NormEps)
		headsRMSNorm(k, lw.KNorm, c.NormEps)
	}
	if !spec.Attention.NoPE {
		rope := s.layerRopes[l]
		rope.rotate(q, pos, c.HeadDim(), c.RopeStyle)
		rope.rotate(k, pos, c.HeadDim(), c.RopeStyle)
	}
	scaleQueries(&spec.Attention, q)
}

// forward runs token at position pos through the model, storing its key and
// value in the cache. With wantLogits it leaves the next-token logits in
// s.logits (prefill skips the classifier for all but the last prompt
// token). It allocates nothing. A NaN or an infinity in the vectors where
// non-finite weights show (see finite.go) fails the pass with an error
// wrapping ErrFormat, once the pass has run to its end.
func (s *Session) forward(token, pos int, wantLogits bool) error {
	c, w, st := &s.model.config, s.model.weights, s.state
	if err := s.peers.Begin(token, pos, wantLogits); err != nil {
		return err
	}
	var guard finiteGuard
	s.peers.Embed(st.x, w.TokenEmbedding, token)
	c.scaleEmbedding(st.x)
	guard.check(st.x, guardEmbedding, 0)
	for l := range w.Layers {
		lw, spec := &w.Layers[l], c.Layer(l)

		// Attention: normalise (as the layer's norms say), project to q,
		// k, v, finish them (biases, q/k norms, rotations, the queries'
		// scale), cache, attend, project back, add to the residual stream
		// (olmo2, gemma: normalised; granite: scaled).
		c.preNorm(spec.Norms, st.xn, st.x, lw.AttnNorm)
		tensor.MatVecs(st.xn, st.ws, tensor.Product{Out: st.q, M: lw.Wq},
			tensor.Product{Out: st.k, M: lw.Wk}, tensor.Product{Out: st.v, M: lw.Wv})
		s.adjustQKV(&spec, l, st.q, st.k, st.v, pos)
		s.kv.store(l, pos, st.k, st.v)
		s.attention(st.attn, st.q, l, pos)
		attn := s.peers.Gather(GatherAttention, st.attn)
		guard.check(attn, guardAttention, l)
		tensor.MatVec(st.proj, lw.Wo, attn, st.ws)
		c.addSublayer(&spec, st.x, st.proj, lw.AttnPostNorm)

		// Feed-forward: normalise, gate and up projections, the gated
		// units (SwiGLU; gemma: GeGLU), down projection, add to the
		// residual stream (as attention's).
		c.preNorm(spec.Norms, st.xn, st.x, lw.FFNNorm)
		tensor.MatVecs(st.xn, st.ws, tensor.Product{Out: st.gate, M: lw.WGate}, tensor.Product{Out: st.up, M: lw.WUp})
		c.gateUnits(spec.FFN, st.gate, st.up)
		hidden := s.peers.Gather(GatherHidden, st.gate)
		guard.check(hidden, guardHidden, l)
		tensor.MatVec(st.down, lw.WDown, hidden, st.ws)
		// addSublayer changes its input: not the peers' buffer, but a copy
		copy(st.xn, s.peers.Gather(GatherDown, st.down))
		c.addSublayer(&spec, st.x, st.xn, lw.FFNPostNorm)
	}
	if s.hidden != nil {
		s.hidden(st.x)
	}
	if wantLogits {
		rmsNorm(st.x, st.x, w.OutputNorm, c.NormEps)
		guard.check(st.x, guardFinalState, 0)
		tensor.MatVec(st.logits, w.Output, st.x, st.ws)
		s.logits = s.peers.Gather(GatherLogits, st.logits)
		c.scaleLogits(s.logits)
		c.capLogits(s.logits)
		guard.check(s.logits, guardLogits, 0)
	}
	if err := s.peers.End(); err != nil {
		return err
	}
	return guard.err(token, pos)
}
