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
type scheduler struct {
	slots  *fifo[*engine.Session]
	lender SessionLender // when not nil, lends the one session instead of slots

	mu       sync.Mutex
	admitted int           // requests between admit and leave
	capacity int           // most requests admitted at once: slots + limit
	closed   bool          // by close: admit refuses
	drained  chan struct{} // closed once closed and no request is admitted
}

func newScheduler(sessions []*engine.Session, limit int, lender SessionLender) *scheduler {
	limit = max(limit, 0)
	return &scheduler{slots: newFIFO(sessions, limit), lender: lender, capacity: len(sessions) + limit, drained: make(chan struct{})}
}

// close refuses every request from now on, with ErrShuttingDown, those
// waiting for a slot too, and returns a channel closed once every admitted
// request has left.
func (s *scheduler) close() <-chan struct{} {
	s.slots.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
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

// acquire returns an idle session, waiting for one in FIFO order, and the
// context to run the request's work in (ctx, or the lender's wrapping of
// it). It fails with ErrQueueFull when it would have to wait and limit
// requests already do, with ErrShuttingDown once closed, and with ctx's
// error when ctx ends first. With a lender, the lender orders the waiting
// (the admitted requests are bounded all the same).
func (s *scheduler) acquire(ctx context.Context) (context.Context, *engine.Session, error) {
	if s.lender != nil {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, nil, ErrShuttingDown
		}
		return s.lender.Borrow(ctx)
	}
	sess, err := s.slots.take(ctx)
	return ctx, sess, err
}

// release returns a session: to the lender, or to the oldest waiting
// request, or to the pool.
func (s *scheduler) release(sess *engine.Session) {
	if s.lender != nil {
		s.lender.Return(sess)
		return
	}
	s.slots.put(sess)
}

// queued is the number of requests waiting for a slot.
func (s *scheduler) queued() int { return s.slots.queued() }

// fifo hands the items of a pool (the slots' sessions, the places where
// requests are prepared) to those who ask, in the order they asked. One who
// finds none free waits, unless limit others wait already; one whose
// context ends leaves the line without taking one. Once closed, it refuses
// everyone, those waiting too.
//
// The line is explicit rather than a buffered channel of items because the
// Go specification does not promise that blocked receivers are served in
// order; fairness is the point here.
type fifo[T any] struct {
	mu      sync.Mutex
	free    []T
	waiting []chan grant[T] // oldest first; each buffered (1), so put never blocks on it
	limit   int             // most that may wait
	closed  bool
}

// grant is what a waiter is handed: an item, or (ok false) the news that
// the pool closed.
type grant[T any] struct {
	item T
	ok   bool
}

func newFIFO[T any](items []T, limit int) *fifo[T] {
	return &fifo[T]{free: items, limit: limit}
}

// take returns a free item, waiting for one in FIFO order. It fails with
// ErrQueueFull when it would have to wait and limit others already do, with
// ErrShuttingDown once closed, and with ctx's error when ctx ends first.
func (f *fifo[T]) take(ctx context.Context) (T, error) {
	var none T
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return none, ErrShuttingDown
	}
	if len(f.free) > 0 && len(f.waiting) == 0 {
		item := f.free[len(f.free)-1] // the most recently put: a slot's KV cache may hold this client's prefix
		f.free = f.free[:len(f.free)-1]
		f.mu.Unlock()
		return item, nil
	}
	if len(f.waiting) >= f.limit {
		f.mu.Unlock()
		return none, ErrQueueFull
	}
	w := make(chan grant[T], 1)
	f.waiting = append(f.waiting, w)
	f.mu.Unlock()

	select {
	case g := <-w:
		if !g.ok {
			return none, ErrShuttingDown
		}
		return g.item, nil
	case <-ctx.Done():
	}
	f.mu.Lock()
	if i := slices.Index(f.waiting, w); i >= 0 {
		f.waiting = slices.Delete(f.waiting, i, i+1)
		f.mu.Unlock()
		return none, ctx.Err()
	}
	f.mu.Unlock()
	// put (or close) chose w before the cancel was seen: the grant is in w
	// already; pass its item on.
	if g := <-w; g.ok {
		f.put(g.item)
	}
	return none, ctx.Err()
}

// put returns an item: to the oldest waiter, or to the pool.
func (f *fifo[T]) put(item T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.waiting) > 0 {
		w := f.waiting[0]
		f.waiting = slices.Delete(f.waiting, 0, 1)
		w <- grant[T]{item: item, ok: true}
		return
	}
	f.free = append(f.free, item)
}

// close refuses every take from now on, and those waiting.
func (f *fifo[T]) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, w := range f.waiting {
		w <- grant[T]{}
	}
	f.waiting = nil
}

// queued is the number waiting.
func (f *fifo[T]) queued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiting)
}
