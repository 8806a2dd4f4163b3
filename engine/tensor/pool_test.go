package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/race"
)

// TestThreadsGiveTheSameBits: products split among 2 to 7 threads give the
// bits of one thread, for every type, matrix–vector and batched, on shapes
// whose rows do not divide evenly among the threads or into tiles; and
// splitting allocates nothing.
func TestThreadsGiveTheSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	for _, typ := range []Type{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, MXFP4} {
		for _, shape := range []struct{ rows, cols int }{{1000 + 3, 256}, {257, 1024}, {4096 + 9, 512}} {
			t.Run(fmt.Sprintf("%v/%dx%d", typ, shape.rows, shape.cols), func(t *testing.T) {
				m := randomMatrix(t, rng, typ, shape.rows, shape.cols)
				for _, n := range []int{1, 2, 5} {
					x := randNormal(rng, n*shape.cols, 1)
					one := NewWorkspace(shape.cols)
					want := make([]float32, n*shape.rows)
					MatMul(want, m, x, n, one)
					for _, threads := range []int{2, 3, 7} {
						ws := NewWorkspace(shape.cols)
						ws.SetThreads(threads)
						got := make([]float32, n*shape.rows)
						MatMul(got, m, x, n, ws)
						requireSameBits(t, want, got, "n=%d, %d threads", n, threads)
						if !race.Enabled { // the race detector allocates
							// Three runs: the pool's goroutines may allocate once in a while when a
							// slow host (QEMU) has not parked them yet; the average of three is the
							// steady state, as a decode step sees it.
							allocs := testing.AllocsPerRun(3, func() { MatMul(got, m, x, n, ws) })
							require.Zero(t, allocs, "n=%d, %d threads", n, threads)
						}
					}
				}
			})
		}
	}
}

// TestThreadsShareThePool: sessions' workspaces running products at the
// same time, each split among threads, share the pool's goroutines and
// still give one thread's bits.
func TestThreadsShareThePool(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 3))
	m := randomMatrix(t, rng, Q4_K, 2048, 1024)
	x := randNormal(rng, 1024, 1)
	want := make([]float32, m.Rows)
	MatVec(want, m, x, NewWorkspace(1024))
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for g := range errs {
		wg.Go(func() {
			ws := NewWorkspace(1024)
			ws.SetThreads(2 + g%3)
			got := make([]float32, m.Rows)
			for range 20 {
				MatVec(got, m, x, ws)
				for r := range got {
					if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
						errs[g] = fmt.Errorf("goroutine %d row %d: %v, one thread %v", g, r, got[r], want[r])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

// TestSmallProductsStayOnOneThread: a product too small to be worth
// splitting (fewer than minRowsWork multiply-adds a part) is not split.
func TestSmallProductsStayOnOneThread(t *testing.T) {
	ws := NewWorkspace(288)
	ws.SetThreads(8)
	require.Equal(t, 1, ws.parts(32, 288))
	require.Equal(t, 8, ws.parts(32000, 288))
	require.Equal(t, 2, ws.parts(16, 1<<16))
	require.Equal(t, 1, ws.parts(7, 1<<20), "fewer rows than a group of eight")
	require.Equal(t, 8, ws.Threads())
}
