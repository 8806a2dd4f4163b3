package jsbridge

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holds reports whether t holds the turn, without blocking.
func holds(t *ticket) bool {
	select {
	case <-t.ready:
		return true
	default:
		return false
	}
}

func TestTurnQueuePassesTurnsInJoinOrder(t *testing.T) {
	var q turnQueue
	a, b, c := q.join(), q.join(), q.join()
	assert.True(t, holds(a))
	assert.False(t, holds(b))
	assert.False(t, holds(c))
	q.leave(a)
	assert.True(t, holds(b))
	assert.False(t, holds(c))
	q.leave(a) // twice: nothing happens
	assert.True(t, holds(b))
	assert.False(t, holds(c))
	q.leave(b)
	assert.True(t, holds(c))
	q.leave(c)
	assert.Zero(t, q.length())
	d := q.join()
	assert.True(t, holds(d), "a free turn goes to the next to join")
}

func TestTurnQueueWaiterLeaves(t *testing.T) {
	var q turnQueue
	a, b, c := q.join(), q.join(), q.join()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.False(t, q.wait(ctx, b), "a done context ends the wait")
	q.leave(b)
	assert.Equal(t, 2, q.length())
	q.leave(a)
	assert.True(t, holds(c), "the turn skips the ticket that left")
	assert.True(t, q.wait(context.Background(), c))
	assert.False(t, q.wait(ctx, c), "a done context wins even when the turn is there")
}

// TestTurnQueueOrderIsJoinOrderNotGoroutineOrder: goroutines that start in
// any order run in the order their tickets joined.
func TestTurnQueueOrderIsJoinOrderNotGoroutineOrder(t *testing.T) {
	var q turnQueue
	const n = 50
	tickets := make([]*ticket, n)
	for i := range tickets {
		tickets[i] = q.join()
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := n - 1; i >= 0; i-- { // start them in reverse
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer q.leave(tickets[i])
			require.True(t, q.wait(context.Background(), tickets[i]))
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
		}()
	}
	wg.Wait()
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, order)
	assert.Zero(t, q.length())
}
