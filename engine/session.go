package engine

import (
	"fmt"
	"sync"
)

// DefaultContextLength caps a session's context when SessionOptions does not
// say: models trained for 128k positions would otherwise allocate gigabytes
// of KV cache up front.
const DefaultContextLength = 4096

// SessionOptions configure a Session. The zero value is useful: the model's
// context, capped at DefaultContextLength.
type SessionOptions struct {
	// ContextLength is the positions the session can hold (and sizes its KV
	// cache); 0 means min(the model's context length, DefaultContextLength).
	// The shards of a model must all be given the same.
	ContextLength int
	// Exchange connects the session of a shard (Model.Shard, ShardGGUF) to
	// the sessions of the other shards: required for a model split in two or
	// more, and nil for a whole model.
	Exchange Exchange
}

// Session is one conversation with a model: it owns the KV cache, the
// position and the scratch buffers. A session runs one generation at a time;
// a call made while another runs fails with ErrBusy. Sessions of the same
// model are independent and may run in parallel.
type Session struct {
	model   *Model
	context int         // positions this session holds
	state   *runState   // scratch buffers
	kv      kvCache     // (layers, context, kvDim) keys and values
	rope    ropeTable   // rotations for every position
	tokens  []int       // the ids whose keys and values are in the cache, in order
	mu      sync.Mutex  // held while a generation runs (a follower: while it follows)
	plan    shardPlan   // the rows this session computes: all of them for a whole model
	group   *shardGroup // the other shards, for a shard of a split model; nil otherwise
}

// NewSession allocates a session's buffers (the KV cache dominates:
// 2 · layers · context · kvDim float32 values).
func (m *Model) NewSession(opts SessionOptions) (*Session, error) {
	ctx, err := m.SessionContextLength(opts.ContextLength)
	if err != nil {
		return nil, err
	}
	p := m.plan()
	var g *shardGroup
	switch {
	case p.count > 1 && opts.Exchange == nil:
		return nil, fmt.Errorf("%w: shard %d of %d needs SessionOptions.Exchange to reach the other shards", ErrShard, p.index, p.count)
	case p.count > 1:
		g = newShardGroup(opts.Exchange, &p)
	case opts.Exchange != nil:
		return nil, fmt.Errorf("%w: SessionOptions.Exchange is for shards of a split model; this model is whole", ErrShard)
	}
	return &Session{
		model:   m,
		context: ctx,
		state:   newRunState(m.Config, &p, ctx),
		kv:      newKVCache(m.Config, p.kvHeads.len()*m.Config.HeadDim(), ctx),
		rope:    newRopeTable(m.Config, m.Weights.RopeFreqFactors, ctx),
		tokens:  make([]int, 0, ctx),
		plan:    p,
		group:   g,
	}, nil
}

// SessionContextLength is the number of positions a session made with
// SessionOptions.ContextLength = requested holds, or an error wrapping
// ErrInvalidOption when requested is out of range: what NewSession checks,
// without allocating the session.
func (m *Model) SessionContextLength(requested int) (int, error) {
	ctx := m.Config.ContextLength
	if requested < 0 || requested > ctx {
		return 0, fmt.Errorf("%w: context length %d is outside 0..%d (the model's)", ErrInvalidOption, requested, ctx)
	}
	if requested > 0 {
		return requested, nil
	}
	return min(ctx, DefaultContextLength), nil
}

// ContextLength is the number of positions the session holds.
func (s *Session) ContextLength() int { return s.context }

// Model is the model the session runs.
func (s *Session) Model() *Model { return s.model }

// Reset forgets the cached conversation.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = s.tokens[:0]
}
