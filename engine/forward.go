package engine

import (
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// runState is a session's scratch memory for the forward pass, allocated once.
// A shard computes only its rows of every product (see shardPlan) but keeps
// the gathered vectors whole.
type runState struct {
	x      []float32 // (dim): the residual stream
	xb     []float32 // (dim): normalised input of a sub-layer, then attention output
	xb2    []float32 // (dim): a sub-layer's projected output
	hGate  []float32 // (hidden): feed-forward gate, then the gated activation
	hUp    []float32 // (hidden): feed-forward up projection
	q      []float32 // (shard heads · headDim): queries of the shard's heads
	k      []float32 // (shard kvHeads · headDim): keys of the current position
	v      []float32 // (shard kvHeads · headDim): values of the current position
	att    []float32 // (context): attention scores of one head
	logits []float32 // (vocab)
	ws     *tensor.Workspace
}

func newRunState(c Config, p *shardPlan, context int) *runState {
	headDim := c.HeadDim()
	q, kv := p.heads.len()*headDim, p.kvHeads.len()*headDim
	return &runState{
		x: make([]float32, c.Dim), xb: make([]float32, c.Dim), xb2: make([]float32, c.Dim),
		hGate: make([]float32, c.HiddenDim), hUp: make([]float32, c.HiddenDim),
		q: make([]float32, q), k: make([]float32, kv), v: make([]float32, kv),
		att: make([]float32, context), logits: make([]float32, c.VocabSize),
		ws: tensor.NewWorkspace(max(c.Dim, c.HiddenDim)),
	}
}

// kvCache holds the keys and values of every position seen so far (of the
// shard's kv heads).
type kvCache struct {
	k, v []float32 // (layers, context, kvDim)
}

func newKVCache(c Config, kvDim, context int) kvCache {
	n := c.Layers * context * kvDim
	return kvCache{k: make([]float32, n), v: make([]float32, n)}
}

// forward runs token at position pos through the model, appending its keys
// and values to the cache. With wantLogits it leaves the next-token logits in
// s.logits (prefill skips the classifier for all but the last prompt token).
// It allocates nothing.
//
// A shard computes its rows of every product and gathers the other shards'
// (the shard plan's parts); shard 0 first tells the others what to compute.
// An unsharded model has every row and no group: its gathers do nothing and
// it cannot fail.
func (s *Session) forward(token, pos int, wantLogits bool) error {
	c, w, st, p, g := s.model.Config, s.model.Weights, s.state, &s.plan, s.group
	headDim, ctx, group := c.HeadDim(), s.context, c.GroupSize()
	kvDim := p.kvHeads.len() * headDim
	scale := float32(1 / math.Sqrt(float64(headDim)))
	if g != nil && p.index == 0 {
		if err := s.lead(token, pos, wantLogits); err != nil {
			return err
		}
	}

	owner := p.vocabOwner(token)
	if owner == p.index {
		w.TokenEmbedding.Row(st.x, token-p.vocab.lo)
	}
	g.embed(st.x, owner)
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

		for h := p.heads.lo; h < p.heads.hi; h++ {
			q := st.q[(h-p.heads.lo)*headDim : (h-p.heads.lo+1)*headDim]
			kvOff := (h/group - p.kvHeads.lo) * headDim
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
		g.gather(st.xb, p.attnParts, allShards)
		tensor.MatVec(st.xb2, lw.Wo, st.xb, st.ws) // every shard computes all of Wo: no gather
		addInto(st.x, st.xb2)

		// Feed-forward: SwiGLU.
		rmsNorm(st.xb, st.x, lw.FFNNorm, c.NormEps)
		gate, up := st.hGate[p.hidden.lo:p.hidden.hi], st.hUp[p.hidden.lo:p.hidden.hi]
		tensor.MatVecs(st.xb, st.ws, tensor.Product{Out: gate, M: lw.WGate}, tensor.Product{Out: up, M: lw.WUp})
		swiGLU(gate, up)
		g.gather(st.hGate, p.hiddenParts, allShards)
		tensor.MatVec(st.xb2[p.dim.lo:p.dim.hi], lw.WDown, st.hGate, st.ws)
		g.gather(st.xb2, p.dimParts, allShards)
		addInto(st.x, st.xb2)
	}
	if wantLogits {
		rmsNorm(st.x, st.x, w.OutputNorm, c.NormEps)
		tensor.MatVec(st.logits[p.vocab.lo:p.vocab.hi], w.Output, st.x, st.ws)
		g.gather(st.logits, p.vocabParts, 0) // shard 0 samples
	}
	err := g.endStep()
	if err != nil && p.index == 0 {
		g.greeted = false // greet again before the next step: a follower may have restarted
	}
	return err
}
