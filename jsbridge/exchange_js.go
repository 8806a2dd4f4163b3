package jsbridge

import (
	"fmt"
	"sync"
	"syscall/js"
	"unsafe"

	"github.com/wasmlm/wasmlm/engine/shard"
)

// portExchange is a shard.Exchange over MessagePorts: ports[j] is this
// worker's end of a MessageChannel to the worker holding shard j (the page
// makes one channel per pair of workers and transfers the ends). A message is
// a Uint8Array of little-endian float32 values.
//
// Recv blocks its goroutine on a Go channel; the Go runtime then returns to
// the worker's event loop, which delivers the port's message events to
// onMessage, which queues the message and wakes Recv. No SharedArrayBuffer:
// every value crosses by postMessage — unless the exchange has shared
// memory (mem, mailbox_js.go), which then carries the messages.
type portExchange struct {
	b     *Binding
	self  int
	ports []js.Value // ports[j]: the channel to shard j; undefined at self
	post  []js.Value // post[j]: ports[j].postMessage bound to the port
	fns   []js.Func  // their message handlers
	out   []float32  // the message being sent: head and body together
	// outJS holds a Uint8Array for each length of short message sent so
	// far (a step has a handful: header, parts, notices): postMessage copies
	// it, so it can be filled again for the next message of that length.
	outJS map[int]js.Value
	// transfer is a one-element array, the transfer list of a long message.
	transfer js.Value

	mu     sync.Mutex
	most   []int           // most[j]: the longest message from j, the size of new buffers for j
	queues [][][]float32   // queues[j]: messages from j not yet received
	spare  [][][]float32   // spare[j]: spent buffers for j's next messages
	last   [][]float32     // last[j]: what Recv returned last from j, spent at the next Recv
	wake   []chan struct{} // wake[j]: a message from j arrived (or the exchange closed)
	gone   []bool          // gone[j]: shard j closed its end (Recv fails once its queue is empty)
	closed error           // set by close: every call fails with it

	mem      *mailbox       // the shared memory the messages go through, or nil (postMessage)
	switches [][]ringSwitch // switches[j]: rings shard j handed over, not yet in use
}

var _ shard.Exchange = (*portExchange)(nil)

// newPortExchange listens on ports (shard self's channels to every other
// shard, as parsed by parsePeers), with the group's control words in shared
// (a SharedArrayBuffer, parseSharedMemory's) or not (undefined).
func (b *Binding) newPortExchange(self int, ports []js.Value, shared js.Value) *portExchange {
	n := len(ports)
	e := &portExchange{
		b: b, self: self, ports: ports,
		post:     make([]js.Value, n),
		fns:      make([]js.Func, n),
		outJS:    map[int]js.Value{},
		transfer: b.array.New(1),
		most:     make([]int, n),
		queues:   make([][][]float32, n),
		spare:    make([][][]float32, n),
		last:     make([][]float32, n),
		wake:     make([]chan struct{}, n),
		gone:     make([]bool, n),
	}
	if !shared.IsUndefined() {
		e.mem = b.newMailbox(shared, self, n, make(chan struct{}, 1))
		e.switches = make([][]ringSwitch, n)
	}
	for j, p := range ports {
		e.wake[j] = make(chan struct{}, 1)
		if j == self {
			continue
		}
		e.fns[j] = b.funcOf(func(_ js.Value, args []js.Value) any {
			e.onMessage(j, arg(args, 0))
			return nil
		})
		p.Set("onmessage", e.fns[j]) // setting onmessage also starts the port
		e.post[j] = b.get(p, "postMessage").Call("bind", p)
	}
	return e
}

// floatBytes views f's memory as bytes, for copying to and from JavaScript.
func floatBytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// onMessage queues a message from shard from. null says that shard closed
// its end (see close). Anything else but a Uint8Array of whole float32s is
// queued as an empty message, which the engine rejects as out of step: the
// group then fails with an error instead of waiting.
func (e *portExchange) onMessage(from int, event js.Value) {
	var data js.Value
	if event.Type() == js.TypeObject {
		data = event.Get("data")
	}
	if data.IsNull() {
		e.mu.Lock()
		e.gone[from] = true
		e.mu.Unlock()
		e.signal(from)
		return
	}
	if e.mem != nil && data.Type() == js.TypeNumber {
		e.signal(from) // a wake-up: the message is in shared memory
		return
	}
	if e.mem != nil && data.Type() == js.TypeObject && !data.InstanceOf(e.b.uint8Array) && typeOf(data.Get("ring")) == js.TypeObject {
		r := adoptRing(data.Get("ring"))
		e.mu.Lock()
		e.switches[from] = append(e.switches[from], ringSwitch{uint32(int32(data.Get("seq").Int())), r})
		e.mu.Unlock()
		e.signal(from)
		return
	}
	n := 0
	if data.Type() == js.TypeObject && data.InstanceOf(e.b.uint8Array) && data.Length()%4 == 0 {
		n = data.Length() / 4
	}
	e.mu.Lock()
	var buf []float32
	if s := e.spare[from]; len(s) > 0 {
		buf, e.spare[from] = s[len(s)-1], s[:len(s)-1]
	}
	if cap(buf) < n {
		e.most[from] = max(e.most[from], n)
		buf = make([]float32, e.most[from])
	}
	buf = buf[:n]
	e.mu.Unlock()
	if n > 0 {
		js.CopyBytesToGo(floatBytes(buf), data)
	}
	e.mu.Lock()
	e.queues[from] = append(e.queues[from], buf)
	e.mu.Unlock()
	e.signal(from)
}

// signal wakes a Recv from shard from.
func (e *portExchange) signal(from int) {
	select {
	case e.wake[from] <- struct{}{}:
	default:
	}
	if e.mem != nil {
		e.mem.signal()
	}
}

// Send posts head and body to shard to as one Uint8Array.
func (e *portExchange) Send(to int, head, body []float32) (err error) {
	if to < 0 || to >= len(e.ports) || to == e.self {
		return fmt.Errorf("shard %d has no channel to shard %d", e.self, to)
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed != nil {
		return closed
	}
	e.out = append(append(e.out[:0], head...), body...)
	defer func() {
		if r := recover(); r != nil {
			err = e.b.panicError("postMessage", r)
		}
	}()
	if e.mem != nil {
		return e.sendShared(to, head, body)
	}
	n := 4 * len(e.out)
	if n >= transferBytes {
		// Measured in Chromium: cloning a 64 KiB array costs several times
		// more than handing over its buffer; below a few KiB, cloning a
		// reused array is cheaper than a new buffer per message.
		u8 := e.b.uint8Array.New(n)
		js.CopyBytesToJS(u8, floatBytes(e.out))
		e.transfer.SetIndex(0, u8.Get("buffer"))
		e.post[to].Invoke(u8, e.transfer)
		return nil
	}
	u8, ok := e.outJS[n]
	if !ok {
		u8 = e.b.uint8Array.New(n)
		if len(e.outJS) < maxCachedLengths {
			e.outJS[n] = u8
		}
	}
	js.CopyBytesToJS(u8, floatBytes(e.out))
	e.post[to].Invoke(u8)
	return nil
}

// Messages of transferBytes or more move their buffer (postMessage's
// transfer list) instead of being copied.
const transferBytes = 8 << 10

// maxCachedLengths bounds portExchange.outJS: a step sends messages of a
// handful of lengths, so more would mean something unusual, not a reason to
// hold more JavaScript memory.
const maxCachedLengths = 32

// Recv waits for the next message from shard from.
func (e *portExchange) Recv(from int) ([]float32, error) {
	if from < 0 || from >= len(e.ports) || from == e.self {
		return nil, fmt.Errorf("shard %d has no channel to shard %d", e.self, from)
	}
	if e.mem != nil {
		return e.recvShared(from)
	}
	e.mu.Lock()
	if prev := e.last[from]; prev != nil {
		e.spare[from] = append(e.spare[from], prev)
		e.last[from] = nil
	}
	for {
		if q := e.queues[from]; len(q) > 0 {
			m := q[0]
			q[0] = nil
			e.queues[from] = q[1:]
			e.last[from] = m
			e.mu.Unlock()
			return m, nil
		}
		if e.closed != nil {
			err := e.closed
			e.mu.Unlock()
			return nil, err
		}
		if e.gone[from] {
			e.mu.Unlock()
			return nil, fmt.Errorf("shard %d closed its channels (its worker stopped or loaded another model)", from)
		}
		e.mu.Unlock()
		<-e.wake[from]
		e.mu.Lock()
	}
}

// close tells the other shards (a null message), stops listening, closes
// the ports and fails every call from now on (a Recv waiting included).
func (e *portExchange) close(why error) {
	e.mu.Lock()
	if e.closed != nil {
		e.mu.Unlock()
		return
	}
	e.closed = why
	e.mu.Unlock()
	if e.mem != nil {
		e.mem.close()
	}
	for j, p := range e.ports {
		if j == e.self {
			continue
		}
		_ = e.b.recovered("closing a port", func() error {
			p.Call("postMessage", js.Null())
			p.Set("onmessage", js.Null())
			p.Call("close")
			return nil
		})
		e.b.release(e.fns[j])
		select {
		case e.wake[j] <- struct{}{}:
		default:
		}
	}
}

// parsePeers reads the peers argument: an array with a MessagePort (or any
// object that can postMessage) for every shard but self, whose entry is null
// or undefined.
func (b *Binding) parsePeers(v js.Value, self, count int) ([]js.Value, error) {
	n, err := b.arrayLen(v, "peers", 1<<10, false)
	if err != nil {
		return nil, err
	}
	if n != count {
		return nil, invalid("peers", "must have one entry per shard (%d), got %d", count, n)
	}
	ports := make([]js.Value, n)
	for j := range ports {
		p := b.get(v, j)
		if j == self {
			if !isNullish(p) {
				return nil, invalid(fmt.Sprintf("peers[%d]", j), "is this worker's own shard: it must be null, got %s", b.describe(p))
			}
			ports[j] = js.Undefined()
			continue
		}
		if typeOf(p) != js.TypeObject || typeOf(b.get(p, "postMessage")) != js.TypeFunction {
			return nil, invalid(fmt.Sprintf("peers[%d]", j), "must be a MessagePort, got %s", b.describe(p))
		}
		ports[j] = p
	}
	return ports, nil
}
