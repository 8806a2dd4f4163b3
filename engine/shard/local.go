package shard

import (
	"fmt"
	"sync"
)

// LocalExchange connects the shards of a model within one process, over
// channels: each shard's session runs in its own goroutine (natively, on
// its own core). NewLocalExchange makes a connected set.
type LocalExchange struct {
	self   int
	peers  []*LocalExchange
	in     []*localLink  // in[j]: the messages from shard j
	closed chan struct{} // closed by Close
	once   sync.Once
}

// localLink is one direction between two shards: a ring of message slots
// that the sender fills and the receiver reads in turn. A slot grows to the
// longest message the link has carried, so once every slot has been used
// after the longest message, the link allocates nothing more.
type localLink struct {
	slots [localQueue][]float32
	next  int            // the slot the sender fills next (sender only)
	most  int            // the longest message so far (sender only)
	free  chan struct{}  // a token per slot the sender may fill
	msgs  chan localSent // filled slots, in order
	held  int            // the slot Recv returned last, or -1 (receiver only)
}

type localSent struct{ slot, n int }

// localQueue is the number of slots of a link: the step protocol keeps a
// few messages in flight at most (a shard sends its part of a gather before
// it receives the others'), so a Send never waits in practice.
const localQueue = 16

var _ Exchange = (*LocalExchange)(nil)

// NewLocalExchange returns count connected exchanges: element i is shard i's.
func NewLocalExchange(count int) []*LocalExchange {
	ex := make([]*LocalExchange, max(count, 0))
	for i := range ex {
		ex[i] = &LocalExchange{self: i, peers: ex, in: make([]*localLink, count), closed: make(chan struct{})}
		for j := range ex[i].in {
			l := &localLink{free: make(chan struct{}, localQueue), msgs: make(chan localSent, localQueue), held: -1}
			for range localQueue {
				l.free <- struct{}{}
			}
			ex[i].in[j] = l
		}
	}
	return ex
}

// Reserve makes the links this shard sends on size new message slots for
// messages of longest values, so that a slot is allocated once, on its first
// use, and never grows. NewSession calls it with the longest message its
// shard sends.
func (e *LocalExchange) Reserve(longest int) {
	for j, peer := range e.peers {
		if j != e.self {
			link := peer.in[e.self]
			link.most = max(link.most, longest)
		}
	}
}

// Send delivers head and body to shard to, copying them.
func (e *LocalExchange) Send(to int, head, body []float32) error {
	if to < 0 || to >= len(e.peers) || to == e.self {
		return fmt.Errorf("%w: shard %d cannot send to shard %d of %d", ErrExchange, e.self, to, len(e.peers))
	}
	peer := e.peers[to]
	select { // a closed shard sends nothing, even where there is room
	case <-e.closed:
		return e.closedError(e.self)
	case <-peer.closed:
		return e.closedError(to)
	default:
	}
	link := peer.in[e.self]
	select {
	case <-link.free:
	case <-e.closed:
		return e.closedError(e.self)
	case <-peer.closed:
		return e.closedError(to)
	}
	n := len(head) + len(body)
	buf := link.slots[link.next]
	if cap(buf) < n {
		link.most = max(link.most, n)
		buf = make([]float32, link.most)
		link.slots[link.next] = buf
	}
	copy(buf[copy(buf, head):n], body)
	link.msgs <- localSent{link.next, n} // never waits: a free token means a free place
	link.next = (link.next + 1) % localQueue
	return nil
}

// Recv returns the next message from shard from, or an error once either
// end is closed. Messages that arrived before the close are delivered.
func (e *LocalExchange) Recv(from int) ([]float32, error) {
	if from < 0 || from >= len(e.peers) || from == e.self {
		return nil, fmt.Errorf("%w: shard %d cannot receive from shard %d of %d", ErrExchange, e.self, from, len(e.peers))
	}
	link := e.in[from]
	if link.held >= 0 {
		link.held = -1
		link.free <- struct{}{} // never waits: the token of a held slot is missing
	}
	var m localSent
	select {
	case m = <-link.msgs:
	default:
		select {
		case m = <-link.msgs:
		case <-e.closed:
			return nil, e.closedError(e.self)
		case <-e.peers[from].closed:
			return nil, e.closedError(from)
		}
	}
	link.held = m.slot
	return link.slots[m.slot][:m.n], nil
}

func (e *LocalExchange) closedError(shard int) error {
	return fmt.Errorf("%w: shard %d's exchange is closed", ErrExchange, shard)
}

// Close disconnects the shard: its own and its peers' calls that involve it
// fail from now on (those waiting included), as when a worker dies.
func (e *LocalExchange) Close() {
	e.once.Do(func() { close(e.closed) })
}
