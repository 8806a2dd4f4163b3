package shard

import (
	"fmt"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// A group is its session's engine.Peers: the forward pass of every shard
// calls it at the same points in the same order, and it runs the step
// protocol there. Shard 0 leads: Begin sends the others the step's header
// (Follow receives it and starts the same forward pass), and Prepare greets
// them before a generation. A leader's step holds g.mu from Begin to End, so
// that Close waits for it.

var _ engine.Peers = (*group)(nil)

// Prepare (shard 0) checks, before a generation, that the shards are the
// parts of one model and in step, and reports whether a follower's KV cache
// is empty. The other shards cannot generate.
func (g *group) Prepare() (forget bool, err error) {
	if g.self != 0 {
		return false, fmt.Errorf("%w: shard %d of %d follows shard 0 (Session.Follow); generate with shard 0's session", ErrSplit, g.self, g.count)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.broken != nil {
		return false, g.broken
	}
	return g.greet()
}

// Begin (shard 0) starts the step of a forward pass of tokens (one, or a
// prompt block), greeting the other shards first if no hello has succeeded
// yet. A follower's step began with the header Follow received.
func (g *group) Begin(tokens []int, pos int, logits bool) error {
	if g.self != 0 {
		return nil
	}
	g.mu.Lock()
	if g.broken != nil {
		g.mu.Unlock()
		return g.broken
	}
	if !g.greeted {
		if _, err := g.greet(); err != nil {
			g.mu.Unlock()
			return err
		}
	}
	flags := 0
	if logits {
		flags = flagLogits
	}
	g.startStep(opForward, tokens, pos, flags)
	return nil
}

// Embed gathers the tokens' embeddings: each shard sends every other, in
// one message, the rows of the tokens whose rows it holds, in the tokens'
// order (nothing if it holds none), and places the others' rows.
func (g *group) Embed(x []float32, emb *tensor.Matrix, tokens []int) {
	dim, lo := emb.Cols, g.plan.rows.Vocab.Lo
	own := 0
	for i, t := range tokens {
		if g.plan.vocabOwner(t) == g.self {
			emb.Row(x[i*dim:(i+1)*dim], t-lo)
			own += copy(g.embOwn[own:], x[i*dim:(i+1)*dim])
		}
	}
	if g.broken != nil {
		return
	}
	g.sendOwn(g.embOwn[:own], allShards)
	start, received := time.Now(), false
	for j := range g.count {
		rows := 0
		for _, t := range tokens {
			if j != g.self && g.plan.vocabOwner(t) == j {
				rows++
			}
		}
		if rows == 0 {
			continue
		}
		m := g.receive(j, rows*dim)
		if g.broken != nil {
			return
		}
		received = true
		for i, t := range tokens {
			if m != nil && g.plan.vocabOwner(t) == j {
				m = m[copy(x[i*dim:(i+1)*dim], m):]
			}
		}
	}
	g.counted(start, received)
}

// Gather places this shard's parts own of n tokens' vectors at gather point
// p in the whole vectors and receives the others' parts: every shard
// receives every part, but for the logits, which only shard 0 (which
// samples) receives.
func (g *group) Gather(p engine.GatherPoint, own []float32, n int) []float32 {
	parts := g.plan.parts[p]
	width, lo, hi := parts[g.count], parts[g.self], parts[g.self+1]
	whole, own := g.whole[p][:n*width], own[:n*(hi-lo)]
	for i := range n {
		copy(whole[i*width+lo:i*width+hi], own[i*(hi-lo):])
	}
	root := allShards
	if p == engine.GatherLogits {
		root = 0
	}
	g.gather(own, whole, parts, n, root)
	return whole
}

// Projection is this shard's rows of Wo for prompt blocks: whole groups
// of tensor.PackedGroupRows rows, split as evenly as they go (none, so
// every shard computes all of Wo, where Dim is not whole groups).
func (g *group) Projection() engine.Span { return g.plan.projection }

// End is the outcome of the step. A leader whose step failed greets again
// before the next one: a follower may have restarted.
func (g *group) End() error {
	err := g.endStep()
	if g.self == 0 {
		if err != nil {
			g.greeted = false
		}
		g.mu.Unlock()
	}
	return err
}

// greet (shard 0, holding g.mu) checks that the shards are the parts of one
// model, split one way, with the same context, and that their KV caches are
// in step with this session's: a follower that has never been greeted has
// an empty cache (fresh), so the cached prompt prefix must be forgotten.
func (g *group) greet() (fresh bool, err error) {
	g.startStep(opHello, nil, 0, 0)
	fresh = g.exchangeIdentities()
	err = g.endStep()
	g.greeted = err == nil
	return fresh && err == nil, err
}

// exchangeIdentities is a hello's gather: every shard contributes [index,
// count, fingerprint, context, fresh, prompt block] and checks everyone's
// against its own.
// It reports whether any follower had never been greeted.
func (g *group) exchangeIdentities() (fresh bool) {
	own := g.ident[g.self*identLen : (g.self+1)*identLen]
	for i := range 4 {
		own[2+i] = float32(g.source >> (16 * i) & 0xffff)
	}
	own[0], own[1], own[6], own[7], own[8] = float32(g.self), float32(g.count), float32(g.context), 0, float32(g.block)
	if !g.greeted && g.self != 0 {
		own[7] = 1
	}
	g.gather(own, g.ident, g.identParts, 1, allShards)
	if g.endStep() != nil {
		return false
	}
	for j := range g.count {
		id := g.ident[j*identLen : (j+1)*identLen]
		if err := checkIdentity(j, id, own); err != nil {
			g.fail(err, failMismatch, g.self, j)
			return false
		}
		fresh = fresh || id[7] != 0
	}
	return fresh
}

// checkIdentity compares shard j's identity with own.
func checkIdentity(j int, id, own []float32) error {
	fp := func(v []float32) uint64 {
		var f uint64
		for i := range 4 {
			f |= uint64(v[2+i]) << (16 * i)
		}
		return f
	}
	switch {
	case int(id[1]) != int(own[1]):
		return fmt.Errorf("%w: shard %d is one of %v shards, shard %v one of %v: split the model the same way for every worker",
			ErrMismatch, j, id[1], own[0], own[1])
	case int(id[0]) != j:
		return fmt.Errorf("%w: the shard connected as shard %d holds shard %v's weights", ErrMismatch, j, id[0])
	case fp(id) != fp(own):
		return fmt.Errorf("%w: shard %d was cut from another model than shard %v (fingerprint %016x, not %016x)",
			ErrMismatch, j, own[0], fp(id), fp(own))
	case id[6] != own[6]:
		return fmt.Errorf("%w: shard %d's session holds %v positions, shard %v's %v: give every shard the same ContextLength",
			ErrMismatch, j, id[6], own[0], own[6])
	case id[8] != own[8]:
		return fmt.Errorf("%w: shard %d's session evaluates prompt blocks of %v tokens, shard %v's of %v: give every shard the same PromptBlock",
			ErrMismatch, j, id[8], own[0], own[8])
	}
	return nil
}
