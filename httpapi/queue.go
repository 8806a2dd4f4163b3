package httpapi

import (
	"context"
	"slices"
	"sync"

	"github.com/wasmlm/wasmlm/engine"
)

// scheduler hands the model's sessions (one per slot) to requests in the
// order they arrived. A request that finds every slot busy waits in a
// bounded FIFO queue; when the queue is full it is refused at once, so a
// burst cannot pile up unbounded memory and latency. A waiting request whose
// context ends (its client left) leaves the queue without ever taking a slot.
//
// Before all that, a request is admitted (admit, then leave when it is
// answered): at most slots + limit requests are between the two at once.
// The handler admits a request before it reads its body, so the bodies held
// at once are bounded by the same numbers as the queue; one admitted request
// more could only have to wait beyond the queue's end.
//
// The queue is explicit rather than a buffered channel of sessions because
// the Go specification does not promise that blocked receivers are served in
// order; fairness is the point here.
type scheduler struct {
	mu      sync.Mutex
	free    []*engine.Session // idle sessions
	waiting []*waiter         // oldest first
	limit   int               // most requests that may wait

	admitted int // requests between admit and leave
	capacity int // most requests admitted at once: slots + limit

	closed  bool          // by close: admit and acquire refuse
	drained chan struct{} // closed once closed and no request is admitted
}

// waiter is one queued request; release hands it a session through ch.
type waiter struct {
	ch chan *engine.Session // buffered (1): release never blocks on it; nil: closed
}

func newScheduler(sessions []*engine.Session, limit int) *scheduler {
	limit = max(limit, 0)
	return &scheduler{free: sessions, limit: limit, capacity: len(sessions) + limit, drained: make(chan struct{})}
}

// close refuses every request from now on, with ErrShuttingDown, those
// waiting for a slot too, and returns a channel closed once every admitted
// request has left.
func (s *scheduler) close() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		for _, w := range s.waiting {
			w.ch <- nil
		}
		s.waiting = nil
		s.checkDrained()
	}
	return s.drained
}

// checkDrained closes drained when the last request of a closed scheduler
// has left. s.mu is held.
func (s *scheduler) checkDrained() {
	if s.closed && s.admitted == 0 {
		select {
		case <-s.drained:
		default:
			close(s.drained)
		}
	}
}

// admit lets a request in, or fails with ErrQueueFull when capacity
// requests are in already (ErrShuttingDown once closed).
func (s *scheduler) admit() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrShuttingDown
	}
	if s.admitted >= s.capacity {
		return ErrQueueFull
	}
	s.admitted++
	return nil
}

// leave ends what admit began.
func (s *scheduler) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admitted--
	s.checkDrained()
}

// acquire returns an idle session, waiting for one in FIFO order. It fails
// with ErrQueueFull when it would have to wait and limit requests already
// do, with ErrShuttingDown once closed, and with ctx's error when ctx ends
// first.
func (s *scheduler) acquire(ctx context.Context) (*engine.Session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrShuttingDown
	}
	if len(s.free) > 0 && len(s.waiting) == 0 {
		sess := s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		s.mu.Unlock()
		return sess, nil
	}
	if len(s.waiting) >= s.limit {
		s.mu.Unlock()
		return nil, ErrQueueFull
	}
	w := &waiter{ch: make(chan *engine.Session, 1)}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()

	select {
	case sess := <-w.ch:
		if sess == nil {
			return nil, ErrShuttingDown
		}
		return sess, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if i := slices.Index(s.waiting, w); i >= 0 {
		s.waiting = slices.Delete(s.waiting, i, i+1)
		s.mu.Unlock()
		return nil, ctx.Err()
	}
	s.mu.Unlock()
	// release (or close) chose w before the cancel was seen: the session
	// (or nil) is in w.ch already; pass it on.
	if sess := <-w.ch; sess != nil {
		s.release(sess)
	}
	return nil, ctx.Err()
}

// release returns a session: to the oldest waiting request, or to the pool.
func (s *scheduler) release(sess *engine.Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiting) > 0 {
		w := s.waiting[0]
		s.waiting = slices.Delete(s.waiting, 0, 1)
		w.ch <- sess
		return
	}
	s.free = append(s.free, sess)
}

// queued is the number of requests waiting for a slot.
func (s *scheduler) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting)
}
