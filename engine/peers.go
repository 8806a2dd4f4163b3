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
	// Begin starts the forward pass of token at position pos (with the
	// logits, or not).
	Begin(token, pos int, logits bool) error
	// Embed writes token's row of the embedding to x; emb holds this part's
	// rows of the embedding.
	Embed(x []float32, emb *tensor.Matrix, token int)
	// Gather returns the whole vector at gather point g, of which own is the
	// part this session computed.
	Gather(g GatherPoint, own []float32) []float32
	// End ends the forward pass, reporting whether every part did its share
	// (a failed exchange is an error, and the pass's results are void).
	End() error
}

// GatherPoint names a vector of the forward pass that the parts of a split
// model compute in pieces.
type GatherPoint int

// The gather points, in the order a forward pass reaches them (the last three
// once per layer, then GatherLogits when the logits are computed).
const (
	GatherAttention GatherPoint = iota // the attention heads' outputs, concatenated: the input of Wo
	GatherHidden                       // the gated hidden units (SwiGLU): the input of the down projection
	GatherDown                         // the down projection's output, added to the residual stream
	GatherLogits                       // the next-token logits
)

// wholeModel is the Peers of a whole model: it has every row, so there is
// nothing to join.
type wholeModel struct{}

func (wholeModel) Prepare() (bool, error)                           { return false, nil }
func (wholeModel) Begin(token, pos int, logits bool) error          { return nil }
func (wholeModel) Embed(x []float32, emb *tensor.Matrix, token int) { emb.Row(x, token) }
func (wholeModel) Gather(_ GatherPoint, own []float32) []float32    { return own }
func (wholeModel) End() error                                       { return nil }
