package httpapi

import (
	"context"
	"fmt"
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

// TestSchedulerFIFO: one client's requests that wait get the slot in
// arrival order.
func TestSchedulerFIFO(t *testing.T) {
	s := newScheduler(testSessions(t, 1), 16, 16, nil)
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
			s.release(context.Background(), sess)
		}()
		// The next request arrives only once this one waits.
		require.Eventually(t, func() bool { return s.queued() == i+1 }, 10*time.Second, 100*time.Microsecond)
	}
	s.release(context.Background(), held)
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
	s := newScheduler(testSessions(t, 1), 0, 0, nil)
	_, a, err := s.acquire(context.Background())
	require.NoError(t, err)
	_, _, err = s.acquire(context.Background())
	assert.ErrorIs(t, err, ErrQueueFull)
	s.release(context.Background(), a)
	_, b, err := s.acquire(context.Background())
	require.NoError(t, err)
	assert.Same(t, a, b)
}

// TestSchedulerCancel: a waiting request whose context ends leaves the
// queue; when a cancel races a release, the session is never lost. Every
// session is back in the pool at the end, and no client's line is left.
func TestSchedulerCancel(t *testing.T) {
	const slots = 2
	s := newScheduler(testSessions(t, slots), 1000, 1000, nil)
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := context.WithValue(context.Background(), clientKey{}, fmt.Sprint("client ", i%3))
			ctx, cancel := context.WithTimeout(client, time.Duration(i%7)*50*time.Microsecond)
			defer cancel()
			_, sess, err := s.acquire(ctx)
			if err != nil {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				return
			}
			time.Sleep(20 * time.Microsecond)
			s.release(ctx, sess)
		}()
	}
	wg.Wait()
	assert.Zero(t, s.queued())
	assert.Equal(t, slots, s.idle())
	assert.Empty(t, s.slots.clients)
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
func (f *fairPool[T]) idle() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.free)
}

// clientContext is a request context of client.
func clientContext(client string) context.Context {
	return context.WithValue(context.Background(), clientKey{}, client)
}

// TestSchedulerRoundRobin: with one slot held, the requests that arrive
// (a name's first letter is its client) are served round-robin between
// clients, the least recently served first, each client's in arrival
// order; a client that holds the slot is served last. Each request
// releases the slot as soon as it has it, so the order the requests got
// it in is the order they report.
func TestSchedulerRoundRobin(t *testing.T) {
	tests := []struct {
		name   string
		holder string   // the client holding the slot while the others arrive
		arrive []string // in this order, each waiting before the next comes
		want   []string
	}{
		{"a burst, then one of another client", "a", []string{"a1", "a2", "a3", "a4", "b1"}, []string{"b1", "a1", "a2", "a3", "a4"}},
		{"a burst from the holder, one of each other client", "a", []string{"a1", "a2", "b1", "a3", "c1"}, []string{"b1", "c1", "a1", "a2", "a3"}},
		{"three clients' bursts interleave", "x", []string{"a1", "a2", "a3", "b1", "b2", "c1"}, []string{"a1", "b1", "c1", "a2", "b2", "a3"}},
		{"the holder's line comes after a newcomer's", "a", []string{"a1", "b1", "b2", "a2"}, []string{"b1", "a1", "b2", "a2"}},
		{"one client: arrival order", "a", []string{"a1", "a2", "a3"}, []string{"a1", "a2", "a3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScheduler(testSessions(t, 1), 16, 16, nil)
			holder := clientContext(tt.holder)
			_, held, err := s.acquire(holder)
			require.NoError(t, err)
			order := make(chan string, len(tt.arrive))
			var wg sync.WaitGroup
			for i, name := range tt.arrive {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx := clientContext(name[:1])
					_, sess, err := s.acquire(ctx)
					if !assert.NoError(t, err) {
						return
					}
					order <- name
					s.release(ctx, sess)
				}()
				require.Eventually(t, func() bool { return s.queued() == i+1 }, liveness, 100*time.Microsecond)
			}
			s.release(holder, held)
			wg.Wait()
			close(order)
			var got []string
			for name := range order {
				got = append(got, name)
			}
			assert.Equal(t, tt.want, got)
			assert.Empty(t, s.slots.clients, "no line is left")
		})
	}
}

// TestSchedulerClientLimit: admission refuses a client that has slots +
// clientLimit requests in with ErrClientQueueFull, whatever room the queue
// has for others, and the server as a whole at slots + limit with
// ErrQueueFull; a request that leaves makes room for its client again.
func TestSchedulerClientLimit(t *testing.T) {
	s := newScheduler(testSessions(t, 1), 3, 1, nil) // 4 admitted at once, 2 of one client
	steps := []struct {
		leave  bool // leave instead of admit
		client string
		want   error
	}{
		{client: "a"},
		{client: "a"},
		{client: "a", want: ErrClientQueueFull},
		{client: "b"},
		{client: "b"},
		{client: "b", want: ErrClientQueueFull},
		{client: "a", want: ErrClientQueueFull}, // its own bound first
		{client: "c", want: ErrQueueFull},
		{leave: true, client: "a"},
		{client: "c"},
		{client: "a", want: ErrQueueFull},
		{leave: true, client: "c"},
		{client: "a"},
	}
	for i, st := range steps {
		if st.leave {
			s.leave(st.client)
			continue
		}
		err := s.admit(st.client)
		if st.want == nil {
			assert.NoError(t, err, "step %d: %s", i, st.client)
		} else {
			assert.ErrorIs(t, err, st.want, "step %d: %s", i, st.client)
		}
	}
	assert.Equal(t, 4, s.admittedNow())
	for _, c := range []string{"a", "a", "b", "b"} {
		s.leave(c)
	}
	assert.Zero(t, s.admittedNow())
	assert.Empty(t, s.ofClient)
}

// TestSchedulerFairCancelAndClose: a waiting request whose context ends
// leaves its client's line, and the slot goes to the next client's; close
// refuses every request still waiting, in every line, and every request
// after it.
func TestSchedulerFairCancelAndClose(t *testing.T) {
	s := newScheduler(testSessions(t, 1), 16, 16, nil)
	holder := clientContext("a")
	_, held, err := s.acquire(holder)
	require.NoError(t, err)
	type outcome struct {
		name string
		err  error
	}
	results := make(chan outcome, 4)
	wait := func(ctx context.Context, name string) {
		go func() {
			_, sess, err := s.acquire(ctx)
			if err == nil {
				s.release(ctx, sess)
			}
			results <- outcome{name, err}
		}()
	}
	leaving, leave := context.WithCancel(clientContext("b"))
	wait(leaving, "b1")
	require.Eventually(t, func() bool { return s.queued() == 1 }, liveness, 100*time.Microsecond)
	wait(clientContext("c"), "c1")
	require.Eventually(t, func() bool { return s.queued() == 2 }, liveness, 100*time.Microsecond)
	leave()
	assert.Equal(t, outcome{"b1", context.Canceled}, <-results)
	assert.Equal(t, 1, s.queued())

	s.release(holder, held)
	assert.Equal(t, outcome{"c1", nil}, <-results, "the slot goes to the client still waiting")

	_, held, err = s.acquire(holder)
	require.NoError(t, err)
	wait(clientContext("a"), "a1")
	wait(clientContext("d"), "d1")
	require.Eventually(t, func() bool { return s.queued() == 2 }, liveness, 100*time.Microsecond)
	drained := s.close()
	for range 2 {
		o := <-results
		assert.ErrorIs(t, o.err, ErrShuttingDown, o.name)
	}
	assert.Zero(t, s.queued())
	_, _, err = s.acquire(clientContext("e"))
	assert.ErrorIs(t, err, ErrShuttingDown)
	assert.ErrorIs(t, s.admit("e"), ErrShuttingDown)
	s.release(holder, held)
	assert.Equal(t, 1, s.idle())
	assert.Empty(t, s.slots.clients)
	select {
	case <-drained:
	default:
		t.Error("nothing admitted, yet not drained")
	}
}
