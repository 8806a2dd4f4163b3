package tensor

import (
	"sync"
)

// Matrix products split their output rows among threads: a Workspace whose
// thread count (SetThreads) is above one hands parts of each product's rows
// to the goroutines of one process-wide pool and computes the first part
// itself. Every row is still computed by the same kernel, from the same
// encoded input, in the same order within the row, so the results are the
// same bits whatever the thread count. The pool's goroutines start once
// (as many as the largest thread count asked for, less one) and live for
// the process: workspaces of any number of sessions share them, so several
// sessions running at once queue their parts rather than multiply the
// goroutines. Dispatching a product allocates nothing.

// minRowsWork is the fewest multiply-adds (rows × columns) a part of a
// product is given: below it, a thread's wake-up costs more than it saves
// (a 288-wide row of stories15M is 288).
const minRowsWork = 1 << 16

// rowAlign is the granularity of the parts' row ranges: whole groups of
// eight rows, as the native kernels take them (and packed matrices, in
// groups of four, and the four-row SIMD128 kernels).
const rowAlign = 8

// rowsJob is one product split among threads: the kernel's inputs and a
// WaitGroup counting the parts not yet done. A Workspace owns one, reused
// by every product it runs.
type rowsJob struct {
	wg     sync.WaitGroup
	out    []float32
	m      *Matrix
	a      *activation  // MatVec's encoded input
	acts   []activation // MatMul's
	tile   int          // MatMul's rows per tile
	packed bool         // MatMul: acts are in the batched kernel's lanes
	ws     *Workspace   // MatMul's scratch (the SIMD kernels')
	task   Task         // Workspace.Split's
	per    int          // the parts' length (splitRows): part p starts at p·per
	run    func(*rowsJob, int, int)
}

// Task is work that Workspace.Split divides among threads: Run does the
// items [lo, hi), as part number part of the split (0 on the calling
// goroutine). Parts run at once, so they must not share what they write.
type Task interface {
	Run(part, lo, hi int)
}

// Split runs t over the items [0, n) in up to ws's thread count parts of
// consecutive items (at least minItems each, whole multiples of align
// apart from the last) and returns when every part is done; one thread, or
// too few items, run it on the calling goroutine as Run(0, 0, n). It
// allocates nothing (a pointer to a struct is a Task without allocating).
// ws's own products must not run inside t.
func (ws *Workspace) Split(n, align, minItems int, t Task) {
	parts := min(ws.Threads(), max(1, n/max(minItems, 1)))
	if parts <= 1 {
		t.Run(0, 0, n)
		return
	}
	job := &ws.job
	job.task, job.run = t, runTask
	splitRows(job, n, parts, max(align, 1))
	job.task = nil
}

// runTask is a Split job's run.
func runTask(job *rowsJob, lo, hi int) { job.task.Run(lo/job.per, lo, hi) }

// rowsPart is rows [lo, hi) of a job, as the pool's queue carries it.
type rowsPart struct {
	job    *rowsJob
	lo, hi int
}

// rowsPool is the process-wide pool: a queue of parts and the goroutines
// that take them.
var rowsPool struct {
	mu      sync.Mutex
	workers int
	queue   chan rowsPart
}

// startWorkers makes sure the pool has at least n goroutines.
func startWorkers(n int) {
	rowsPool.mu.Lock()
	defer rowsPool.mu.Unlock()
	if rowsPool.queue == nil {
		rowsPool.queue = make(chan rowsPart, 256)
	}
	for ; rowsPool.workers < n; rowsPool.workers++ {
		go func(q chan rowsPart) {
			for p := range q {
				p.job.run(p.job, p.lo, p.hi)
				p.job.wg.Done()
			}
		}(rowsPool.queue)
	}
}

// SetThreads sets how many threads ws's products split their rows among:
// n ≤ 1 computes them on the calling goroutine alone. It starts the
// process's pool goroutines the first time n needs them.
func (ws *Workspace) SetThreads(n int) {
	ws.threads = max(n, 1)
	if ws.threads > 1 {
		startWorkers(ws.threads - 1)
	}
}

// Threads is the thread count SetThreads set (1 by default).
func (ws *Workspace) Threads() int { return max(ws.threads, 1) }

// parts is how many parts a product of rows rows of cols columns splits
// into: at most ws's thread count, each of at least minRowsWork
// multiply-adds and rowAlign rows.
func (ws *Workspace) parts(rows, cols int) int {
	n := ws.Threads()
	if n <= 1 {
		return 1
	}
	n = min(n, max(1, rows*cols/minRowsWork), max(1, rows/rowAlign))
	return n
}

// splitRows runs job over rows [0, rows) in up to n parts, the first on
// the calling goroutine, and returns when every part is done. Part
// boundaries are multiples of align.
func splitRows(job *rowsJob, rows, n, align int) {
	per := (rows + n - 1) / n
	per = (per + align - 1) / align * align
	job.per = per
	others := 0
	for lo := per; lo < rows; lo += per {
		others++
	}
	job.wg.Add(others)
	for lo := per; lo < rows; lo += per {
		rowsPool.queue <- rowsPart{job: job, lo: lo, hi: min(lo+per, rows)}
	}
	job.run(job, 0, min(per, rows))
	job.wg.Wait()
}
