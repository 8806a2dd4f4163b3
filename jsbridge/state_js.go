package jsbridge

import (
	"bytes"
	"context"
	"encoding/hex"
	"syscall/js"
)

// saveState() → Uint8Array, loadState(state) → {tokens} and identity() →
// string: the page's
// session saved and restored as bytes (engine.Session.SaveState and
// LoadState: its tokens, the KV cache's used slots, the recurrent state,
// the last logits), so that a page can keep a conversation across a
// reload (web/wasmlm.js keeps them in OPFS) and continue it with the
// tokens the uninterrupted session would give, evaluating nothing again.
// Both take their turn as generations do. A state of another model, KV
// type or a context too small rejects with invalid_argument (the engine's
// ErrStateMismatch), as does a corrupt one (ErrStateFormat: the session
// is then reset); a session on the GPU rejects (ErrStateUnsupported).

// parseIdentity: identity() → the loaded model's engine.Model.Identity as
// 64 hex digits, which every saved state carries (at bytes 8..40): the
// page lists the sessions of this model by it. It does not wait its turn.
func (b *Binding) parseIdentity([]js.Value) (work, error) {
	return func() (any, error) {
		m, _, err := b.currentModel()
		if err != nil {
			return nil, err
		}
		id := m.Identity()
		return hex.EncodeToString(id[:]), nil
	}, nil
}

// parseSaveState: saveState({session}).
func (b *Binding) parseSaveState(args []js.Value) (work, error) {
	id, err := b.stateSession(arg(args, 0))
	if err != nil {
		return nil, err
	}
	turn := b.queue.join()
	return func() (any, error) {
		defer b.queue.leave(turn)
		b.queue.wait(context.Background(), turn)
		_, s, err := b.sessionFor(id)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := s.SaveState(&buf); err != nil {
			return nil, err
		}
		u8 := b.uint8Array.New(buf.Len())
		js.CopyBytesToJS(u8, buf.Bytes())
		return u8, nil
	}, nil
}

// parseLoadState: loadState(state, {session}), state a Uint8Array or an
// ArrayBuffer.
func (b *Binding) parseLoadState(args []js.Value) (work, error) {
	state, err := b.bytes(arg(args, 0), "state")
	if err != nil {
		return nil, err
	}
	id, err := b.stateSession(arg(args, 1))
	if err != nil {
		return nil, err
	}
	turn := b.queue.join()
	return func() (any, error) {
		defer b.queue.leave(turn)
		b.queue.wait(context.Background(), turn)
		_, s, err := b.sessionFor(id)
		if err != nil {
			return nil, err
		}
		if err := s.LoadState(bytes.NewReader(state)); err != nil {
			return nil, err
		}
		return map[string]any{"tokens": s.CachedTokens()}, nil
	}, nil
}

// stateSession reads saveState's and loadState's options, {session}: the
// session saved or restored (sessions_js.go; 0, the binding's own, when
// absent).
func (b *Binding) stateSession(v js.Value) (int, error) {
	f, err := b.readFields(v, "options", []string{"session"})
	if err != nil {
		return 0, err
	}
	return f.session()
}
