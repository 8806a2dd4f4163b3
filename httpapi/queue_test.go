package httpapi

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

func testSessions(t *testing.T, n int) []*engine.Session {
	t.Helper()
	m := loadDefault(t)
	out := make([]*engine.Session, n)
	for i := range out {
		s, err := m.NewSession(engine.SessionOptions{ContextLength: 8})
		require.NoError(t, err)
		out[i] = s
	}
	return out
}

// TestSchedulerFIFO: requests that wait get the slot in arrival order.
func TestSchedulerFIFO(t *testing.T) {
	s := newScheduler(testSessions(t, 1), 16, nil)
	_, held, err := s.acquire(context.Background())
	require.NoError(t, err)

	const n = 10
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, sess, err := s.acquire(context.Background())
			if !assert.NoError(t, err) {
				return
			}
			order <- i
			s.release(sess)
		}()
		// The next request arrives only once this one waits.
		require.Eventually(t, func() bool { return s.queued() == i+1 }, 10*time.Second, 100*time.Microsecond)
	}
	s.release(held)
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		assert.Equal(t, want, got)
		want++
	}
	assert.Equal(t, n, want)
}

// TestSchedulerLimit: beyond limit waiting requests, acquire fails at once;
// with limit 0 it fails whenever every slot is busy.
func TestSchedulerLimit(t *testing.T) {
	s := newScheduler(testSessions(t, 1), 0, nil)
	_, a, err := s.acquire(context.Background())
	require.NoError(t, err)
	_, _, err = s.acquire(context.Background())
	assert.ErrorIs(t, err, ErrQueueFull)
	s.release(a)
	_, b, err := s.acquire(context.Background())
	require.NoError(t, err)
	assert.Same(t, a, b)
}

// TestSchedulerCancel: a waiting request whose context ends leaves the
// queue; when a cancel races a release, the session is never lost. Every
// session is back in the pool at the end.
func TestSchedulerCancel(t *testing.T) {
	const slots = 2
	s := newScheduler(testSessions(t, slots), 1000, nil)
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*50*time.Microsecond)
			defer cancel()
			_, sess, err := s.acquire(ctx)
			if err != nil {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				return
			}
			time.Sleep(20 * time.Microsecond)
			s.release(sess)
		}()
	}
	wg.Wait()
	assert.Zero(t, s.queued())
	assert.Equal(t, slots, s.idle())
}

// admittedNow is the number of admitted requests (for tests).
func (s *scheduler) admittedNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitted
}

// idle is the number of free sessions (for tests).
func (s *scheduler) idle() int { return s.slots.idle() }

// idle is the number of free items (for tests).
func (f *fifo[T]) idle() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.free)
}
