package jsbridge

import (
	"context"
	"fmt"
	"math"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
)

// One model, several conversations: a SharedWorker (web/wasmlm.worker.js)
// serves every tab of an origin that loads the same model, and each tab
// has its own conversation — its own engine.Session, with its own KV cache
// — over the one model, its generations queued in turn with everyone's.
//
//	openSession()    → id: a session of the loaded model (or of the next
//	                   one loaded), for the options' session field of
//	                   generate, stream, chat, embed, rerank, saveState and
//	                   loadState; its KV cache is allocated when a call
//	                   first uses it
//	closeSession(id) → {open, allocated}: the session freed, once the calls
//	                   queued before it are done; closing one that is not
//	                   open does nothing
//	sessions()       → {open, allocated, own}: how many sessions are open,
//	                   how many of them have their KV cache, and whether
//	                   session 0 has its own
//
// Session 0, which every call uses without a session field, is the
// binding's own (current), always open. Sessions are for a whole model: a
// shard of a split model has only its own.

// sessionTable is the sessions openSession opened, by id; a nil session is
// open but not yet made (or dropped, by a reset or a new model).
type sessionTable struct {
	next int // the last id given
	open map[int]*engine.Session
}

// session reads a call's session option: an open session's id, 0 (the
// binding's own) when absent.
func (f fields) session() (int, error) {
	return f.integer("session", 0, 0, maxInt32, ">= 0 (an id from openSession)")
}

// parseOpenSession: openSession().
func (b *Binding) parseOpenSession([]js.Value) (work, error) {
	return func() (any, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.part != nil {
			return nil, invalidCall("a shard of a split model has one session; open sessions on a whole model")
		}
		if b.extra.open == nil {
			b.extra.open = map[int]*engine.Session{}
		}
		b.extra.next++
		b.extra.open[b.extra.next] = nil
		return b.extra.next, nil
	}, nil
}

// parseCloseSession: closeSession(id). It takes its turn, so that a call
// of the session queued before it finishes first.
func (b *Binding) parseCloseSession(args []js.Value) (work, error) {
	v := arg(args, 0)
	if typeOf(v) != js.TypeNumber || v.Float() != math.Trunc(v.Float()) || v.Float() < 1 || v.Float() > maxInt32 {
		return nil, invalid("id", "must be a session id from openSession, got %s", b.describe(v))
	}
	id := v.Int()
	turn := b.queue.join()
	return func() (any, error) {
		defer b.queue.leave(turn)
		b.queue.wait(context.Background(), turn)
		b.mu.Lock()
		s := b.extra.open[id]
		delete(b.extra.open, id)
		b.mu.Unlock()
		if s != nil {
			s.Close()
		}
		return b.sessionCounts(), nil
	}, nil
}

// parseSessions: sessions().
func (b *Binding) parseSessions([]js.Value) (work, error) {
	return func() (any, error) { return b.sessionCounts(), nil }, nil
}

// sessionCounts is {open, allocated} of the opened sessions, and own:
// whether session 0, the binding's own, has been made (its KV cache
// allocated).
func (b *Binding) sessionCounts() map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	allocated := 0
	for _, s := range b.extra.open {
		if s != nil {
			allocated++
		}
	}
	return map[string]any{"open": len(b.extra.open), "allocated": allocated, "own": b.session != nil}
}

// sessionFor returns the loaded model and session id's engine session
// (0: the binding's own, current), making it if no call has needed it yet.
func (b *Binding) sessionFor(id int) (*engine.Model, *engine.Session, error) {
	if id == 0 {
		return b.current()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.model == nil {
		return nil, nil, fmt.Errorf("%w: call load first", ErrNoModel)
	}
	s, ok := b.extra.open[id]
	if !ok {
		return nil, nil, invalid("session", "must be an open session's id, got %d", id)
	}
	if s == nil {
		opts := engine.SessionOptions{ContextLength: b.ctxLen, KVType: b.kvType}
		if b.gpu.device != nil {
			opts.Device = b.gpu.device
		}
		var err error
		if s, err = b.model.NewSession(opts); err != nil {
			return nil, nil, err
		}
		b.extra.open[id] = s
	}
	return b.model, s, nil
}

// dropSessions closes the opened sessions' engine sessions, which stay
// open: their next call makes a new one (of the model then loaded). The
// caller holds b.mu.
func (b *Binding) dropSessions() []*engine.Session {
	var dropped []*engine.Session
	for id, s := range b.extra.open {
		if s != nil {
			dropped = append(dropped, s)
			b.extra.open[id] = nil
		}
	}
	return dropped
}
