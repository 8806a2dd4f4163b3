package tensor

// Batched products: the same matrix times several vectors (a block of
// prompt tokens), each weight row read from memory once per block rather
// than once per token. The rows are taken a tile at a time, a tile small
// enough to stay in the core's caches while every vector of the block is
// multiplied with it; each output element is still one row's dot product
// with one encoded vector, by the same kernel in the same order as MatVec,
// so the results are bit for bit those of n MatVec calls.

// tileBytes is how many bytes of weights a tile of rows holds: well inside
// a core's L2 cache (512 KiB on the build machine's EPYC, 256 KiB to 2 MiB
// on current CPUs) with room for the block's activations and outputs, and
// large enough that the SIMD kernels' per-call cost is spread over many
// rows. BenchmarkMatMulTile measures the choice.
const tileBytes = 64 << 10

// MatMul sets out[t·Rows + r] = Σ_c m[r,c]·x[t·Cols + c] for every token t
// of the n in x and every row r: n products with the same matrix. out must
// hold n·Rows elements and x n·Cols. The results are exactly those of n
// MatVec calls; ws grows to hold n encoded vectors the first time (see
// Workspace.Reserve), then it allocates nothing.
func MatMul(out []float32, m *Matrix, x []float32, n int, ws *Workspace) {
	MatMuls(x[:n*m.Cols], n, ws, Product{out, m})
}

// MatMuls computes several batched products of the same n vectors (x holds
// them one after the other, each of the matrices' column count), encoding
// each vector once per activation type; each Out holds n·M.Rows elements,
// token after token. The results are exactly those of MatVecs per token.
func MatMuls(x []float32, n int, ws *Workspace, products ...Product) {
	if n <= 0 || len(products) == 0 {
		return
	}
	cols := len(x) / n
	if ws == nil {
		ws = NewWorkspace(cols)
	}
	ws.Reserve(n)
	var acts []activation
	var encoded Type
	for i, p := range products {
		m := p.M
		if i == 0 || m.tr.vec != encoded {
			acts, encoded = ws.encodeBatch(m.tr.vec, x, n, cols), m.tr.vec
		}
		matMul(p.Out[:n*m.Rows], m, acts, ws)
	}
}

// matMul computes the batched product of m with the encoded vectors acts
// (ws's batch), a tile of rows at a time: with the SIMD kernels where there
// are some for the type, else with the type's batched pure-Go kernel
// (traits.dotRows) if it has one, else row by row and token by token with
// its dot kernel.
func matMul(out []float32, m *Matrix, acts []activation, ws *Workspace) {
	job := &ws.job
	job.out, job.m, job.acts, job.ws, job.run = out, m, acts, ws, matMulRows
	job.tile = max(8, tileBytes/m.rowBytes&^7) // whole groups of eight rows, as the native kernels take them (four, the SIMD128 ones)
	// The encodings go into dotRows' lanes at the first tile that needs
	// them (none, where the SIMD kernels take every tile); before the
	// threads start, when the product is split.
	job.packed = m.tr.pack == nil
	if n := ws.parts(m.Rows, m.Cols*len(acts)); n > 1 {
		if m.tr.dotRows != nil && len(acts) >= minDotRows && !job.packed && !hasRows8(m.Type) {
			for i := range acts {
				m.tr.pack(&acts[i])
			}
			job.packed = true
		}
		splitRows(job, m.Rows, n, job.tile)
	} else {
		matMulRows(job, 0, m.Rows)
	}
	job.out, job.m, job.acts, job.ws = nil, nil, nil, nil
}

// matMulRows computes rows [lo, hi) of job's batched product, a tile at a
// time (lo a multiple of job.tile).
func matMulRows(job *rowsJob, lo, hi int) {
	m, acts, out, ws := job.m, job.acts, job.out, job.ws
	rb := m.rowBytes
	dotRows := m.tr.dotRows
	if len(acts) < minDotRows {
		dotRows = nil
	}
	for r0 := lo; r0 < hi; r0 += job.tile {
		r1 := min(r0+job.tile, hi)
		rows := Matrix{Type: m.Type, Rows: r1 - r0, Cols: m.Cols, Data: m.Data[r0*rb : r1*rb], rowBytes: rb, tr: m.tr, packed: m.packed, rows8: m.rows8, scales: m.scales}
		o := out[r0:]
		if matMulSIMD(o, m.Rows, &rows, acts, ws) { // never split: SIMD builds run one thread
			continue
		}
		if dotRows != nil && !hasRows8(m.Type) { // the native kernels take the vectors one by one
			if !job.packed {
				for i := range acts {
					m.tr.pack(&acts[i])
				}
				job.packed = true
			}
			for r := range rows.Rows {
				dotRows(o[r:], m.Rows, rows.Data[r*rb:(r+1)*rb], acts)
			}
			continue
		}
		for t := range acts { // the native kernels where the type has one, else dot
			rowDots(o[t*m.Rows:t*m.Rows+rows.Rows], &rows, 0, rows.Rows, &acts[t])
		}
	}
}

// minDotRows is the fewest vectors MatMul gives a type's batched kernel
// (traits.dotRows); a single vector takes MatVec's way, the dot kernel.
const minDotRows = 2

// Reserve makes room in ws for n encoded vectors of up to its column count,
// allocating only when it has less. The vectors' encodings are in common
// arrays, vector t's at t times the stride of its first, so that a
// batched SIMD kernel finds them all from one pointer.
func (ws *Workspace) Reserve(n int) {
	if n <= len(ws.batch) {
		return
	}
	cols := len(ws.rounded) // maxCols in whole Q8_K blocks
	rounded, q := make([]float32, n*cols), make([]int8, n*cols)
	d, s, sum := make([]float32, n*cols/qk8), make([]float32, n*cols/qk8), make([]int32, n*cols/qk8)
	bsums := make([]int16, n*cols/16)
	ws.batch = make([]Workspace, n)
	for t := range ws.batch {
		ws.batch[t] = Workspace{
			maxCols: ws.maxCols,
			rounded: part(rounded, t, cols),
			act: activation{
				q: part(q, t, cols), d: part(d, t, cols/qk8), s: part(s, t, cols/qk8),
				sum: part(sum, t, cols/qk8), bsums: part(bsums, t, cols/16),
				// packed quants for the batched pure-Go kernels (traits.pack)
				p: make([][8]uint64, cols/32), p3: make([][11]uint64, cols/32),
			},
		}
	}
	ws.acts = make([]activation, n)
	ws.simd.reserve(n)
}

// part is x's t-th part of size elements, with no room to grow into the next.
func part[T any](x []T, t, size int) []T {
	return x[t*size : (t+1)*size : (t+1)*size]
}

// encodeBatch encodes the n vectors of x (cols each) as vec, each in its own
// workspace of the batch, and returns their encodings.
func (ws *Workspace) encodeBatch(vec Type, x []float32, n, cols int) []activation {
	if cols > ws.maxCols {
		*ws = *NewWorkspace(cols)
		ws.Reserve(n)
	}
	ws.encoding = encodeTask{ws: ws, vec: vec, x: x, cols: cols}
	minItems := n // one part, unless there is enough to share
	if n*cols >= minRowsWork {
		minItems = 4
	}
	ws.Split(n, 1, minItems, &ws.encoding)
	ws.encoding.x = nil
	return ws.acts[:n]
}

// encodeTask encodes a batch's vectors, each into its own workspace of
// the batch: parts of a batch run on several threads (Workspace.Split).
type encodeTask struct {
	ws   *Workspace
	vec  Type
	x    []float32
	cols int
}

func (e *encodeTask) Run(_, lo, hi int) {
	for t := lo; t < hi; t++ {
		e.ws.acts[t] = *e.ws.batch[t].encode(e.vec, e.x[t*e.cols:(t+1)*e.cols])
	}
}
