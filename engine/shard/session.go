package shard

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/wasmlm/wasmlm/engine"
)

// Session is the session of one shard of a split model. The shards'
// sessions work as one: shard 0's generates as any engine.Session does (its
// methods are the embedded session's), and each of its forward passes first
// tells the others what to compute, while every other shard's session runs
// Follow. Tokens, text and timings come out of shard 0 only.
type Session struct {
	*engine.Session
	part      *Part
	group     *group
	following atomic.Bool
}

// NewSession makes the session of shard p, connected to the other shards'
// sessions through ex (whose element for shard j reaches shard j's). Every
// shard must be given the same opts.ContextLength and opts.KVType (which
// the shards do not check: different types give a result that neither
// type alone would), and the same opts.PromptBlock (which they check).
func NewSession(p *Part, ex Exchange, opts engine.SessionOptions) (*Session, error) {
	if ex == nil {
		return nil, fmt.Errorf("%w: shard %d of %d needs an Exchange to reach the other shards", ErrSplit, p.Index, p.Count)
	}
	if opts.Peers != nil {
		return nil, fmt.Errorf("%w: the shard's session makes its own SessionOptions.Peers", ErrSplit)
	}
	ctx, err := p.Model.SessionContextLength(opts.ContextLength)
	if err != nil {
		return nil, err
	}
	g := newGroup(ex, p, ctx)
	opts.Peers = g
	s, err := p.Model.NewSession(opts)
	if err != nil {
		return nil, err
	}
	g.setBlock(s.PromptBlock())
	return &Session{Session: s, part: p, group: g}, nil
}

// Part is the shard the session computes.
func (s *Session) Part() *Part { return s.part }

// Follow makes the session of shard 1..n-1 serve shard 0's session: it
// computes its part of every forward pass shard 0 starts, until shard 0's
// session is closed (Follow then returns nil) or the shards can no longer
// reach each other (an error wrapping ErrExchange). Failures of single
// steps are reported to shard 0, whose generation fails; Follow goes on.
func (s *Session) Follow() error {
	g := s.group
	if g.self == 0 {
		return fmt.Errorf("%w: only shards 1..n-1 of a split model follow; this session is shard 0 of %d", ErrSplit, g.count)
	}
	if !s.following.CompareAndSwap(false, true) {
		return engine.ErrBusy
	}
	defer s.following.Store(false)
	vocab := s.part.Model.Config().VocabSize
	for {
		if err := g.awaitHeader(); err != nil {
			return err
		}
		g.mu.Lock()
		stop, err := s.followStep(vocab)
		g.mu.Unlock()
		if stop || err != nil {
			return err
		}
	}
}

// followStep runs the step whose header arrived; stop is true when shard 0
// said stop.
func (s *Session) followStep(vocab int) (stop bool, err error) {
	g := s.group
	switch st := g.step; st.op {
	case opStop:
		return true, nil
	case opHello:
		g.exchangeIdentities()
		g.greeted = true
	case opForward:
		// A group that passed its hello agrees on the vocabulary, the
		// context and the prompt block, so shard 0 never asks for these.
		tokens := g.tokens[:st.n]
		if bad := slices.IndexFunc(tokens, func(t int) bool { return t >= vocab }); bad >= 0 || st.n == 0 || st.pos+st.n > g.context {
			g.outOfStep(0, fmt.Sprintf("%d tokens at position %d (vocabulary %d, context %d)", st.n, st.pos, vocab, g.context))
			return true, g.broken
		}
		if !g.greeted {
			// This session started after shard 0 filled its KV cache: take
			// part in the step (so the shards stay in step) but fail it, so
			// shard 0 greets again and starts afresh.
			g.fail(fmt.Errorf("%w: shard %d was asked to compute before a hello", ErrExchange, g.self), failStale, g.self, 0)
		}
		// The step's failures are shard 0's to report: its generation fails.
		if err := s.ForwardBlock(tokens, st.pos, st.flags&flagLogits != 0); err != nil && g.broken != nil {
			return true, g.broken
		}
	default:
		g.outOfStep(0, fmt.Sprintf("a step header with op %d", st.op))
		return true, g.broken
	}
	return false, nil
}

// Close ends a split model's sessions: shard 0's session tells the others'
// Follow to return, and no longer generates (a generation in progress fails
// at its next step). For a follower it does nothing.
func (s *Session) Close() error {
	g := s.group
	if g.self != 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.broken != nil {
		return nil
	}
	g.startStep(opStop, nil, 0, 0)
	err := g.endStep()
	g.broken = fmt.Errorf("%w: the session of shard 0 is closed", ErrSplit)
	return err
}

// Stats are the time this shard's gathers have spent waiting for the
// other shards' parts (the exchange's latency plus any wait for a slower
// shard) and how many gathers waited, since the session began: a
// generation's share is the difference across it.
func (s *Session) Stats() (waited time.Duration, gathers int) {
	g := s.group
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waited, g.gathers
}
