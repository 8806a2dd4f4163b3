package jsbridge

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"syscall/js"
	"time"
)

// A portExchange with shared memory (load's sharedMemory option, which the
// page gives where it is cross-origin isolated) moves its messages through
// SharedArrayBuffers: Send writes into a ring the receiver reads, and Recv
// waits with Atomics.wait instead of returning to the event loop for a
// port's message event, which costs a round trip through both workers'
// event loops per exchange.
//
// The page makes one control buffer for the group (an Int32Array of
// 1 + 3n words): word 0 is set when the page gives up on the group (a worker
// failed, the model was unloaded), word 1+i is shard i's doorbell, which
// every sender to shard i increments and notifies, word 1+n+i is set when
// shard i closes its exchange, and word 1+2n+i while shard i waits with its
// event loop running (then a sender also posts it a wake-up). Each shard makes its own rings, one per
// peer it sends to, and hands each to its peer over their MessagePort
// ({seq, ring}) before writing the message numbered seq into it; a ring
// grows (a new one replaces it the same way) when Reserve asks for more or a
// message would not fit four times. A message that does not fit in the
// ring's free space (the receiver lags) goes over the port instead, prefixed
// with its number, and leaves a hint in the ring: messages are numbered per
// pair, so the receiver takes them in order from whichever way each came.
// Send never waits for the receiver, as with postMessage.
//
// Recv waits synchronously (Atomics.wait on its doorbell) for at most
// syncWait; then, so that the worker's event loop can deliver port messages
// and the page's requests (an idle follower waits here between
// generations), it sets its sleeping word and waits for a port message —
// every sender that sees the word posts one after writing — or recheck.
// Shards of one group in the same thread (the tests' one Go program) never
// wait synchronously: nothing could arrive.

// syncWait is how long Recv blocks the thread before it waits with the
// event loop running: longer than a step's usual waits (a layer's share of
// compute), short enough that an idle follower answers the page promptly.
const syncWait = 5 * time.Millisecond

// recheck bounds a wait with the event loop running, after which Recv
// rechecks the group's words (the page's stop word comes with no message).
const recheck = 100 * time.Millisecond

// minRingWords is the smallest ring, in 4-byte words.
const minRingWords = 1 << 10

// Ring header words (the data follows).
const (
	ringWrite  = 0 // words written, ever (wrapping)
	ringRead   = 1 // words read, ever (wrapping)
	ringHeader = 4
)

// hintLen in a frame's length word: the message of this number went over
// the port.
const hintLen = -1

// ring is one direction of one pair of shards: frames [seq, length,
// values...] in a circular buffer of cap words (a power of two).
type ring struct {
	sab, i32, u8 js.Value
	cap          uint32
	read         uint32 // the receiver's read counter (only the receiver writes it)
}

// mailbox is a portExchange's shared-memory state.
type mailbox struct {
	b       *Binding
	atomics js.Value
	ctrl    js.Value // the control words (Int32Array)
	ctrlSAB js.Value
	self, n int
	sync    bool          // Recv may block the thread in Atomics.wait
	want    uint32        // the ring capacity Reserve asked for, in words
	out     []*ring       // out[j]: the ring to shard j (nil until the first Send)
	in      []*ring       // in[j]: the ring from shard j (nil until its first message)
	sent    []uint32      // sent[j]: the number of the last message to shard j
	got     []uint32      // got[j]: the number of the last message taken from shard j
	buf     [][]float32   // buf[j]: what Recv returned last from shard j's ring
	wake    chan struct{} // a port message arrived
}

// mailboxes are the live mailboxes of this Go program, to find shards of
// one group in the same thread.
var mailboxes struct {
	sync.Mutex
	all []*mailbox
}

// ringSwitch is a ring a peer handed over: from message seq on, its
// messages are in it.
type ringSwitch struct {
	seq  uint32
	ring *ring
}

// parseSharedMemory reads load's (or split's) sharedMemory option: a
// SharedArrayBuffer of at least 4·(1+3n) bytes, the group's control words.
func (b *Binding) parseSharedMemory(v js.Value, count int) (js.Value, error) {
	sab := js.Global().Get("SharedArrayBuffer")
	if typeOf(sab) != js.TypeFunction || typeOf(v) != js.TypeObject || !v.InstanceOf(sab) {
		return js.Undefined(), invalid("sharedMemory", "must be a SharedArrayBuffer, got %s", b.describe(v))
	}
	if need := 4 * (1 + 3*count); v.Get("byteLength").Int() < need {
		return js.Undefined(), invalid("sharedMemory", "must hold %d bytes for %d shards, got %d", need, count, v.Get("byteLength").Int())
	}
	return v, nil
}

// newMailbox attaches shard self of n to the group's control buffer sab.
func (b *Binding) newMailbox(sab js.Value, self, n int, wake chan struct{}) *mailbox {
	g := js.Global()
	m := &mailbox{
		b: b, atomics: g.Get("Atomics"), ctrlSAB: sab, ctrl: g.Get("Int32Array").New(sab, 0, 1+3*n),
		self: self, n: n, sync: true, want: minRingWords,
		out: make([]*ring, n), in: make([]*ring, n),
		sent: make([]uint32, n), got: make([]uint32, n), buf: make([][]float32, n),
		wake: wake,
	}
	mailboxes.Lock()
	for _, o := range mailboxes.all {
		if o.ctrlSAB.Equal(sab) {
			o.sync, m.sync = false, false // peers on this thread: blocking it would starve them
		}
	}
	mailboxes.all = append(mailboxes.all, m)
	mailboxes.Unlock()
	return m
}

func (m *mailbox) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// load, store and the rest are Atomics' on an Int32Array.
func (m *mailbox) load(a js.Value, i int) uint32 {
	return uint32(int32(m.atomics.Call("load", a, i).Int()))
}

func (m *mailbox) store(a js.Value, i int, v uint32) {
	m.atomics.Call("store", a, i, int32(v))
}

// ring returns a new ring of at least words words.
func (m *mailbox) newRing(words int) *ring {
	c := uint32(1) << bits.Len32(uint32(max(words, minRingWords)-1))
	g := js.Global()
	sab := g.Get("SharedArrayBuffer").New(4 * (ringHeader + int(c)))
	return adoptRing(sab)
}

func adoptRing(sab js.Value) *ring {
	g := js.Global()
	n := sab.Get("byteLength").Int()/4 - ringHeader
	return &ring{sab: sab, i32: g.Get("Int32Array").New(sab), u8: g.Get("Uint8Array").New(sab), cap: uint32(n)}
}

// Reserve makes the rings this shard sends through (from the next message
// on) hold four messages of longest values.
func (e *portExchange) Reserve(longest int) {
	if e.mem != nil {
		e.mem.want = max(e.mem.want, uint32(4*(longest+2)))
	}
}

// copyIn writes f into r's data at word position pos (mod cap), wrapping.
func (r *ring) copyIn(pos uint32, f []float32) {
	at := pos % r.cap
	first := min(uint32(len(f)), r.cap-at)
	js.CopyBytesToJS(r.u8.Call("subarray", 4*(ringHeader+at), 4*(ringHeader+at+first)), floatBytes(f[:first]))
	if rest := f[first:]; len(rest) > 0 {
		js.CopyBytesToJS(r.u8.Call("subarray", 4*ringHeader, 4*(ringHeader+len(rest))), floatBytes(rest))
	}
}

// copyOut reads len(f) words from r's data at pos into f.
func (r *ring) copyOut(pos uint32, f []float32) {
	at := pos % r.cap
	first := min(uint32(len(f)), r.cap-at)
	js.CopyBytesToGo(floatBytes(f[:first]), r.u8.Call("subarray", 4*(ringHeader+at), 4*(ringHeader+at+first)))
	if rest := f[first:]; len(rest) > 0 {
		js.CopyBytesToGo(floatBytes(rest), r.u8.Call("subarray", 4*ringHeader, 4*(ringHeader+len(rest))))
	}
}

// word is a frame's header word as a float32 of the same bits.
func word(v uint32) float32 { return math.Float32frombits(v) }

// sendShared is Send with shared memory.
func (e *portExchange) sendShared(to int, head, body []float32) error {
	m := e.mem
	seq := m.sent[to] + 1
	size := len(head) + len(body)
	e.out = append(append(append(e.out[:0], word(seq), word(uint32(int32(size)))), head...), body...)
	r := m.out[to]
	if r == nil || r.cap < uint32(4*len(e.out)) || r.cap < m.want {
		// A new ring, announced over the port before the message it carries.
		nr := m.newRing(max(4*len(e.out), int(m.want)))
		msg := js.Global().Get("Object").New()
		msg.Set("seq", int32(seq))
		msg.Set("ring", nr.sab)
		e.post[to].Invoke(msg)
		if r != nil {
			m.hint(r, seq)
		}
		r, m.out[to] = nr, nr
	}
	w := m.load(r.i32, ringWrite)
	if free := r.cap - (w - m.load(r.i32, ringRead)); uint32(len(e.out)) <= free {
		r.copyIn(w, e.out)
		m.store(r.i32, ringWrite, w+uint32(len(e.out)))
	} else {
		// The receiver lags: this message goes over the port.
		e.out[1] = e.out[0]
		m.postBytes(e, to, e.out[1:])
		m.hint(r, seq)
	}
	m.sent[to] = seq
	m.ring(to)
	if m.load(m.ctrl, 1+2*m.n+to) != 0 {
		e.post[to].Invoke(0) // shard to waits with its event loop running: wake it
	}
	return nil
}

// hint writes [seq, hintLen] into r if it has room: the receiver then
// looks for message seq on the port without waiting.
func (m *mailbox) hint(r *ring, seq uint32) {
	w := m.load(r.i32, ringWrite)
	if r.cap-(w-m.load(r.i32, ringRead)) < 2 {
		return
	}
	r.copyIn(w, []float32{word(seq), word(^uint32(0))}) // [seq, hintLen]
	m.store(r.i32, ringWrite, w+2)
}

// postBytes posts f (a message number and the message) as a Uint8Array.
func (m *mailbox) postBytes(e *portExchange, to int, f []float32) {
	u8 := e.b.uint8Array.New(4 * len(f))
	js.CopyBytesToJS(u8, floatBytes(f))
	e.transfer.SetIndex(0, u8.Get("buffer"))
	e.post[to].Invoke(u8, e.transfer)
}

// ring rings shard to's doorbell.
func (m *mailbox) ring(to int) {
	m.atomics.Call("add", m.ctrl, 1+to, 1)
	m.atomics.Call("notify", m.ctrl, 1+to)
}

// take reads message seq from r into m.buf[from]: the message (ok), or
// onPort when it went over the port, or neither when r has nothing yet.
func (m *mailbox) take(r *ring, from int, seq uint32) (msg []float32, ok, onPort bool) {
	var hdr [2]float32
	for {
		w := m.load(r.i32, ringWrite)
		if w == r.read {
			return nil, false, false
		}
		r.copyOut(r.read, hdr[:])
		s, n := math.Float32bits(hdr[0]), int32(math.Float32bits(hdr[1]))
		if n == hintLen {
			r.read += 2
			m.store(r.i32, ringRead, r.read)
			if int32(s-seq) < 0 {
				continue // a hint for a message already taken from the port
			}
			return nil, false, true
		}
		if s != seq || n < 0 || uint32(n) > r.cap {
			return nil, false, true // seq is on the port (its hint did not fit)
		}
		if cap(m.buf[from]) < int(n) {
			m.buf[from] = make([]float32, n)
		}
		msg = m.buf[from][:n]
		if n > 0 {
			r.copyOut(r.read+2, msg)
		}
		r.read += 2 + uint32(n)
		m.store(r.i32, ringRead, r.read)
		return msg, true, false
	}
}

// errGroupStopped: the page set the control buffer's first word.
var errGroupStopped = errors.New("the page stopped the split model (a worker failed or the model was unloaded)")

// failure is why Recv from shard from cannot wait any longer, or nil.
func (m *mailbox) failure(from int) error {
	if m.load(m.ctrl, 0) != 0 {
		return errGroupStopped
	}
	if m.load(m.ctrl, 1+m.n+from) != 0 {
		return fmt.Errorf("shard %d closed its channels (its worker stopped or loaded another model)", from)
	}
	return nil
}

// recvShared is Recv with shared memory.
func (e *portExchange) recvShared(from int) ([]float32, error) {
	m := e.mem
	seq := m.got[from] + 1
	e.mu.Lock()
	if prev := e.last[from]; prev != nil {
		e.spare[from] = append(e.spare[from], prev)
		e.last[from] = nil
	}
	e.mu.Unlock()
	deadline := time.Now().Add(syncWait)
	asleep := false // this shard's sleeping word is set
	defer func() {
		if asleep {
			m.store(m.ctrl, 1+2*m.n+m.self, 0)
		}
	}()
	for {
		bell := m.load(m.ctrl, 1+m.self)
		onPort := false
		e.mu.Lock()
		if sw := e.switches[from]; len(sw) > 0 && sw[0].seq == seq {
			m.in[from] = sw[0].ring
			e.switches[from] = sw[1:]
		}
		if q := e.queues[from]; len(q) > 0 && len(q[0]) > 0 && math.Float32bits(q[0][0]) == seq {
			msg := q[0]
			q[0] = nil
			e.queues[from] = q[1:]
			e.last[from] = msg
			e.mu.Unlock()
			m.got[from] = seq
			return msg[1:], nil
		}
		closed, gone := e.closed, e.gone[from]
		e.mu.Unlock()
		if r := m.in[from]; r != nil {
			msg, ok, port := m.take(r, from, seq)
			if ok {
				m.got[from] = seq
				return msg, nil
			}
			onPort = port
		}
		if closed != nil {
			return nil, closed
		}
		if gone {
			return nil, fmt.Errorf("shard %d closed its channels (its worker stopped or loaded another model)", from)
		}
		if err := m.failure(from); err != nil {
			return nil, err
		}
		left := time.Until(deadline)
		if !onPort && m.in[from] != nil && m.sync && left > 0 {
			if err := m.b.recovered("Atomics.wait", func() error {
				m.atomics.Call("wait", m.ctrl, 1+m.self, int32(bell), float64(left.Microseconds())/1000)
				return nil
			}); err != nil {
				m.sync = false // this thread may not block (a page's main thread)
			}
			continue
		}
		if !asleep {
			// Set the word, then look once more: a sender either wrote
			// before it and is seen now, or sees it and posts a wake-up.
			m.store(m.ctrl, 1+2*m.n+m.self, 1)
			asleep = true
			continue
		}
		select {
		case <-m.wake:
		case <-time.After(recheck):
		}
	}
}

// close marks shard self closed in the control words and wakes every
// shard that waits synchronously (the others get the port's null).
func (m *mailbox) close() {
	m.store(m.ctrl, 1+m.n+m.self, 1)
	for i := range m.n {
		m.ring(i)
	}
	mailboxes.Lock()
	for i, o := range mailboxes.all {
		if o == m {
			mailboxes.all = append(mailboxes.all[:i], mailboxes.all[i+1:]...)
			break
		}
	}
	mailboxes.Unlock()
	m.signal()
}
