package engine

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Sharding splits a model across workers (Web Workers in a browser) so that
// each holds part of the weights and computes part of every layer, and the
// workers together produce exactly the tokens one worker would.
//
// Every matrix is split by output rows, never by columns: a row's dot
// product is then computed whole, by one shard, exactly as an unsharded
// model computes it, and the shards only have to gather each other's slices
// of the outputs. (Splitting columns, as Megatron-style tensor parallelism
// does, would sum partial dot products in a different order and change the
// bits.) Shard i of n computes
//
//   - attention: kv heads split(KVHeads, i, n) and the query heads that use
//     them (their GQA groups): those rows of Wq, Wk, Wv, the KV cache of
//     those kv heads only, and the attention of those query heads;
//   - all of Wo (see below), and rows split(Dim, i, n) of WDown;
//   - rows split(HiddenDim, i, n) of WGate and WUp (its hidden units);
//   - rows split(VocabSize, i, n) of the output classifier and of the token
//     embedding.
//
// Each shard keeps the whole residual stream and computes the RMS norms
// itself (identically). Per token the shards gather: the embedding row
// (from its owner), then in every layer the attention output, the SwiGLU
// activation and WDown's output, and at the end the logits (to shard 0
// only, which samples). Every shard holds and computes all of Wo, the
// smallest matrix of a layer (Dim² of its 2·Dim² + 2·Dim·KVDim +
// 3·Dim·HiddenDim weights): splitting it would cost one more gather per
// layer, and in a browser a gather (≈ 0.2 ms measured) costs more than the
// rows of Wo it would spare up to Dim ≈ 2048 (1B-parameter models), about
// as much there, and a little less above. Shard 0 leads: it runs the generation and
// tells the others, step by step, what to compute (see Session.Follow).
//
// split(total, i, n) is [⌊i·total/n⌋, ⌊(i+1)·total/n⌋): contiguous, the sizes
// differ by at most one. When n does not divide KVHeads the later shards get
// one kv head (one GQA group) more. A model splits into at most KVHeads
// shards.

// span is the half-open range [lo, hi) of rows, heads or elements.
type span struct{ lo, hi int }

func (s span) len() int { return s.hi - s.lo }

func (s span) contains(i int) bool { return s.lo <= i && i < s.hi }

// split is part i of n of total: [⌊i·total/n⌋, ⌊(i+1)·total/n⌋).
func split(total, i, n int) span {
	return span{lo: i * total / n, hi: (i + 1) * total / n}
}

// shardPlan says which part of the model a shard computes and where every
// shard's part lies in the vectors they gather. An unsharded model has the
// plan of shard 0 of 1: everything.
type shardPlan struct {
	index, count int
	kvHeads      span // key/value heads: its KV cache
	heads        span // query heads: the groups of its kv heads
	dim          span // rows of WDown
	hidden       span // rows of WGate and WUp
	vocab        span // rows of the output classifier and the token embedding
	// Part boundaries of the gathered vectors, count+1 each: shard j's part
	// of the attention output is attnParts[j]:attnParts[j+1], and so on.
	attnParts, dimParts, hiddenParts, vocabParts []int
	// source fingerprints the whole model the shard was cut from, so that
	// shards of different models refuse to work together.
	source uint64
}

// newShardPlan is the plan of shard index of count for a model of config c
// (already validated).
func newShardPlan(c Config, index, count int) (shardPlan, error) {
	if count < 1 || index < 0 || index >= count {
		return shardPlan{}, fmt.Errorf("%w: shard %d of %d does not exist", ErrShard, index, count)
	}
	if count > c.KVHeads {
		return shardPlan{}, fmt.Errorf("%w: %d shards, but the model has %d kv heads: at most %d shards (each holds whole GQA groups)",
			ErrShard, count, c.KVHeads, c.KVHeads)
	}
	// Dim ≥ Heads ≥ KVHeads, so only degenerate models have fewer hidden
	// units or tokens than shards.
	if count > c.HiddenDim || count > c.VocabSize {
		return shardPlan{}, fmt.Errorf("%w: %d shards, but the model has %d hidden units and %d tokens",
			ErrShard, count, c.HiddenDim, c.VocabSize)
	}
	headDim, group := c.HeadDim(), c.GroupSize()
	parts := func(total, unit int) []int {
		p := make([]int, count+1)
		for j := range p {
			p[j] = j * total / count * unit
		}
		return p
	}
	kv := split(c.KVHeads, index, count)
	return shardPlan{
		index: index, count: count,
		kvHeads:     kv,
		heads:       span{kv.lo * group, kv.hi * group},
		dim:         split(c.Dim, index, count),
		hidden:      split(c.HiddenDim, index, count),
		vocab:       split(c.VocabSize, index, count),
		attnParts:   parts(c.KVHeads, group*headDim),
		dimParts:    parts(c.Dim, 1),
		hiddenParts: parts(c.HiddenDim, 1),
		vocabParts:  parts(c.VocabSize, 1),
	}, nil
}

// vocabOwner is the shard whose rows of the token embedding hold token.
func (p *shardPlan) vocabOwner(token int) int {
	for j := 1; j < len(p.vocabParts); j++ {
		if token < p.vocabParts[j] {
			return j - 1
		}
	}
	return p.count - 1
}

// maxPart is the longest part any shard contributes to a gather.
func (p *shardPlan) maxPart() int {
	n := 0
	for _, parts := range [][]int{p.attnParts, p.dimParts, p.hiddenParts, p.vocabParts} {
		for j := 1; j < len(parts); j++ {
			n = max(n, parts[j]-parts[j-1])
		}
	}
	return n
}

// wholePlan is the plan of an unsharded model of validated config c.
func wholePlan(c Config) shardPlan {
	p, _ := newShardPlan(c, 0, 1) // one shard fits every validated config
	return p
}

// plan is the model's shard plan: its own for a shard, everything otherwise.
func (m *Model) plan() shardPlan {
	if m.shard != nil {
		return *m.shard
	}
	return wholePlan(m.Config)
}

// Shards reports which shard of how many the model is: (0, 1) for a whole
// model.
func (m *Model) Shards() (index, count int) {
	if m.shard == nil {
		return 0, 1
	}
	return m.shard.index, m.shard.count
}

// Shard returns shard index of count of the model: the same model whose
// weights are views of only the rows that shard computes (nothing is
// copied). Its sessions need SessionOptions.Exchange connecting them to the
// sessions of the other shards; shard 0 generates, the others Follow. count
// is at most Config.KVHeads. To give a worker only its shard's bytes, see
// ShardGGUF.
func (m *Model) Shard(index, count int) (*Model, error) {
	if m.shard != nil {
		return nil, fmt.Errorf("%w: the model is already shard %d of %d", ErrShard, m.shard.index, m.shard.count)
	}
	p, err := newShardPlan(m.Config, index, count)
	if err != nil {
		return nil, err
	}
	p.source = fingerprint(m.Config, m.Weights)
	w, err := m.Weights.shard(m.Config, &p)
	if err != nil {
		return nil, err
	}
	out := *m
	out.Weights, out.shard = w, &p
	return &out, nil
}

// shard returns the weights of plan p's rows, as views of w's.
func (w *Weights) shard(c Config, p *shardPlan) (*Weights, error) {
	headDim := c.HeadDim()
	q := span{p.heads.lo * headDim, p.heads.hi * headDim}
	kv := span{p.kvHeads.lo * headDim, p.kvHeads.hi * headDim}
	var firstErr error
	rows := func(m *tensor.Matrix, s span) *tensor.Matrix {
		r, err := matrixRows(m, s)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return r
	}
	vec := func(v []float32, s span) []float32 {
		if v == nil {
			return nil
		}
		return v[s.lo:s.hi:s.hi]
	}
	out := &Weights{
		TokenEmbedding:  rows(w.TokenEmbedding, p.vocab),
		Layers:          make([]LayerWeights, len(w.Layers)),
		OutputNorm:      w.OutputNorm,
		RopeFreqFactors: w.RopeFreqFactors,
	}
	out.Output = out.TokenEmbedding
	if w.Output != w.TokenEmbedding {
		out.Output = rows(w.Output, p.vocab)
	}
	for i, l := range w.Layers {
		out.Layers[i] = LayerWeights{
			AttnNorm: l.AttnNorm,
			Wq:       rows(l.Wq, q), Wk: rows(l.Wk, kv), Wv: rows(l.Wv, kv),
			Wo: l.Wo, // whole: see shardPlan
			Bq: vec(l.Bq, q), Bk: vec(l.Bk, kv), Bv: vec(l.Bv, kv),
			FFNNorm: l.FFNNorm,
			WGate:   rows(l.WGate, p.hidden), WDown: rows(l.WDown, p.dim), WUp: rows(l.WUp, p.hidden),
		}
	}
	return out, firstErr
}

// matrixRows is a view of rows s of m.
func matrixRows(m *tensor.Matrix, s span) (*tensor.Matrix, error) {
	if s.lo == 0 && s.hi == m.Rows {
		return m, nil
	}
	rb, err := tensor.RowBytes(m.Type, m.Cols)
	if err != nil {
		return nil, err
	}
	return tensor.NewMatrix(m.Type, s.len(), m.Cols, m.Data[s.lo*rb:s.hi*rb:s.hi*rb])
}

// fingerprint identifies a whole model cheaply: FNV-1a over its
// hyper-parameters, every vector, and the first, middle and last row of
// every matrix. Shards carry their model's fingerprint so that a group of
// shards cut from different models (or the same file split differently)
// fails with ErrShardMismatch rather than computing nonsense.
func fingerprint(c Config, w *Weights) uint64 {
	h := fnv.New64a()
	var b [8]byte
	num := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	for _, v := range [...]int{c.Dim, c.HiddenDim, c.Layers, c.Heads, c.KVHeads, c.VocabSize, c.ContextLength, int(c.RopeStyle)} {
		num(uint64(v))
	}
	for _, v := range [...]float32{c.RopeTheta, c.RopeScale, c.NormEps} {
		num(uint64(math.Float32bits(v)))
	}
	mat := func(m *tensor.Matrix) {
		num(uint64(m.Type))
		num(uint64(m.Rows))
		num(uint64(m.Cols))
		for _, r := range [...]int{0, m.Rows / 2, m.Rows - 1} {
			h.Write(m.RowData(r))
		}
	}
	vec := func(v []float32) {
		num(uint64(len(v)))
		for _, x := range v {
			binary.LittleEndian.PutUint32(b[:4], math.Float32bits(x))
			h.Write(b[:4])
		}
	}
	mat(w.TokenEmbedding)
	if w.Output != w.TokenEmbedding {
		mat(w.Output)
	}
	vec(w.OutputNorm)
	vec(w.RopeFreqFactors)
	for _, l := range w.Layers {
		vec(l.AttnNorm)
		vec(l.FFNNorm)
		vec(l.Bq)
		vec(l.Bk)
		vec(l.Bv)
		for _, m := range [...]*tensor.Matrix{l.Wq, l.Wk, l.Wv, l.Wo, l.WGate, l.WDown, l.WUp} {
			mat(m)
		}
	}
	return h.Sum64()
}
