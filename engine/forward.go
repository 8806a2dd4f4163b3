package engine

import (
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// runState is a session's scratch memory for the forward pass, allocated once.
type runState struct {
	x      []float32 // (dim): the residual stream
	xb     []float32 // (dim): normalised input of a sub-layer, then attention output
	xb2    []float32 // (dim): a sub-layer's projected output
	hGate  []float32 // (hidden): feed-forward gate, then the gated activation
	hUp    []float32 // (hidden): feed-forward up projection
	q      []float32 // (dim): queries of all heads
	k      []float32 // (kvDim): keys of the current position
	v      []float32 // (kvDim): values of the current position
	att    []float32 // (context): attention scores of one head
	logits []float32 // (vocab)
	ws     *tensor.Workspace
}

func newRunState(c Config, context int) *runState {
	return &runState{
		x: make([]float32, c.Dim), xb: make([]float32, c.Dim), xb2: make([]float32, c.Dim),
		hGate: make([]float32, c.HiddenDim), hUp: make([]float32, c.HiddenDim),
		q: make([]float32, c.Dim), k: make([]float32, c.KVDim()), v: make([]float32, c.KVDim()),
		att: make([]float32, context), logits: make([]float32, c.VocabSize),
		ws: tensor.NewWorkspace(max(c.Dim, c.HiddenDim)),
	}
}

// kvCache holds the keys and values of every position seen so far.
type kvCache struct {
	k, v []float32 // (layers, context, kvDim)
}

func newKVCache(c Config, context int) kvCache {
	n := c.Layers * context * c.KVDim()
	return kvCache{k: make([]float32, n), v: make([]float32, n)}
}

// forward runs token at position pos through the model, appending its keys
// and values to the cache. With wantLogits it leaves the next-token logits in
// s.logits (prefill skips the classifier for all but the last prompt token).
// It allocates nothing.
func (s *Session) forward(token, pos int, wantLogits bool) {
	c, w, st := s.model.Config, s.model.Weights, s.state
	headDim, kvDim, ctx := c.HeadDim(), c.KVDim(), s.context
	scale := float32(1 / math.Sqrt(float64(headDim)))

	w.TokenEmbedding.Row(st.x, token)
	for l := range w.Layers {
		lw := &w.Layers[l]

		// Attention: project, rotate, cache, attend, project back.
		rmsNorm(st.xb, st.x, lw.AttnNorm, c.NormEps)
		tensor.MatVecs(st.xb, st.ws, tensor.Product{Out: st.q, M: lw.Wq},
			tensor.Product{Out: st.k, M: lw.Wk}, tensor.Product{Out: st.v, M: lw.Wv})
		if lw.Bq != nil {
			addInto(st.q, lw.Bq)
			addInto(st.k, lw.Bk)
			addInto(st.v, lw.Bv)
		}
		s.rope.rotate(st.q, pos, headDim, c.RopeStyle)
		s.rope.rotate(st.k, pos, headDim, c.RopeStyle)
		layerK := s.kv.k[l*ctx*kvDim : (l+1)*ctx*kvDim]
		layerV := s.kv.v[l*ctx*kvDim : (l+1)*ctx*kvDim]
		copy(layerK[pos*kvDim:], st.k)
		copy(layerV[pos*kvDim:], st.v)

		for h := range c.Heads {
			q := st.q[h*headDim : (h+1)*headDim]
			kvOff := (h / c.GroupSize()) * headDim
			att := st.att[:pos+1]
			tensor.DotF32Rows(att, q, layerK[kvOff:], kvDim) // q·k_t for every cached t
			for t := range att {
				att[t] *= scale
			}
			softmax(att)
			out := st.xb[h*headDim : (h+1)*headDim]
			clear(out)
			tensor.AddScaledRows(out, att, layerV[kvOff:], kvDim) // Σ_t att[t]·v_t
		}
		tensor.MatVec(st.xb2, lw.Wo, st.xb, st.ws)
		addInto(st.x, st.xb2)

		// Feed-forward: SwiGLU.
		rmsNorm(st.xb, st.x, lw.FFNNorm, c.NormEps)
		tensor.MatVecs(st.xb, st.ws, tensor.Product{Out: st.hGate, M: lw.WGate}, tensor.Product{Out: st.hUp, M: lw.WUp})
		swiGLU(st.hGate, st.hUp)
		tensor.MatVec(st.xb2, lw.WDown, st.hGate, st.ws)
		addInto(st.x, st.xb2)
	}
	if !wantLogits {
		return
	}
	rmsNorm(st.x, st.x, w.OutputNorm, c.NormEps)
	tensor.MatVec(st.logits, w.Output, st.x, st.ws)
}
