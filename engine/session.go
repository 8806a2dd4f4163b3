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
	ContextLength int
}

// Session is one conversation with a model: it owns the KV cache, the
// position and the scratch buffers. A session runs one generation at a time;
// a call made while another runs fails with ErrBusy. Sessions of the same
// model are independent and may run in parallel.
type Session struct {
	model   *Model
	context int        // positions this session holds
	state   *runState  // scratch buffers
	kv      kvCache    // (layers, context, kvDim) keys and values
	rope    ropeTable  // rotations for every position
	tokens  []int      // the ids whose keys and values are in the cache, in order
	mu      sync.Mutex // held while a generation runs
}

// NewSession allocates a session's buffers (the KV cache dominates:
// 2 · layers · context · kvDim float32 values).
func (m *Model) NewSession(opts SessionOptions) (*Session, error) {
	ctx := m.Config.ContextLength
	if opts.ContextLength < 0 || opts.ContextLength > ctx {
		return nil, fmt.Errorf("%w: context length %d is outside 0..%d (the model's)", ErrInvalidOption, opts.ContextLength, ctx)
	}
	if opts.ContextLength > 0 {
		ctx = opts.ContextLength
	} else {
		ctx = min(ctx, DefaultContextLength)
	}
	return &Session{
		model:   m,
		context: ctx,
		state:   newRunState(m.Config, ctx),
		kv:      newKVCache(m.Config, ctx),
		rope:    newRopeTable(m.Config, m.Weights.RopeFreqFactors, ctx),
		tokens:  make([]int, 0, ctx),
	}, nil
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
