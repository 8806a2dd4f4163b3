package httpapi

import (
	"context"
	"slices"
	"sync"

	"github.com/wasmlm/wasmlm/engine"
)

// scheduler hands the model's sessions (one per slot) to requests, fairly
// between clients: each client's requests wait in a line of their own, in
// the order they arrived, and a free slot goes to the waiting client served
// least recently (round-robin; see fairPool). The waiting is bounded: when limit
// requests wait, one more is refused at once, so a burst cannot pile up
// unbounded memory and latency. A waiting request whose context ends (its
// client left) leaves its line without ever taking a slot.
//
// Before all that, a request is admitted (admit, then leave when it is
// answered): at most slots + limit requests are between the two at once,
// and at most slots + clientLimit of one client, so that no client can take
// every place (clientLimit < limit) and refuse the others. The handler
// admits a request before it reads its body, so the bodies held at once are
// bounded by the same numbers as the queue; one admitted request more could
// only have to wait beyond the queue's end.
type scheduler struct {
	slots    *fairPool[*engine.Session]
	sessions []*engine.Session // every slot's, by slot id (the slot actions: slots.go)
	lender   SessionLender     // when not nil, lends the one session instead of slots

	mu        sync.Mutex
	admitted  int            // requests between admit and leave
	capacity  int            // most requests admitted at once: slots + limit
	ofClient  map[string]int // requests between admit and leave, by client (those with any)
	perClient int            // most requests of one client admitted at once: slots + clientLimit
	closed    bool           // by close: admit refuses
	drained   chan struct{}  // closed once closed and no request is admitted
}

func newScheduler(sessions []*engine.Session, limit, clientLimit int, lender SessionLender) *scheduler {
	limit, clientLimit = max(limit, 0), max(clientLimit, 0)
	// The pool hands out the slot put back last first, so the slots start
	// free in reverse: a lone client's requests all run on slot 0, the one
	// the slot actions (slots.go) then save.
	free := slices.Clone(sessions)
	slices.Reverse(free)
	return &scheduler{
		slots: newFairPool(free, limit), sessions: slices.Clone(sessions), lender: lender,
		capacity: len(sessions) + limit, ofClient: map[string]int{}, perClient: len(sessions) + clientLimit,
		drained: make(chan struct{}),
	}
}

// clientOf is the client a request's context is counted under (see
// authenticate): an API key's name, or without keys "addr:" and its address.
func clientOf(ctx context.Context) string {
	client, _ := ctx.Value(clientKey{}).(string)
	return client
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

// admit lets a request of client in, or fails with ErrClientQueueFull when
// that client has perClient requests in already, with ErrQueueFull when
// capacity requests are in already (ErrShuttingDown once closed). The
// client's own bound comes first: a request it could not have made on an
// idle server is the client's doing, not the server's load. A client bound
// no lower than the server's is none: such a client is refused because the
// queue is full.
func (s *scheduler) admit(client string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrShuttingDown
	case s.perClient < s.capacity && s.ofClient[client] >= s.perClient:
		return ErrClientQueueFull
	case s.admitted >= s.capacity:
		return ErrQueueFull
	}
	s.admitted++
	s.ofClient[client]++
	return nil
}

// leave ends what admit began for a request of client.
func (s *scheduler) leave(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admitted--
	if s.ofClient[client]--; s.ofClient[client] <= 0 {
		delete(s.ofClient, client)
	}
	s.checkDrained()
}

// acquire returns an idle session, waiting for one in the line of ctx's
// client (clientOf), and the context to run the request's work in (ctx, or
// the lender's wrapping of it). It fails with ErrQueueFull when it would
// have to wait and limit requests already do, with ErrShuttingDown once
// closed, and with ctx's error when ctx ends first. With a lender, the
// lender orders the waiting (the admitted requests are bounded all the
// same).
func (s *scheduler) acquire(ctx context.Context) (context.Context, *engine.Session, error) {
	return s.join(ctx)()
}

// join is acquire in two steps: it puts the request in its client's line
// at once (or hands it an idle session, or fails), and the function it
// returns waits for the session as acquire does. A request joins the line
// before it leaves its preparation place (see prepare), so one prepared
// after it cannot take a slot before it. With a lender, the waiting is the
// lender's and starts when the function is called.
func (s *scheduler) join(ctx context.Context) (wait func() (context.Context, *engine.Session, error)) {
	if s.lender != nil {
		return func() (context.Context, *engine.Session, error) {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil, nil, ErrShuttingDown
			}
			return s.lender.Borrow(ctx)
		}
	}
	t, err := s.slots.join(clientOf(ctx))
	return func() (context.Context, *engine.Session, error) {
		if err != nil {
			return ctx, nil, err
		}
		sess, err := t.wait(ctx)
		return ctx, sess, err
	}
}

// release returns the session acquire(ctx) gave (ctx, or the context
// acquire returned, names the client): to the lender, or to the next
// waiting request (see fairPool), or to the pool.
func (s *scheduler) release(ctx context.Context, sess *engine.Session) {
	if s.lender != nil {
		s.lender.Return(sess)
		return
	}
	s.slots.put(sess, clientOf(ctx))
}

// queued is the number of requests waiting for a slot.
func (s *scheduler) queued() int { return s.slots.queued() }

// fairPool hands the items of a pool (the slots' sessions, the places where
// requests are prepared) to those who ask, fairly between clients: each
// client (an API key's name, or without keys an address: see authenticate)
// has its own line, served in the order it asked, and a free item goes to
// the waiting client handed one least recently (one handed none while its
// line lived first): round-robin between the clients that wait, where a
// client just handed an item goes behind the others. So while a client
// waits, each other client is handed at most one item before it, however
// many requests that client has in its line. One who finds none free
// waits, unless limit others wait already; one whose context ends
// leaves its line without taking one. Once closed, it refuses everyone,
// those waiting too.
//
// The lines are explicit rather than a buffered channel of items because
// the Go specification does not promise that blocked receivers are served
// in order; fairness is the point here.
type fairPool[T any] struct {
	mu      sync.Mutex
	free    []T
	clients map[string]*line[T] // those that wait or hold an item
	waiting int                 // waiters in every line
	limit   int                 // most that may wait
	tick    uint64              // counts arrivals and grants: orders lines and waiters
	closed  bool
}

// line is one client's: its waiters, oldest first, and what it holds.
type line[T any] struct {
	waiters []waiter[T]
	held    int    // items taken and not yet put back
	served  uint64 // tick of the client's last grant; 0: none while the line lived
}

// waiter is one waiting take: where its grant goes (buffered (1), so put
// never blocks on it) and when it arrived.
type waiter[T any] struct {
	ch      chan grant[T]
	arrived uint64
}

// grant is what a waiter is handed: an item, or (ok false) the news that
// the pool closed.
type grant[T any] struct {
	item T
	ok   bool
}

func newFairPool[T any](items []T, limit int) *fairPool[T] {
	return &fairPool[T]{free: items, limit: limit, clients: map[string]*line[T]{}}
}

// take returns a free item for client, waiting for one in its line. It
// fails with ErrQueueFull when it would have to wait and limit others
// already do, with ErrShuttingDown once closed, and with ctx's error when
// ctx ends first. The item is client's until put back with its name.
func (f *fairPool[T]) take(ctx context.Context, client string) (T, error) {
	t, err := f.join(client)
	if err != nil {
		var none T
		return none, err
	}
	return t.wait(ctx)
}

// ticket is a take under way (see join): the item, when one was free, or
// the waiter in client's line that a grant will reach.
type ticket[T any] struct {
	f      *fairPool[T]
	client string
	item   T
	w      *waiter[T] // nil: item is the client's already
	l      *line[T]
}

// join is take's first step: a free item for client at once, or its place
// at the end of client's line; the ticket's wait is the second. join fails
// as take does, but for ctx's end, which only wait sees. Every ticket must
// be waited on: its grant may come at any time.
func (f *fairPool[T]) join(client string) (ticket[T], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ticket[T]{}, ErrShuttingDown
	}
	if len(f.free) > 0 && f.waiting == 0 {
		item := f.free[len(f.free)-1] // the most recently put: a slot's KV cache may hold this client's prefix
		f.free = f.free[:len(f.free)-1]
		f.grantTo(client)
		return ticket[T]{f: f, client: client, item: item}, nil
	}
	if f.waiting >= f.limit {
		return ticket[T]{}, ErrQueueFull
	}
	l := f.line(client)
	f.tick++
	w := &waiter[T]{ch: make(chan grant[T], 1), arrived: f.tick}
	l.waiters = append(l.waiters, *w)
	f.waiting++
	return ticket[T]{f: f, client: client, w: w, l: l}, nil
}

// wait returns t's item once it is granted, or fails with ErrShuttingDown
// when the pool closes first, or with ctx's error when ctx ends first (the
// waiter then leaves its line). An item handed at once is returned
// whatever ctx.
func (t ticket[T]) wait(ctx context.Context) (T, error) {
	var none T
	if t.w == nil {
		return t.item, nil
	}
	f, w, l, client := t.f, t.w, t.l, t.client
	select {
	case g := <-w.ch:
		if !g.ok {
			return none, ErrShuttingDown
		}
		return g.item, nil
	case <-ctx.Done():
	}
	f.mu.Lock()
	if i := slices.IndexFunc(l.waiters, func(x waiter[T]) bool { return x.ch == w.ch }); i >= 0 {
		l.waiters = slices.Delete(l.waiters, i, i+1)
		f.waiting--
		f.forget(client, l)
		f.mu.Unlock()
		return none, ctx.Err()
	}
	f.mu.Unlock()
	// put (or close) chose w before the cancel was seen: the grant is in
	// w.ch already; pass its item on.
	if g := <-w.ch; g.ok {
		f.put(g.item, client)
	}
	return none, ctx.Err()
}

// put returns an item client took: to the next waiter (see next), or to
// the pool.
func (f *fairPool[T]) put(item T, client string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.clients[client]; l != nil {
		l.held--
		f.forget(client, l)
	}
	name, l := f.next()
	if l == nil {
		f.free = append(f.free, item)
		return
	}
	w := l.waiters[0]
	l.waiters = slices.Delete(l.waiters, 0, 1)
	f.waiting--
	f.grantTo(name)
	w.ch <- grant[T]{item: item, ok: true}
}

// next is the line to serve: of the clients that wait, the one served
// least recently (one served never, while its line lived, first), and
// between those the one whose oldest waiter came first. nil when none
// waits. f.mu is held.
func (f *fairPool[T]) next() (string, *line[T]) {
	var (
		name string
		best *line[T]
	)
	for c, l := range f.clients {
		if len(l.waiters) == 0 {
			continue
		}
		if best == nil || l.served < best.served || (l.served == best.served && l.waiters[0].arrived < best.waiters[0].arrived) {
			name, best = c, l
		}
	}
	return name, best
}

// line is client's line, made if it has none. f.mu is held.
func (f *fairPool[T]) line(client string) *line[T] {
	l := f.clients[client]
	if l == nil {
		l = &line[T]{}
		f.clients[client] = l
	}
	return l
}

// grantTo records that client was handed an item. f.mu is held.
func (f *fairPool[T]) grantTo(client string) {
	l := f.line(client)
	l.held++
	f.tick++
	l.served = f.tick
}

// forget drops client's line once it neither waits nor holds an item, so
// the lines are as many as the clients in the pool's hands. f.mu is held.
func (f *fairPool[T]) forget(client string, l *line[T]) {
	if l.held <= 0 && len(l.waiters) == 0 {
		delete(f.clients, client)
	}
}

// close refuses every take from now on, and those waiting.
func (f *fairPool[T]) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for c, l := range f.clients {
		for _, w := range l.waiters {
			w.ch <- grant[T]{}
		}
		l.waiters = nil
		f.forget(c, l)
	}
	f.waiting = 0
}

// queued is the number waiting, in every line.
func (f *fairPool[T]) queued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting
}
