package engine

import (
	"fmt"
)

// The sessions of a split model's shards work as one: shard 0's session
// leads — it generates as any session does, and each of its forward passes
// first tells the others what to compute — while every other shard's
// session runs Follow. Tokens, text and timings come out of shard 0 only.

// Follow makes the session of shard 1..n-1 of a split model serve shard 0's
// session: it computes its part of every forward pass shard 0 starts, until
// shard 0's session is closed (Follow then returns nil) or the shards can no
// longer reach each other (an error wrapping ErrExchange). Failures of single
// steps are reported to shard 0, whose generation fails; Follow goes on.
func (s *Session) Follow() error {
	if s.group == nil || s.plan.index == 0 {
		return fmt.Errorf("%w: only shards 1..n-1 of a split model follow; this session is shard %d of %d", ErrShard, s.plan.index, s.plan.count)
	}
	if !s.mu.TryLock() {
		return ErrBusy
	}
	defer s.mu.Unlock()
	g := s.group
	for {
		if err := g.awaitHeader(); err != nil {
			return err
		}
		switch st := g.step; st.op {
		case opStop:
			return nil
		case opHello:
			s.exchangeIdentities()
			g.greeted = true
		case opForward:
			// A group that passed its hello agrees on the vocabulary and the
			// context, so shard 0 never asks for these.
			if st.token >= s.model.Config.VocabSize || st.pos >= s.context {
				g.outOfStep(0, fmt.Sprintf("token %d at position %d (vocabulary %d, context %d)", st.token, st.pos, s.model.Config.VocabSize, s.context))
				return g.broken
			}
			if !g.greeted {
				// This session started after shard 0 filled its KV cache:
				// take part in the step (so the shards stay in step) but
				// fail it, so shard 0 greets again and starts afresh.
				g.fail(fmt.Errorf("%w: shard %d was asked to compute before a hello", ErrExchange, g.self), failStale, g.self, 0)
			}
			_ = s.forward(st.token, st.pos, st.flags&flagLogits != 0) // shard 0 reports the step's failures
		default:
			g.outOfStep(0, fmt.Sprintf("a step header with op %d", st.op))
			return g.broken
		}
	}
}

// Close ends a split model's sessions: shard 0's session tells the others'
// Follow to return, and no longer generates. For a whole model, or a
// follower, it does nothing.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.group
	if g == nil || s.plan.index != 0 || g.broken != nil {
		return nil
	}
	g.startStep(opStop, 0, 0, 0)
	err := g.endStep()
	g.broken = fmt.Errorf("%w: the session of shard 0 is closed", ErrShard)
	return err
}

// lead (shard 0) starts the step of a forward pass, greeting the other
// shards first if no hello has succeeded yet.
func (s *Session) lead(token, pos int, wantLogits bool) error {
	g := s.group
	if !g.greeted {
		if err := s.greet(); err != nil {
			return err
		}
	}
	flags := 0
	if wantLogits {
		flags = flagLogits
	}
	g.startStep(opForward, token, pos, flags)
	return nil
}

// greet (shard 0) checks that the shards are the parts of one model, split
// one way, with the same context, and that their KV caches are in step with
// this session's: a follower that has never been greeted has an empty cache,
// so the cached prompt prefix is forgotten. Generations greet first.
func (s *Session) greet() error {
	g := s.group
	g.startStep(opHello, 0, 0, 0)
	fresh := s.exchangeIdentities()
	err := g.endStep()
	g.greeted = err == nil
	if err != nil {
		return err
	}
	if fresh {
		s.tokens = s.tokens[:0]
	}
	return nil
}

// exchangeIdentities is a hello's gather: every shard contributes [index,
// count, fingerprint, context, fresh] and checks everyone's against its own.
// It reports whether any follower had never been greeted.
func (s *Session) exchangeIdentities() (fresh bool) {
	g, p := s.group, &s.plan
	own := g.ident[g.self*identLen : (g.self+1)*identLen]
	for i := range 4 {
		own[2+i] = float32(p.source >> (16 * i) & 0xffff)
	}
	own[0], own[1], own[6], own[7] = float32(p.index), float32(p.count), float32(s.context), 0
	if !g.greeted && p.index != 0 {
		own[7] = 1
	}
	g.gather(g.ident, g.identParts, allShards)
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
			ErrShardMismatch, j, id[1], own[0], own[1])
	case int(id[0]) != j:
		return fmt.Errorf("%w: the shard connected as shard %d holds shard %v's weights", ErrShardMismatch, j, id[0])
	case fp(id) != fp(own):
		return fmt.Errorf("%w: shard %d was cut from another model than shard %v (fingerprint %016x, not %016x)",
			ErrShardMismatch, j, own[0], fp(id), fp(own))
	case id[6] != own[6]:
		return fmt.Errorf("%w: shard %d's session holds %v positions, shard %v's %v: give every shard the same ContextLength",
			ErrShardMismatch, j, id[6], own[0], own[6])
	}
	return nil
}
