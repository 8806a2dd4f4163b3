package jsbridge

import (
	"fmt"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMailboxOrder: messages between two exchanges with shared memory
// arrive whole and in order however they travel — in the ring (wrapping
// around its end: the first 40), in a bigger ring that replaces it (Reserve, or a message
// too long for four to fit), or over the port when the ring is full because
// the receiver has not read — and each way both directions at once.
func TestMailboxOrder(t *testing.T) {
	b := New()
	t.Cleanup(b.Release)
	ports := peerPorts(2)
	memory := js.Global().Get("SharedArrayBuffer").New(4 * (1 + 3*2))
	ex := []*portExchange{
		b.newPortExchange(0, []js.Value{js.Undefined(), ports[0][1].(js.Value)}, memory),
		b.newPortExchange(1, []js.Value{ports[1][0].(js.Value), js.Undefined()}, memory),
	}
	t.Cleanup(func() {
		for _, e := range ex {
			e.close(fmt.Errorf("the test ended"))
		}
	})
	message := func(k, n int) []float32 {
		m := make([]float32, n)
		for i := range m {
			m[i] = float32(k*100000 + i)
		}
		return m
	}
	// First one message at a time each way, 40 of 300 words: the ring (of
	// 2048 words) wraps around several times.
	for k := range 40 {
		m := message(k, 300)
		for _, to := range []int{0, 1} {
			require.NoError(t, ex[1-to].Send(to, m[:2], m[2:]))
			got, err := ex[to].Recv(1 - to)
			require.NoError(t, err)
			require.Equal(t, m, got, "message %d to %d", k, to)
		}
	}
	// Lengths, in words: a few short ones, 250 messages of 300 words that fill
	// a 1024-word ring many times over unread, one of 5000 (a new ring), then
	// after Reserve(40000) a short one (a new ring again), and a long one.
	var lengths []int
	lengths = append(lengths, 0, 1, 6, 700)
	for range 250 {
		lengths = append(lengths, 300)
	}
	lengths = append(lengths, 5000)
	rounds := [][]int{lengths, {3, 40000, 7}}
	for round, ls := range rounds {
		if round == 1 {
			ex[0].Reserve(40000)
			ex[1].Reserve(40000)
		}
		for k, n := range ls {
			m := message(k, n)
			require.NoError(t, ex[0].Send(1, m[:min(2, n)], m[min(2, n):]))
			require.NoError(t, ex[1].Send(0, m[:min(2, n)], m[min(2, n):]))
		}
		for k, n := range ls {
			for _, to := range []int{0, 1} {
				got, err := ex[to].Recv(1 - to)
				require.NoError(t, err, "round %d, message %d to %d", round, k, to)
				require.Equal(t, message(k, n), append([]float32{}, got...), "round %d, message %d (%d words) to %d", round, k, n, to)
			}
		}
	}
	assert.GreaterOrEqual(t, ex[0].mem.out[1].cap, uint32(4*40000), "Reserve grew the ring")
	ex[1].close(fmt.Errorf("closed by the test"))
	_, err := ex[0].Recv(1)
	assert.ErrorContains(t, err, "shard 1 closed its channels")
}
