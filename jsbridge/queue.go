package jsbridge

import (
	"context"
	"slices"
	"sync"
)

// turnQueue lets calls hold one turn at a time, in the order they joined.
//
// The order is fixed when a call joins (synchronously, as JavaScript calls
// the method), not when its goroutine first runs: the scheduler may run the
// most recently started goroutine first, so a lock or channel taken inside
// the goroutines would not keep JavaScript's call order.
type turnQueue struct {
	mu      sync.Mutex
	holder  *ticket   // the ticket holding the turn, or nil
	waiting []*ticket // in joining order
}

// ticket is one call's place in the queue.
type ticket struct {
	ready chan struct{} // closed when the turn is the ticket's
	left  bool          // leave was called
}

// join takes a place at the back of the queue (or the turn, if it is free).
// Every ticket must leave, whether or not it got the turn.
func (q *turnQueue) join() *ticket {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := &ticket{ready: make(chan struct{})}
	if q.holder == nil {
		q.holder = t
		close(t.ready)
	} else {
		q.waiting = append(q.waiting, t)
	}
	return t
}

// wait blocks until t holds the turn (true) or ctx is done (false).
func (q *turnQueue) wait(ctx context.Context, t *ticket) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case <-t.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// leave gives up t's place: it passes the turn on if t holds it, or leaves
// the line if t is still waiting. Leaving twice does nothing.
func (q *turnQueue) leave(t *ticket) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if t.left {
		return
	}
	t.left = true
	if q.holder != t {
		q.waiting = slices.DeleteFunc(q.waiting, func(w *ticket) bool { return w == t })
		return
	}
	q.holder = nil
	if len(q.waiting) > 0 {
		q.holder = q.waiting[0]
		q.waiting = q.waiting[1:]
		close(q.holder.ready)
	}
}

// length is the number of tickets in the queue, the holder included.
func (q *turnQueue) length() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.waiting)
	if q.holder != nil {
		n++
	}
	return n
}
