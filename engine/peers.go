package engine

import "github.com/wasmlm/wasmlm/engine/tensor"

// Peers connects the session of one part of a split model (Model.Cut) to
// the sessions of the other parts, which together compute what the whole
// model would. The forward pass calls it at its gather points: each part
// computes its rows of a vector and Peers joins the parts. engine/shard
// implements it over messages between workers; a whole model's sessions use
// one that does nothing.
//
// Its methods are called from the session's goroutine, one forward pass at a
// time, and must not allocate once warmed up: a decode step allocates nothing.
type Peers interface {
	// Prepare is called when a generation starts, before it evaluates the
	// prompt. forget reports that the other parts' KV caches do not hold
	// this session's cached positions (a part was restarted), so the prompt
	// must be evaluated from its start. An error (the parts cannot work
	// together, or this part cannot generate) fails the generation.
	Prepare() (forget bool, err error)
	// Begin starts the forward pass of tokens at positions
	// pos..pos+len(tokens)-1 (a decode step's one token, or a block of
	// prompt tokens), with the last token's logits or not. tokens is not
	// kept after the pass.
	Begin(tokens []int, pos int, logits bool) error
	// Embed writes the tokens' rows of the embedding to x, one row after
	// another; emb holds this part's rows of the embedding.
	Embed(x []float32, emb *tensor.Matrix, tokens []int)
	// Gather returns the whole vectors of n tokens at gather point g, one
	// after another, of which own holds the parts this session computed,
	// one token's after another. The result is valid until the next call.
	Gather(g GatherPoint, own []float32, n int) []float32
	// Projection is the rows of a layer's attention output projection (Wo,
	// which every part holds whole) that this part computes for a block of
	// prompt tokens, whose outputs Gather(GatherProjection) then joins: an
	// empty span, it computes every row (a decode step always does, and a
	// whole model), with no gather.
	Projection() Span
	// End ends the forward pass, reporting whether every part did its share
	// (a failed exchange is an error, and the pass's results are void).
	End() error
}

// GatherPoint names a vector of the forward pass that the parts of a split
// model compute in pieces.
type GatherPoint int

// The gather points, in the order a forward pass reaches them (the first
// four once per layer, GatherProjection only in a block of prompt tokens,
// then GatherLogits when the logits are computed).
const (
	GatherAttention  GatherPoint = iota // the attention heads' outputs, concatenated: the input of Wo
	GatherProjection                    // Wo's output for a block of prompt tokens (Peers.Projection), added to the residual stream
	GatherHidden                        // the gated hidden units (SwiGLU): the input of the down projection
	GatherDown                          // the down projection's output, added to the residual stream
	GatherLogits                        // the next-token logits
)

// wholeModel is the Peers of a whole model: it has every row, so there is
// nothing to join.
type wholeModel struct{}

func (wholeModel) Prepare() (bool, error)                               { return false, nil }
func (wholeModel) Begin(tokens []int, pos int, logits bool) error       { return nil }
func (wholeModel) Gather(_ GatherPoint, own []float32, _ int) []float32 { return own }
func (wholeModel) End() error                                           { return nil }
func (wholeModel) Projection() Span                                     { return Span{} }

func (wholeModel) Embed(x []float32, emb *tensor.Matrix, tokens []int) {
	for i, t := range tokens {
		emb.Row(row(x, i, emb.Cols), t)
	}
}
