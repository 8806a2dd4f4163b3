package jsbridge

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
)

// A model split across workers (engine.Model.Shard): the page loads the
// whole model into worker 0, which becomes shard 0 and leads (split), cuts
// every other shard's file (shard), and hands each to its worker (load with
// peers), which then follows (follow). Each pair of workers talks over a
// MessageChannel the page made (peers).

// parseSplit: split(count, peers) turns the loaded whole model into shard 0
// of count, connected to the other shards through peers.
func (b *Binding) parseSplit(args []js.Value) (work, error) {
	countArg := arg(args, 0)
	if countArg.Type() != js.TypeNumber || countArg.Float() != float64(int(countArg.Float())) || countArg.Int() < 2 || countArg.Int() > 1<<10 {
		return nil, invalid("count must be an integer in 2..1024, got %s", b.describe(countArg))
	}
	count := countArg.Int()
	ports, err := b.parsePeers(arg(args, 1), 0, count)
	if err != nil {
		return nil, err
	}
	turn := b.queue.join()
	return func() (any, error) {
		defer b.queue.leave(turn)
		b.queue.wait(context.Background(), turn)
		m, ctxLen, err := b.currentModel()
		if err != nil {
			return nil, err
		}
		if _, n := m.Shards(); n > 1 {
			return nil, invalid("the model is already split (shard 0 of %d)", n)
		}
		shard, err := m.Shard(0, count)
		if err != nil {
			return nil, err
		}
		// The session (and its KV cache) is made by the first generation,
		// after the other shards' files have been cut, so that WebAssembly
		// memory grows for the larger of the two, not for both.
		b.install(shard, ctxLen, b.newPortExchange(0, ports), b.sourceBytes())
		return infoValue(shard, ctxLen)
	}, nil
}

// parseShard: shard(index, count) → a Uint8Array holding a GGUF file of
// shard index of count of the loaded whole model (engine.ShardGGUF).
func (b *Binding) parseShard(args []js.Value) (work, error) {
	var v [2]int
	for i, name := range []string{"index", "count"} {
		a := arg(args, i)
		if a.Type() != js.TypeNumber || a.Float() != float64(int(a.Float())) || a.Int() < 0 || a.Int() > 1<<10 {
			return nil, invalid("%s must be an integer in 0..1024, got %s", name, b.describe(a))
		}
		v[i] = a.Int()
	}
	return func() (any, error) {
		src := b.sourceBytes()
		if src == nil {
			return nil, invalid("only a GGUF model loaded whole can be cut into shards")
		}
		out, err := engine.ShardGGUF(src, v[0], v[1])
		if err != nil {
			return nil, err
		}
		u8 := b.uint8Array.New(len(out))
		js.CopyBytesToJS(u8, out)
		// The shard's bytes are garbage now, and WebAssembly memory never
		// shrinks: collect them before the next shard is cut, so that
		// cutting n shards needs room for one, not n.
		out = nil
		runtime.GC()
		return u8, nil
	}, nil
}

// parseFollow: follow() serves shard 0 until the group stops (it resolves)
// or breaks (it rejects with why).
func (b *Binding) parseFollow([]js.Value) (work, error) {
	return func() (any, error) {
		_, s, err := b.current()
		if err != nil {
			return nil, err
		}
		return nil, s.Follow()
	}, nil
}

// connect listens on the channels peers (load's peers option) for a shard
// loaded from a shard file.
func (b *Binding) connect(m *engine.Model, peersArg js.Value) (*portExchange, error) {
	index, count := m.Shards()
	if count < 2 {
		return nil, invalid("peers is for shards of a split model; this model is whole")
	}
	ports, err := b.parsePeers(peersArg, index, count)
	if err != nil {
		return nil, err
	}
	return b.newPortExchange(index, ports), nil
}

// errReplaced closes the exchange of a model that another replaces.
var errReplaced = errors.New("wasmlm: the model was replaced")

// install makes m (with its session's context length, the exchange of a
// shard, and the bytes of a whole GGUF model, for shard) the binding's, with
// no session yet, closing the previous exchange.
func (b *Binding) install(m *engine.Model, ctxLen int, ex *portExchange, source []byte) {
	b.mu.Lock()
	old := b.exchange
	b.model, b.session, b.ctxLen, b.exchange, b.source = m, nil, ctxLen, ex, source
	b.mu.Unlock()
	if old != nil && old != ex {
		old.close(fmt.Errorf("%w: %w", engine.ErrExchange, errReplaced))
	}
}

// sourceBytes are the bytes of the loaded whole GGUF model, or nil.
func (b *Binding) sourceBytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.source
}
