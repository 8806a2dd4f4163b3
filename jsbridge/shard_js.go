package jsbridge

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/shard"
	"github.com/wasmlm/wasmlm/policy"
)

// A model split across workers (engine/shard): the page loads the whole
// model into one worker, which cuts every shard's file (shard), and hands
// each to its worker (load with peers); shard 0 leads and the others follow
// (follow). A host that does not mind worker 0 keeping the whole file
// turns its model into shard 0 (split) instead. Each pair of workers talks
// over a MessageChannel the page made (peers).

// parseSplit: split(count, peers, sharedMemory) turns the loaded whole
// model into shard 0 of count, connected to the other shards through peers
// (and sharedMemory, a SharedArrayBuffer of the group's control words, when
// not undefined: mailbox_js.go).
func (b *Binding) parseSplit(args []js.Value) (work, error) {
	countArg := arg(args, 0)
	if typeOf(countArg) != js.TypeNumber || countArg.Float() != float64(int(countArg.Float())) || countArg.Int() < 2 || countArg.Int() > 1<<10 {
		return nil, invalid("count", "must be an integer in 2..1024, got %s", b.describe(countArg))
	}
	count := countArg.Int()
	ports, err := b.parsePeers(arg(args, 1), 0, count)
	if err != nil {
		return nil, err
	}
	shared := js.Undefined()
	if v := arg(args, 2); !isNullish(v) {
		if shared, err = b.parseSharedMemory(v, count); err != nil {
			return nil, err
		}
	}
	turn := b.queue.join()
	return func() (any, error) {
		defer b.queue.leave(turn)
		b.queue.wait(context.Background(), turn)
		m, ctxLen, err := b.currentModel()
		if err != nil {
			return nil, err
		}
		if _, isPart := m.Part(); isPart {
			return nil, invalidCall("the model is already a shard of a split model")
		}
		part, err := shard.Cut(m, 0, count)
		if err != nil {
			return nil, err
		}
		// The session (and its KV cache) is made by the first generation,
		// after the other shards' files have been cut, so that WebAssembly
		// memory grows for the larger of the two, not for both.
		b.install(part.Model, part, ctxLen, b.newPortExchange(0, ports, shared), b.sourceBytes())
		place := splitPlacement(count)
		b.setDevice(place, nil, nil)
		return infoValue(part.Model, part, ctxLen, b.sessionKVType(), place)
	}, nil
}

// parseShard: shard(index, count) → a Uint8Array holding a GGUF file of
// shard index of count of the loaded whole model (shard.File).
func (b *Binding) parseShard(args []js.Value) (work, error) {
	var v [2]int
	for i, name := range []string{"index", "count"} {
		a := arg(args, i)
		if typeOf(a) != js.TypeNumber || a.Float() != float64(int(a.Float())) || a.Int() < 0 || a.Int() > 1<<10 {
			return nil, invalid(name, "must be an integer in 0..1024, got %s", b.describe(a))
		}
		v[i] = a.Int()
	}
	return func() (any, error) {
		src := b.sourceBytes()
		if src == nil {
			return nil, invalidCall("only a GGUF model loaded whole can be cut into shards")
		}
		// A model's first generation packs its weights in place (see
		// engine.Model.WeightsPacked): the bytes are no longer the file's.
		if m, _, err := b.currentModel(); err == nil && m.WeightsPacked() {
			return nil, invalidCall("the model's weights were reordered by its first generation: cut shards before generating")
		}
		out, err := shard.File(src, v[0], v[1])
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
		s, err := b.currentShard()
		if err != nil {
			return nil, err
		}
		return nil, s.Follow()
	}, nil
}

// connect listens on the channels peers (load's peers option) for a shard
// loaded from a shard file, through the shared memory of sharedArg (load's
// sharedMemory option) unless it is undefined.
func (b *Binding) connect(p *shard.Part, peersArg, sharedArg js.Value) (*portExchange, error) {
	ports, err := b.parsePeers(peersArg, p.Index, p.Count)
	if err != nil {
		return nil, err
	}
	shared := js.Undefined()
	if !isNullish(sharedArg) {
		if shared, err = b.parseSharedMemory(sharedArg, p.Count); err != nil {
			return nil, err
		}
	}
	return b.newPortExchange(p.Index, ports, shared), nil
}

// errReplaced closes the exchange of a model that another replaces.
var errReplaced = errors.New("wasmlm: the model was replaced")

// install makes m (the model of part, for a shard of a split model, with
// its session's context length, the exchange of a shard, and the bytes of a
// whole GGUF model, for shard) the binding's, with no session yet, closing
// the previous exchange.
func (b *Binding) install(m *engine.Model, part *shard.Part, ctxLen int, ex *portExchange, source []byte) {
	b.mu.Lock()
	old, oldSession := b.exchange, b.session
	b.model, b.part, b.session, b.shardSes, b.ctxLen, b.exchange, b.source = m, part, nil, nil, ctxLen, ex, source
	b.grammars = policy.NewGrammars(m)
	dropped := b.dropSessions()
	b.mu.Unlock()
	if oldSession != nil {
		oldSession.Close() // its buffers on a GPU, if it had one
	}
	for _, s := range dropped {
		s.Close()
	}
	if old != nil && old != ex {
		old.close(fmt.Errorf("%w: %w", shard.ErrExchange, errReplaced))
	}
}

// sourceBytes are the bytes of the loaded whole GGUF model, or nil.
func (b *Binding) sourceBytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.source
}
