package engine

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// TestSessionsRunConcurrently: sessions of one model, made and used from
// several goroutines at once (as a server's slots are), each with threads
// of its own, generate what one session alone does. The first sessions pack
// the shared weights where SIMD kernels run, once, while the others wait.
// Run under the race detector, it is what checks that sessions share only
// what they only read.
func TestSessionsRunConcurrently(t *testing.T) {
	shape := tinyShape
	shape.Dim, shape.HiddenDim = 256, 512 // whole K-quant blocks
	for _, typ := range []tensor.Type{tensor.F32, tensor.Q8_0, tensor.Q4_K} {
		t.Run(typ.String(), func(t *testing.T) {
			sp := specOf("llama", shape, 3, 0.1)
			sp.Type, sp.SeparateOutput = typ, true
			data := testmodel.GGUF(t, sp)
			// Each model its own bytes: packing reorders them in place.
			alone, err := Load(slices.Clone(data), LoadOptions{})
			require.NoError(t, err)
			prompt := []int{1, 5, 42}
			opts := GenerateOptions{MaxTokens: 12}
			want, err := newSession(t, alone).GenerateTokens(context.Background(), prompt, opts, nil)
			require.NoError(t, err)

			m, err := Load(slices.Clone(data), LoadOptions{})
			require.NoError(t, err)
			const sessions = 3
			got := make([][]int, sessions)
			errs := make([]error, sessions)
			var wg sync.WaitGroup
			for i := range sessions {
				wg.Go(func() {
					s, err := m.NewSession(SessionOptions{Threads: 2})
					if err != nil {
						errs[i] = err
						return
					}
					for range 2 { // a second generation reuses the cached prompt
						res, err := s.GenerateTokens(context.Background(), prompt, opts, nil)
						got[i], errs[i] = res.Tokens, err
						if err != nil {
							return
						}
					}
				})
			}
			wg.Wait()
			for i := range sessions {
				require.NoError(t, errs[i], "session %d", i)
				assert.Equal(t, want.Tokens, got[i], "session %d", i)
			}
		})
	}
}

// TestCancelFromAnotherGoroutine: a generation whose context another
// goroutine cancels (a client that leaves) stops before its next token with
// FinishAbort, and its session generates as before.
func TestCancelFromAnotherGoroutine(t *testing.T) {
	m := loadStories260K(t)
	s, err := m.NewSession(SessionOptions{Threads: 2})
	require.NoError(t, err)
	want, err := s.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 20}, nil)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	first, cancelled := make(chan struct{}), make(chan struct{})
	go func() {
		<-first
		cancel()
		close(cancelled)
	}()
	n := 0
	res, err := s.Generate(ctx, onceUpon, GenerateOptions{MaxTokens: 100}, func(Token) error {
		if n++; n == 1 {
			close(first)
			<-cancelled // the cancel has happened before the next token
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, FinishAbort, res.FinishReason)
	assert.Len(t, res.Tokens, 1)

	again, err := s.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 20}, nil)
	require.NoError(t, err)
	assert.Equal(t, want.Tokens, again.Tokens)
}
