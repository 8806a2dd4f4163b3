package engine

import "github.com/wasmlm/wasmlm/engine/tensor"

// The forward pass: tokens through every layer, as each layer's recipe
// says, into the KV cache and the logits. One layer loop serves a single
// token (decoding) and a block of prompt tokens, of a whole model or of a
// part of a split one. A block's products take all its tokens at once
// (tensor.MatMuls), so every weight row is read from memory once per
// block instead of once per token — decoding reads the whole model for
// each token, and at a billion parameters that, not arithmetic, bounds it;
// a single token's are matrix–vector products (tensor.MatVecs). The
// element-wise steps and attention run token by token, token i of a block
// attending to the positions up to its own (its block's earlier tokens
// are in the cache by then: causal attention), and tensor.MatMuls computes
// exactly MatVecs' bits, so a block leaves the cache, the logits and every
// later token exactly as its tokens one by one would.

// DefaultPromptBlock is how many prompt tokens a session evaluates at once
// unless SessionOptions.PromptBlock says otherwise. Measured with
// BenchmarkPromptBlock (TinyLlama-1.1B's shape, Q4_0 and Q8_0, natively and
// in wasm): the gain grows quickly to 16–32 tokens and little beyond, while
// the block's scratch grows with it (for that shape, 32 tokens take 2.5 MB).
const DefaultPromptBlock = 32

// activations are the vectors of a forward pass, token after token in each
// slice: a session's run state holds one token's, and a session that
// evaluates prompt blocks a block's, allocated at its first block. The
// sizes are the model's; a part of a split model computes only its rows of
// each product (q, k, v, attn, gate, up and down are then shorter) and
// Peers joins them.
type activations struct {
	x    []float32 // (tokens, dim): the residual stream
	xn   []float32 // (tokens, dim): x normalised, the input of a sub-layer
	q    []float32 // (tokens, heads·headDim): the queries
	k    []float32 // (tokens, kvDim): the keys of the tokens' positions
	v    []float32 // (tokens, kvDim): their values
	attn []float32 // (tokens, heads·headDim): the heads' outputs
	proj []float32 // (tokens, dim): the attention output projected back by Wo
	gate []float32 // (tokens, hidden): the feed-forward gate, then the gated units
	up   []float32 // (tokens, hidden): the feed-forward up projection
	down []float32 // (tokens, dim): the feed-forward output
	// qGate holds gated attention's output gates (AttentionSpec.Gated:
	// qwen35); empty for a model without gated layers.
	qGate []float32 // (tokens, heads·headDim)

	// The per-layer embeddings' (gemma4: per_layer.go); empty without.
	perLayer
	// AltUp's streams and LAuReL's branch (gemma3n: altup.go); empty without.
	altUp
}

// newActivations sizes each vector for n tokens by the widest layer's
// matrix (a hybrid's recurrent layers have no q, k or v: a missing matrix
// counts 0; gemma4's layers differ in their widths).
func newActivations(c Config, w *modelWeights, n int) activations {
	q, kv := w.maxRows(func(l *layerWeights) *tensor.Matrix { return l.Wq }), w.maxRows(func(l *layerWeights) *tensor.Matrix { return l.Wk })
	gate, up := w.maxRows(func(l *layerWeights) *tensor.Matrix { return l.WGate }), w.maxRows(func(l *layerWeights) *tensor.Matrix { return l.WUp })
	down := w.maxRows(func(l *layerWeights) *tensor.Matrix { return l.WDown })
	a := activations{
		x: make([]float32, n*c.Dim), xn: make([]float32, n*c.Dim),
		q: make([]float32, n*q), k: make([]float32, n*kv), v: make([]float32, n*kv),
		attn: make([]float32, n*q), proj: make([]float32, n*c.Dim),
		gate: make([]float32, n*gate), up: make([]float32, n*up), down: make([]float32, n*down),
		perLayer: newPerLayerActivations(c, n), altUp: newAltUpActivations(c, w, n),
	}
	if c.gatedAttention() {
		a.qGate = make([]float32, n*q/2)
	}
	return a
}

// rowsOf is m's rows, 0 for a layer without the matrix.
func rowsOf(m *tensor.Matrix) int {
	if m == nil {
		return 0
	}
	return m.Rows
}

// maxRows is the most rows the matrix m picks has in any layer, 0 where no
// layer has it.
func (w *modelWeights) maxRows(m func(*layerWeights) *tensor.Matrix) int {
	rows := 0
	for l := range w.Layers {
		if mat := m(&w.Layers[l]); mat != nil {
			rows = max(rows, mat.Rows)
		}
	}
	return rows
}

// runState is a session's scratch memory for the forward pass, allocated
// once: one token's activations, the logits, the products' workspace and
// attention's scratch.
type runState struct {
	activations
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
	return &runState{
		activations: newActivations(c, w, 1),
		attnScratch: attnScratch{scores: make([]float32, context)},
		logits:      make([]float32, w.Output.Rows),
		ws:          tensor.NewWorkspace(max(c.Dim, c.maxLayerSize(dimHidden), c.maxLayerSize(dimQ), c.PerLayerDim, c.ExpertHiddenDim, c.SharedHiddenDim, c.LaurelRank)),
	}
}

// row is x cut into rows of width elements: row i is x[i·width:(i+1)·width].
func row[T any](x []T, i, width int) []T { return x[i*width : (i+1)*width] }

// forward runs token at position pos through the model, as forwardBlock
// runs a block of one.
func (s *Session) forward(token, pos int, wantLogits bool) error {
	s.oneToken[0] = token
	return s.forwardBlock(s.oneToken[:], pos, wantLogits)
}

// forwardBlock runs tokens, at positions pos..pos+len(tokens)-1, through
// the model, storing their keys and values in the cache; with wantLogits
// it leaves the last token's next-token logits in s.logits (prefill skips
// the classifier for all but the last prompt token). It allocates nothing
// once the session's block scratch exists. A NaN or an infinity in the
// vectors where non-finite weights show (see finite.go) fails the pass
// with an error wrapping ErrFormat that names the first token at fault,
// once the pass has run to its end. A part of a split model runs the same
// pass over its rows, its Peers joining the parts' rows of all the tokens
// at each gather point at once.
func (s *Session) forwardBlock(tokens []int, pos int, wantLogits bool) error {
	if s.dev != nil {
		return s.forwardDevice(tokens, pos, wantLogits)
	}
	c, w, st := &s.model.config, s.model.weights, s.state
	n := len(tokens)
	a := &st.activations
	if n > 1 {
		if s.block == nil {
			b := newActivations(*c, w, s.promptBlock)
			s.block = &b
		}
		a = s.block
		if err := s.prepareProjection(); err != nil {
			return err
		}
	}
	dim := c.Dim
	x, xn, proj := a.x[:n*dim], a.xn[:n*dim], a.proj[:n*dim]
	if err := s.beginRecurrent(pos, n); err != nil {
		return err
	}
	if err := s.peers.Begin(tokens, pos, wantLogits); err != nil {
		return err
	}

	var guard blockGuard
	s.peers.Embed(x, w.TokenEmbedding, tokens)
	c.scaleEmbedding(x)
	guard.check(x, n, guardEmbedding, 0)
	s.perLayerInputs(a, tokens, x)
	s.altUpBegin(a, x, n) // gemma3n's streams (altup.go)
	for l := range w.Layers {
		lw, spec := &w.Layers[l], c.Layer(l)
		s.altUpPredict(&spec, l, a, x, n) // x: the active stream's prediction
		// The layer's widths, as its weights hold them (a part of a split
		// model's, its rows): a recurrent layer has no queries, keys or
		// values, a layer sharing another's cache no keys or values.
		qDim, kvDim, hidden := rowsOf(lw.Wq), rowsOf(lw.Wk), rowsOf(lw.WGate)
		if spec.Attention.SharedKV {
			kvDim = 0
		}
		q, k, v, attn := a.q[:n*qDim], a.k[:n*kvDim], a.v[:n*kvDim], a.attn[:n*qDim]
		gate, up, down := a.gate[:n*hidden], a.up[:n*hidden], a.down[:n*rowsOf(lw.WDown)]

		// Attention: normalise (as the layer's norms say), project to q,
		// k, v, finish them (biases, q/k norms, rotations, the queries'
		// scale), cache, attend, project back, add to the residual stream
		// (olmo2, gemma: normalised; granite: scaled).
		// A recurrent layer mixes the positions through its state instead
		// (mixBlock, recurrent.go), its output added as attention's.
		for i := range n {
			c.preNorm(spec.Norms, row(xn, i, dim), row(x, i, dim), lw.AttnNorm)
		}
		if spec.Kind.Recurrent() {
			s.mixBlock(&spec, l, xn, proj, n, pos)
			guard.check(proj, n, guardMixer, l)
		} else {
			q, attn, qDim := q, attn, qDim
			if spec.Attention.Gated {
				// Wq gives each head's queries, then its output gate
				qDim = lw.Wq.Rows / 2
				q, attn = a.q[:n*qDim], a.attn[:n*qDim]
				qg := a.q[:2*n*qDim]
				s.products(xn, n, tensor.Product{Out: qg, M: lw.Wq}, tensor.Product{Out: k, M: lw.Wk}, tensor.Product{Out: v, M: lw.Wv})
				splitQueryGate(qg, a.qGate[:n*qDim], n, c.HeadDim())
			} else {
				s.projectQKV(&spec, lw, xn, n, q, k, v)
			}
			for i := range n {
				s.adjustQKV(&spec, l, row(q, i, qDim), row(k, i, kvDim), row(v, i, kvDim), pos+i)
			}
			s.attentionBlock(attn, q, k, v, n, l, pos) // stores k and v
			if spec.Attention.Gated {
				gateOutput(attn, a.qGate[:n*qDim])
			}
			joined := s.peers.Gather(GatherAttention, attn, n)
			guard.check(joined, n, guardAttention, l)
			if wo, part := s.projectionRows(l, n); wo != nil {
				// a block of a split model: this part's rows of Wo, joined
				s.products(joined, n, tensor.Product{Out: part, M: wo})
				copy(proj, s.peers.Gather(GatherProjection, part, n))
			} else {
				s.products(joined, n, tensor.Product{Out: proj, M: lw.Wo})
			}
			if lw.Bo != nil { // gpt-oss
				for i := range n {
					addInto(row(proj, i, dim), lw.Bo)
				}
			}
		}
		c.addSublayer(&spec, x, proj, lw.AttnPostNorm)
		s.laurel(&spec, l, a, x, xn, n) // xn: still attention's input

		// Feed-forward: normalise, gate and up projections, the gated
		// units (SwiGLU; gemma: GeGLU), down projection, add to the
		// residual stream (as attention's); or a mixture of experts
		// (moe.go), whose models are whole.
		for i := range n {
			c.preNorm(spec.Norms, row(xn, i, dim), row(x, i, dim), lw.FFNNorm)
		}
		if spec.FFN == FFNMoE {
			s.moeBlock(&spec, l, a, x, xn, proj, n)
			guard.check(proj, n, guardHidden, l)
			c.addSublayer(&spec, x, proj, lw.FFNPostNorm)
		} else {
			s.products(xn, n, tensor.Product{Out: gate, M: lw.WGate}, tensor.Product{Out: up, M: lw.WUp})
			sparseGate(spec.GateSparsity, gate, n)
			c.gateUnits(spec.FFN, gate, up)
			joined := s.peers.Gather(GatherHidden, gate, n)
			guard.check(joined, n, guardHidden, l)
			s.products(joined, n, tensor.Product{Out: down, M: lw.WDown})
			joined = s.peers.Gather(GatherDown, down, n)
			if s.model.part != nil {
				// addSublayer changes its input: not the peers' vector, but a copy
				joined = xn[:copy(xn, joined)]
			}
			c.addSublayer(&spec, x, joined, lw.FFNPostNorm)
		}
		s.perLayerStep(&spec, l, a, x, proj, n)
		s.altUpCorrect(&spec, l, a, x, xn, proj, n)
	}
	s.altUpEnd(a, x, n)
	if s.hidden != nil {
		for i := range n {
			s.hidden(row(x, i, dim))
		}
	}
	if s.score != nil && guard.what == "" {
		if err := s.scoreRows(tokens, x, pos); err != nil {
			return err
		}
	}
	if wantLogits {
		last := row(x, n-1, dim)
		rmsNorm(last, last, w.OutputNorm, c.NormEps)
		guard.checkAt(last, n-1, guardFinalState, 0)
		s.products(last, 1, tensor.Product{Out: st.logits, M: w.Output})
		s.logits = s.peers.Gather(GatherLogits, st.logits, 1)
		c.scaleLogits(s.logits)
		c.capLogits(s.logits)
		guard.checkAt(s.logits, n-1, guardLogits, 0)
	}
	if err := s.peers.End(); err != nil {
		return err
	}
	if guard.what == "" {
		return nil
	}
	return guard.finiteGuard.err(s.model, tokens[guard.at], pos+guard.at)
}

// blockGuard is a finiteGuard over a pass's tokens: it also remembers
// which token the first non-finite vector was.
type blockGuard struct {
	finiteGuard
	at int // the token of the pass
}

// check checks x, the rows of the pass's n tokens.
func (g *blockGuard) check(x []float32, n int, what string, layer int) {
	if g.what != "" || allFinite(x) {
		return
	}
	width := len(x) / n
	for i := range n {
		if r := row(x, i, width); !allFinite(r) {
			g.checkAt(r, i, what, layer)
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
