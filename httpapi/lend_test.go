package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// oneSession lends one session, as the page's worker does: a mutex is its
// turn, and the context it returns counts the engine's Err checks.
type oneSession struct {
	s        *engine.Session
	turn     sync.Mutex
	borrows  atomic.Int64
	returns  atomic.Int64
	errCalls atomic.Int64
}

func (l *oneSession) Borrow(ctx context.Context) (context.Context, *engine.Session, error) {
	l.turn.Lock()
	l.borrows.Add(1)
	return &countingContext{Context: ctx, n: &l.errCalls}, l.s, nil
}

func (l *oneSession) Return(s *engine.Session) {
	l.returns.Add(1)
	l.turn.Unlock()
}

type countingContext struct {
	context.Context
	n *atomic.Int64
}

func (c *countingContext) Err() error {
	c.n.Add(1)
	return c.Context.Err()
}

// TestSessionLender: with Options.Sessions, a request runs on the lent
// session (no session of the handler's own), in the context Borrow
// returned, and gives the session back; the answer is the one a handler
// with its own session gives; a request waits while the host holds the
// session; and a lender lends one session, so Slots above 1 is refused.
func TestSessionLender(t *testing.T) {
	m := loadDefault(t)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	l := &oneSession{s: s}
	h, err := New(m, Options{ModelName: models.DefaultName, Sessions: l})
	require.NoError(t, err)
	require.EqualValues(t, 1, l.borrows.Load(), "New borrows once, to learn the session")
	own := newHandler(t, Options{})

	const body = `{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":24,"temperature":0}`
	textOf := func(h http.Handler) string {
		w := do(h, "POST", "/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var resp struct {
			Choices []struct{ Message struct{ Content string } }
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
		return resp.Choices[0].Message.Content
	}
	want := textOf(own)
	require.Equal(t, want, textOf(h))
	assert.EqualValues(t, 2, l.borrows.Load())
	assert.EqualValues(t, 2, l.returns.Load())
	assert.Greater(t, l.errCalls.Load(), int64(24), "the engine asks the lent context between tokens")

	var models struct {
		Data []modelObject `json:"data"`
	}
	require.NoError(t, json.Unmarshal(do(h, "GET", "/v1/models", "").Body.Bytes(), &models))
	assert.Equal(t, s.ContextLength(), models.Data[0].Meta.ContextLength)

	// The host holds the session: the request waits for it.
	l.turn.Lock()
	done := make(chan string)
	go func() { done <- textOf(h) }()
	select {
	case <-done:
		t.Fatal("the request ran while the host held the session")
	case <-time.After(100 * time.Millisecond):
	}
	l.turn.Unlock()
	assert.Equal(t, want, <-done)

	_, err = New(m, Options{Sessions: l, Slots: 2})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}
