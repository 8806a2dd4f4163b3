package shard

import (
	"fmt"
	"sync"
	"time"

	"github.com/wasmlm/wasmlm/engine"
)

// Exchange carries messages between the shards of a model (see Cut): each
// shard's session has one, connected to every other shard's. This package
// builds everything else on these two calls — the gathers of the
// forward pass, the steps shard 0 leads, the checks that the shards match —
// so a host only moves float32 messages: NewLocalExchange over channels,
// jsbridge over MessagePorts between Web Workers.
//
// An Exchange is used by one goroutine at a time (its session's). One that
// also has a method Reserve(longest int) is told, when a session is made,
// the longest message (head and body) the session will send.
type Exchange interface {
	// Send delivers head followed by body, as one message, to shard to.
	// Messages from one shard to another must arrive in the order they were
	// sent. Send must not keep head or body after it returns. An error means
	// the message will never arrive.
	Send(to int, head, body []float32) error
	// Recv returns the next message from shard from, waiting until it
	// arrives. The slice belongs to the Exchange and stays valid until the
	// next Recv from the same shard. When shard from is gone, Recv must fail
	// rather than wait forever: that is how a dead worker becomes an error
	// instead of a hang.
	Recv(from int) ([]float32, error)
}

// The step protocol. Shard 0 leads: it starts every step by sending the
// others a header (what to do: a forward pass for a decode step's token or
// a block of prompt tokens at their positions, a hello, or stop); then
// every shard runs the step's gathers in the same order, each gather
// carrying the parts of all the step's tokens at once. Every message starts
// with the step's sequence number and its kind, as float32 integers (exact
// below 2^24); token ids travel as float32 integers too.
//
// A failure within a step (a message that could not be sent or received)
// does not stop a shard from taking part: it keeps sending and receiving
// every message of the step, sending failure notices in place of data, so
// that every shard finishes the step, the channels stay in step, and the
// leader learns which shard failed and why. The step's result is dropped
// (the leader's generation fails with ErrExchange) and the next step starts
// clean. Only a message that breaks the protocol itself (wrong sequence
// number, kind or length: the shards are no longer in step) is beyond
// repair: the shard that sees it tells every other and the group stays
// broken (every later call fails) until the host connects new sessions.
const (
	kindData   = 1 // head [seq, kind], body: the sender's part of a gather
	kindHeader = 2 // head [seq, kind, op, n, pos, flags], body: the step's n token ids
	kindFailed = 3 // head [seq, kind, code, origin, peer]: sent in place of data after a failure
	kindBroken = 4 // head [seq, kind, origin]: the sender is out of step and stops

	headLen    = 6       // the longest head
	seqModulus = 1 << 24 // sequence numbers wrap here, staying exact in a float32

	opForward = 1 // run the forward pass of the n tokens at pos..pos+n-1
	opHello   = 2 // exchange identities (see hello)
	opStop    = 3 // Follow returns

	flagLogits = 1 // the forward pass computes the logits

	identLen = 9 // a shard's identity in a hello: [index, count, fingerprint (4×16 bits), context, fresh, prompt block]
)

// Failure codes of kindFailed notices.
const (
	failSend     = 1 // origin could not send to peer
	failReceive  = 2 // origin could not receive from peer
	failMismatch = 3 // origin found that the shards do not match
	failStale    = 4 // origin (a follower) was asked to compute before any hello
)

// allShards as a gather's root: every shard receives every part.
const allShards = -1

// group runs the step protocol for one shard's session over its Exchange,
// and is that session's engine.Peers (peers.go).
type group struct {
	ex          Exchange
	plan        *plan
	self, count int
	seq         int              // the current step, mod seqModulus
	head        [headLen]float32 // the head of the message being sent
	err         error            // the current step's first failure
	code        [3]int           // its notice: code, origin, peer
	broken      error            // the group is out of step: every call fails with it
	greeted     bool             // a hello succeeded (leader) or took place (follower) since the session began
	step        struct{ op, n, pos, flags int }
	// block is the most tokens a step computes (the session's prompt
	// block); tokens holds a follower's step's tokens, ids their ids as
	// the leader's header sends them.
	block  int
	tokens []int
	ids    []float32
	// whole[g] holds the whole vectors of gather point g (of up to block
	// tokens; the logits of one), which the shard's own parts are copied
	// into and the others' parts are received into.
	whole      [numGatherPoints][]float32
	embOwn     []float32     // (block, dim): the embedding rows of a step's tokens that this shard holds
	ident      []float32     // (count·identLen) identities gathered by a hello
	identParts []int         // (count+1)
	source     uint64        // the whole model's fingerprint
	context    int           // the session's positions
	waited     time.Duration // time gathers spent receiving (Stats)
	gathers    int           // gathers that received something (Stats)
	mu         sync.Mutex    // held during a step, so that Close waits for the current one
}

// newGroup makes the group of shard p's session, which setBlock then
// sizes for the session's prompt blocks.
func newGroup(ex Exchange, p *Part, context int) *group {
	pl := &p.plan
	g := &group{
		ex: ex, plan: pl, self: pl.index, count: pl.count, source: p.source, context: context,
		ident:      make([]float32, pl.count*identLen),
		identParts: make([]int, pl.count+1),
	}
	for j := range g.identParts {
		g.identParts[j] = j * identLen
	}
	return g
}

// setBlock sizes the group's buffers for steps of up to block tokens, and
// tells the exchange (if it has a method Reserve) the longest message the
// shard sends: a header with block token ids, block tokens' parts of a
// gather, block embedding rows (when the shard holds every token's), one
// token's part of the logits, or an identity.
func (g *group) setBlock(block int) {
	pl := g.plan
	dim := pl.parts[engine.GatherDown][pl.count]
	g.block = block
	g.tokens, g.ids = make([]int, block), make([]float32, block)
	g.embOwn = make([]float32, block*dim)
	longest := max(identLen, block*dim)
	for p, parts := range pl.parts {
		n := block
		if engine.GatherPoint(p) == engine.GatherLogits {
			n = 1
		}
		g.whole[p] = make([]float32, n*parts[pl.count])
		longest = max(longest, n*pl.maxPart(engine.GatherPoint(p)))
	}
	if r, ok := g.ex.(interface{ Reserve(longest int) }); ok {
		r.Reserve(headLen + longest)
	}
}

// fail records the step's first failure and the notice the shard sends in
// place of its data for the rest of the step.
func (g *group) fail(err error, code, origin, peer int) {
	if g.err == nil {
		g.err = err
		g.code = [3]int{code, origin, peer}
	}
}

// breakOff marks the group broken and tells every other shard, so that none
// waits for this one any more.
func (g *group) breakOff(err error) {
	if g.broken != nil {
		return
	}
	g.broken = err
	g.head[0], g.head[1], g.head[2] = float32(g.seq), kindBroken, float32(g.self)
	for j := range g.count {
		if j != g.self {
			_ = g.ex.Send(j, g.head[:3], nil) // best effort: the group is lost either way
		}
	}
}

// outOfStep breaks the group because a message from shard from was not what
// the protocol expects next.
func (g *group) outOfStep(from int, what string) {
	g.breakOff(fmt.Errorf("%w: shard %d got %s from shard %d in step %d: the shards are out of step; connect them again (reload the model)",
		ErrExchange, g.self, what, from, g.seq))
}

// send sends own (this shard's part) to shard to, or the failure notice.
func (g *group) send(to int, own []float32) {
	g.head[0] = float32(g.seq)
	var err error
	if g.err == nil {
		g.head[1] = kindData
		err = g.ex.Send(to, g.head[:2], own)
	} else {
		g.head[1] = kindFailed
		g.head[2], g.head[3], g.head[4] = float32(g.code[0]), float32(g.code[1]), float32(g.code[2])
		err = g.ex.Send(to, g.head[:5], nil)
	}
	if err != nil {
		g.fail(fmt.Errorf("%w: shard %d could not send to shard %d: %w", ErrExchange, g.self, to, err), failSend, g.self, to)
	}
}

// receive reads shard from's part of a gather, of want values: it returns
// them (valid until the next receive from that shard), or nil when the
// step has failed (a notice came instead) or the group broke.
func (g *group) receive(from, want int) []float32 {
	m, err := g.ex.Recv(from)
	if err != nil {
		g.fail(fmt.Errorf("%w: shard %d could not receive from shard %d: %w", ErrExchange, g.self, from, err), failReceive, g.self, from)
		return nil
	}
	if len(m) >= 3 && m[1] == kindBroken {
		g.breakOff(leftError(m[2]))
		return nil
	}
	if len(m) < 2 || m[0] != float32(g.seq) {
		g.outOfStep(from, "a message of another step")
		return nil
	}
	switch {
	case m[1] == kindData && len(m)-2 == want:
		if g.err == nil {
			return m[2:]
		}
	case m[1] == kindFailed && len(m) == 5:
		g.fail(noticeError(m[2:5]), int(m[2]), int(m[3]), int(m[4]))
	default:
		g.outOfStep(from, fmt.Sprintf("a message of kind %v and length %d where %d values were due", m[1], len(m), want))
	}
	return nil
}

// leftError says that shard origin broke off (a kindBroken notice).
func leftError(origin float32) error {
	return fmt.Errorf("%w: shard %v left the group (it fell out of step or lost its connection); connect the shards again (reload the model)", ErrExchange, origin)
}

// noticeError describes a failure another shard reported.
func noticeError(n []float32) error {
	origin, peer := int(n[1]), int(n[2])
	switch int(n[0]) {
	case failSend:
		return fmt.Errorf("%w: shard %d could not send to shard %d", ErrExchange, origin, peer)
	case failReceive:
		return fmt.Errorf("%w: shard %d could not receive from shard %d", ErrExchange, origin, peer)
	case failMismatch:
		return fmt.Errorf("%w: shard %d found that the shards do not match", ErrMismatch, origin)
	case failStale:
		return fmt.Errorf("%w: shard %d was restarted and has not been greeted: its KV cache is empty", ErrExchange, origin)
	}
	return fmt.Errorf("%w: shard %d failed", ErrExchange, origin)
}

// gather assembles in dst the whole vectors of n tokens, one after another,
// from the shards' parts: shard j's part of token i is dst[i·w+parts[j] :
// i·w+parts[j+1]] (w = parts[count]), this shard's are already in place,
// and own holds them one after another, as the message sends them. With
// root = allShards every shard receives every part; otherwise only shard
// root does. Empty parts are not sent. Failures are recorded for endStep.
func (g *group) gather(own, dst []float32, parts []int, n, root int) {
	if g.broken != nil {
		return
	}
	g.sendOwn(own, root)
	if root != allShards && root != g.self {
		return
	}
	width := parts[g.count]
	start, received := time.Now(), false
	for j := range g.count {
		lo, hi := parts[j], parts[j+1]
		if j == g.self || lo == hi {
			continue
		}
		m := g.receive(j, n*(hi-lo))
		if g.broken != nil {
			return
		}
		received = true
		if m == nil {
			continue
		}
		for i := range n {
			copy(dst[i*width+lo:i*width+hi], m[i*(hi-lo):])
		}
	}
	g.counted(start, received)
}

// sendOwn sends own, this shard's part of a gather, to every other shard
// (root = allShards) or to root; an empty part is not sent.
func (g *group) sendOwn(own []float32, root int) {
	if len(own) == 0 {
		return
	}
	for j := range g.count {
		if j != g.self && (root == allShards || root == j) {
			g.send(j, own)
		}
	}
}

// counted adds a gather that began receiving at start to Stats, if it
// received something.
func (g *group) counted(start time.Time, received bool) {
	if received {
		g.waited += time.Since(start)
		g.gathers++
	}
}

// startStep (the leader) begins a step: it sends every follower the header
// and the step's token ids.
func (g *group) startStep(op int, tokens []int, pos, flags int) {
	if g.broken != nil {
		return
	}
	g.seq = (g.seq + 1) % seqModulus
	g.err = nil
	n := len(tokens)
	g.step.op, g.step.n, g.step.pos, g.step.flags = op, n, pos, flags
	g.head = [headLen]float32{float32(g.seq), kindHeader, float32(op), float32(n), float32(pos), float32(flags)}
	for i, t := range tokens {
		g.ids[i] = float32(t)
	}
	for j := 1; j < g.count; j++ {
		if err := g.ex.Send(j, g.head[:], g.ids[:n]); err != nil {
			g.fail(fmt.Errorf("%w: shard 0 could not send to shard %d: %w", ErrExchange, j, err), failSend, 0, j)
		}
	}
}

// awaitHeader (a follower) waits for the leader's next header and begins
// that step. An error here means the follower cannot go on: the group is
// broken.
func (g *group) awaitHeader() error {
	if g.broken != nil {
		return g.broken
	}
	m, err := g.ex.Recv(0)
	if err != nil {
		g.breakOff(fmt.Errorf("%w: shard %d could not receive from shard 0: %w", ErrExchange, g.self, err))
		return g.broken
	}
	if len(m) >= 3 && m[1] == kindBroken {
		g.breakOff(leftError(m[2]))
		return g.broken
	}
	var v [5]int // seq, op, n, pos, flags
	ok := len(m) >= headLen && m[1] == kindHeader
	for i, at := range [5]int{0, 2, 3, 4, 5} {
		if !ok {
			break
		}
		v[i], ok = exactInt(m[at])
	}
	// The token ids: as many as the header says, at most a block.
	n := v[2]
	ok = ok && n <= g.block && len(m) == headLen+n
	for i := range n {
		if !ok {
			break
		}
		g.tokens[i], ok = exactInt(m[headLen+i])
	}
	if !ok {
		g.outOfStep(0, "a message that is not a step header")
		return g.broken
	}
	g.seq, g.err = v[0], nil
	g.step.op, g.step.n, g.step.pos, g.step.flags = v[1], n, v[3], v[4]
	return nil
}

// exactInt is v as an int when v is a whole number in [0, 2^24).
func exactInt(v float32) (int, bool) {
	if !(v >= 0 && v < seqModulus) || v != float32(int(v)) {
		return 0, false
	}
	return int(v), true
}

// endStep is the outcome of the step: nil, its first failure, or why the
// group is broken.
func (g *group) endStep() error {
	if g.broken != nil {
		return g.broken
	}
	return g.err
}
