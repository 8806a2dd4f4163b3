// Package shard splits a model across workers (Web Workers in a browser) so
// that each holds part of the weights and computes part of every layer, and
// the workers together produce exactly the tokens one worker would. Each
// worker's part of the model is a shard (Part).
//
// Every matrix is split by output rows, never by columns: a row's dot
// product is then computed whole, by one shard, exactly as a whole model
// computes it, and the shards only have to gather each other's slices of the
// outputs. (Splitting columns, as Megatron-style tensor parallelism does,
// would sum partial dot products in a different order and change the bits.)
// Shard i of n computes
//
//   - attention: kv heads split(KVHeads, i, n) and the query heads that use
//     them (their GQA groups): those rows of Wq, Wk, Wv, the KV cache of
//     those kv heads only, and the attention of those query heads;
//   - all of Wo (see below), and rows split(Dim, i, n) of WDown;
//   - rows split(HiddenDim, i, n) of WGate and WUp (its hidden units);
//   - rows split(VocabSize, i, n) of the output classifier and of the token
//     embedding.
//
// Which tensors split along which axis is the engine's architecture table
// (engine.Model.Tensors); this package decides where the cuts fall. A fused
// tensor (phi3's attn_qkv holds the queries', keys' and values' rows, its
// ffn_up the gate's and up's) is cut piece by piece: a shard holds its rows
// of each piece, one after another, and its file holds them so. A family
// whose layers need every head at once (olmo2 normalises all the queries of
// a position together) cannot be split: engine.Model.SplitError says why,
// and Cut, File, Layout and PartBytes refuse it.
//
// Each shard keeps the whole residual stream and computes the RMS norms
// itself (identically). Per forward pass — a decode step's token, or a
// block of up to SessionOptions.PromptBlock prompt tokens, each gather then
// carrying every token's part in one message — the shards gather, through
// the engine.Peers this package implements: the embedding rows (from their
// owners), then in every layer the attention output, the SwiGLU activation
// and WDown's output, and at the end the logits of the last token (to shard
// 0 only, which samples). Every shard holds all of Wo, the smallest matrix
// of a layer (Dim·QDim of its 2·Dim·QDim + 2·Dim·KVDim + 3·Dim·HiddenDim
// weights; QDim is Dim unless the heads are wider, as Qwen3's). A decode
// step computes all of it: splitting it would cost one more gather per
// layer, and in a browser a gather (0.09–0.17 ms measured; see
// web/README.md) costs more than the rows of Wo it would spare up to
// Dim ≈ 2048 (1B-parameter models). A prompt block, whose gathers carry
// every token's part at once, splits it: shard i computes its rows of
// Wo's output (whole groups of tensor.PackedGroupRows, so that a packed Wo
// slices; split(Dim/8, i, n)·8) and the shards gather them
// (engine.GatherProjection), so a block's work splits in full. Where Dim
// is not whole groups, every shard computes all of Wo for blocks too.
// Shard 0 leads: it runs the generation and tells the others, step by
// step, what to compute (see Session.Follow). Weights that serve every head alike (Qwen3's and
// Gemma 3's q and k norms) or the whole residual stream (Gemma's norms of
// the attention's and the feed-forward's outputs, applied to the gathered
// vectors) every shard holds whole; each keeps its kv heads' part of
// every layer's KV cache, a sliding-window layer's ring included.
//
// split(total, i, n) is [⌊i·total/n⌋, ⌊(i+1)·total/n⌋): contiguous, the sizes
// differ by at most one. When n does not divide KVHeads the later shards get
// one kv head (one GQA group) more. A model splits into at most KVHeads
// shards: one with a single kv head (Gemma-3-1B) does not split.
//
// The shards talk through an Exchange, which only moves float32 messages:
// NewLocalExchange connects shards within one process over channels (each on
// its own goroutine, natively on its own core); jsbridge connects Web
// Workers over MessagePorts.
package shard

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// split is part i of n of total: [⌊i·total/n⌋, ⌊(i+1)·total/n⌋).
func split(total, i, n int) engine.Span {
	return engine.Span{Lo: i * total / n, Hi: (i + 1) * total / n}
}

// plan says which rows a part holds and where every part's rows lie in the
// vectors they gather. A whole model would be part 0 of 1.
type plan struct {
	index, count int
	rows         engine.Part // this part's rows of every axis
	projection   engine.Span // its rows of Wo for prompt blocks (empty: all)
	// Part boundaries of the gathered vectors, count+1 each: part j's slice
	// of the attention output is parts[GatherAttention][j:j+2], and so on.
	parts [numGatherPoints][]int
}

const numGatherPoints = int(engine.GatherLogits) + 1

// newPlan is the plan of part index of count for a model of config c.
func newPlan(c engine.Config, index, count int) (plan, error) {
	if count < 1 || index < 0 || index >= count {
		return plan{}, fmt.Errorf("%w: shard %d of %d does not exist", ErrSplit, index, count)
	}
	if count > c.KVHeads {
		return plan{}, fmt.Errorf("%w: %d shards, but the model has %d kv heads: at most %d shards (each holds whole GQA groups)",
			ErrSplit, count, c.KVHeads, c.KVHeads)
	}
	// Dim ≥ Heads ≥ KVHeads, so only degenerate models have fewer hidden
	// units or tokens than parts.
	if count > c.HiddenDim || count > c.VocabSize {
		return plan{}, fmt.Errorf("%w: %d shards, but the model has %d hidden units and %d tokens",
			ErrSplit, count, c.HiddenDim, c.VocabSize)
	}
	headDim, group := c.HeadDim(), c.GroupSize()
	boundaries := func(total, unit int) []int {
		p := make([]int, count+1)
		for j := range p {
			p[j] = j * total / count * unit
		}
		return p
	}
	kv := split(c.KVHeads, index, count)
	p := plan{index: index, count: count}
	p.rows = engine.Part{
		Vocab:  split(c.VocabSize, index, count),
		Q:      engine.Span{Lo: kv.Lo * group * headDim, Hi: kv.Hi * group * headDim},
		KV:     engine.Span{Lo: kv.Lo * headDim, Hi: kv.Hi * headDim},
		Hidden: split(c.HiddenDim, index, count),
		Model:  split(c.Dim, index, count),
	}
	p.parts[engine.GatherAttention] = boundaries(c.KVHeads, group*headDim)
	p.parts[engine.GatherHidden] = boundaries(c.HiddenDim, 1)
	p.parts[engine.GatherDown] = boundaries(c.Dim, 1)
	if g := tensor.PackedGroupRows; count > 1 && c.Dim%g == 0 && c.Dim/g >= count {
		// Wo's rows for prompt blocks: whole groups of a packed layout
		p.parts[engine.GatherProjection] = boundaries(c.Dim/g, g)
		p.projection = split(c.Dim/g, index, count)
		p.projection.Lo *= g
		p.projection.Hi *= g
	} else {
		p.parts[engine.GatherProjection] = make([]int, count+1) // no part: every shard computes all of Wo
	}
	p.parts[engine.GatherLogits] = boundaries(c.VocabSize, 1)
	return p, nil
}

// vocabOwner is the part whose rows of the token embedding hold token.
func (p *plan) vocabOwner(token int) int {
	vocab := p.parts[engine.GatherLogits]
	for j := 1; j < len(vocab); j++ {
		if token < vocab[j] {
			return j - 1
		}
	}
	return p.count - 1
}

// maxPart is the longest slice any part contributes to gather point g, for
// one token.
func (p *plan) maxPart(g engine.GatherPoint) int {
	n, parts := 0, p.parts[g]
	for j := 1; j < len(parts); j++ {
		n = max(n, parts[j]-parts[j-1])
	}
	return n
}
