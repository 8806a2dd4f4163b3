package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// benchRows, benchCols: the shape of the benchmarks' matrices, a
// feed-forward projection of a small model.
const benchRows, benchCols = 2048, 768

// benchMatrix is a benchRows×benchCols matrix of random weights of type typ,
// packed (Pack) where a SIMD kernel reads it so, as a model's weights are.
func benchMatrix(b *testing.B, rng *rand.Rand, typ Type) *Matrix {
	rb, err := RowBytes(typ, benchCols)
	if err != nil {
		b.Fatal(err)
	}
	data := alignedBytes(benchRows * rb)
	w := randNormal(rng, benchCols, 0.05)
	for r := range benchRows {
		if err := Quantize(typ, data[r*rb:(r+1)*rb], w); err != nil {
			b.Fatal(err)
		}
		w = append(w[1:], w[0]) // a different row each time, cheaply
	}
	m, err := NewMatrix(typ, benchRows, benchCols, data)
	if err != nil {
		b.Fatal(err)
	}
	Pack(m) // as a model's weights are, where a SIMD kernel reads them packed
	return m
}

// BenchmarkMatVec times MatVec on a benchRows×benchCols matrix for every
// type, reporting GFLOP/s (2·rows·cols per product) and allocations (which
// must be zero). Natively, on a CPU with the interleaved kernels' fast form
// (AVX-512 VNNI, arm64's dot product), they also run their other form
// (/avx2, /neon).
func BenchmarkMatVec(b *testing.B) {
	f16Table() // built once, at its first use: not inside a timed loop
	rng := rand.New(rand.NewPCG(11, 11))
	x := randNormal(rng, benchCols, 1)
	for _, typ := range kernelTypes {
		m := benchMatrix(b, rng, typ)
		run := func(name string) {
			b.Run(name, func(b *testing.B) {
				out := make([]float32, benchRows)
				ws := NewWorkspace(benchCols)
				b.ReportAllocs()
				b.SetBytes(int64(len(m.Data)))
				b.ResetTimer()
				for b.Loop() {
					MatVec(out, m, x, ws)
				}
				b.ReportMetric(2*benchRows*benchCols*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		run(typ.String())
		if nativeFast && m.rows8 {
			nativeFast = false
			run(typ.String() + "/" + slowForm)
			nativeFast = true
		}
	}
}

// BenchmarkMatMul times MatMul on the same matrices with blocks of 2 to 32
// vectors (prompt blocks), reporting GFLOP/s (2·rows·cols per vector):
// against BenchmarkMatVec, the gain of taking the vectors together.
func BenchmarkMatMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 11))
	for _, typ := range kernelTypes {
		b.Run(typ.String(), func(b *testing.B) {
			m := benchMatrix(b, rng, typ)
			for _, n := range []int{2, 4, 8, 32} {
				b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
					x := randNormal(rng, n*benchCols, 1)
					out := make([]float32, n*benchRows)
					ws := NewWorkspace(benchCols)
					MatMul(out, m, x, n, ws)
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						MatMul(out, m, x, n, ws)
					}
					b.ReportMetric(2*benchRows*benchCols*float64(n*b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		})
	}
}

// BenchmarkMatMulDown times a batched product of 32 vectors (a prompt
// block) with a 2048×5632 matrix (TinyLlama's feed-forward down
// projection) for every type, against the 32 MatVec calls it replaces,
// reporting GFLOP/s:
//
//	go test ./engine/tensor/ -run '^$' -bench MatMulDown -benchtime 1x
func BenchmarkMatMulDown(b *testing.B) {
	const rows, cols, n = 2048, 5632, 32
	rng := rand.New(rand.NewPCG(12, 12))
	x := randNormal(rng, n*cols, 1)
	for _, typ := range kernelTypes {
		rb, err := RowBytes(typ, cols)
		if err != nil {
			b.Fatal(err)
		}
		// 61 distinct quantized rows repeated: quantizing every row of
		// the K-quants would take longer than the benchmark.
		const distinct = 61
		data := alignedBytes(rows * rb)
		w := randNormal(rng, cols, 0.05)
		for r := range distinct {
			if err := Quantize(typ, data[r*rb:(r+1)*rb], w); err != nil {
				b.Fatal(err)
			}
			w = append(w[1:], w[0])
		}
		for r := distinct; r < rows; r++ {
			copy(data[r*rb:(r+1)*rb], data[(r%distinct)*rb:])
		}
		m, err := NewMatrix(typ, rows, cols, data)
		if err != nil {
			b.Fatal(err)
		}
		out := make([]float32, n*rows)
		ws := NewWorkspace(cols)
		ws.Reserve(n)
		run := func(name string, product func()) {
			b.Run(typ.String()+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					product()
				}
				b.ReportMetric(2*n*rows*cols*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		run("32MatVec", func() {
			for t := range n {
				MatVec(out[t*rows:(t+1)*rows], m, x[t*cols:(t+1)*cols], ws)
			}
		})
		run("MatMul32", func() { MatMul(out, m, x, n, ws) })
	}
}

// BenchmarkAttentionRows times the two products of attention for one query
// head of TinyLlama-1.1B's shape (head size 64, four key/value heads: rows
// 256 values apart) over 1024 cached positions, reporting GFLOP/s
// (2·positions·headDim per product), and the decoding of those positions'
// F16 keys (of all four heads), which attention over an F16 cache adds,
// reporting values per second.
func BenchmarkAttentionRows(b *testing.B) {
	const positions, headDim, stride = 1024, 64, 256
	rng := rand.New(rand.NewPCG(12, 12))
	rows := randNormal(rng, positions*stride, 1)
	x := randNormal(rng, headDim, 1)
	scores := make([]float32, positions)
	out := make([]float32, headDim)
	a := randNormal(rng, positions, 0.03)
	run := func(name string, f func()) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f()
			}
			b.ReportMetric(2*positions*headDim*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	run("scores", func() { DotF32Rows(scores, x, rows, stride) })
	run("values", func() { AddScaledRows(out, a, rows, stride) })
	halves := make([]uint16, len(rows))
	EncodeF16(halves, rows)
	b.Run("decodeF16", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			DecodeF16Rows(rows, halves, len(rows), len(rows))
		}
		b.ReportMetric(float64(len(rows))*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gvalues/s")
	})
}

// BenchmarkMatVecStreamed times MatVec on a matrix far larger than the
// caches (2048 columns, at least 32768 rows and 96 MB), packed as a model's weights are: the
// memory-bound product of decoding. Natively, on a CPU with the fast form,
// the interleaved types also run their other form (see BenchmarkMatVec).
// BenchmarkReadBandwidth is the bound: one core reading memory.
func BenchmarkMatVecStreamed(b *testing.B) {
	const cols, distinct, minBytes = 2048, 61, 96 << 20 // three times this machine's 32 MB L3 cache, at least
	rng := rand.New(rand.NewPCG(11, 11))
	x := randNormal(rng, cols, 1)
	for _, typ := range kernelTypes {
		if !packable(typ) && typ != F32 {
			continue
		}
		rb, err := RowBytes(typ, cols)
		if err != nil {
			b.Fatal(err)
		}
		rows := max(32768, (minBytes/rb+7)&^7)
		data := alignedBytes(rows * rb)
		w := randNormal(rng, cols, 0.05)
		for r := range distinct { // then repeated: quantizing 32768 rows would take long
			if err := Quantize(typ, data[r*rb:(r+1)*rb], w); err != nil {
				b.Fatal(err)
			}
			w = append(w[1:], w[0])
		}
		for r := distinct; r < rows; r++ {
			copy(data[r*rb:(r+1)*rb], data[(r%distinct)*rb:])
		}
		m, err := NewMatrix(typ, rows, cols, data)
		if err != nil {
			b.Fatal(err)
		}
		Pack(m)
		out, ws := make([]float32, rows), NewWorkspace(cols)
		run := func(name string) {
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(m.Data)))
				b.ReportAllocs()
				for b.Loop() {
					MatVec(out, m, x, ws)
				}
			})
		}
		run(typ.String())
		if nativeFast && m.rows8 {
			nativeFast = false
			run(typ.String() + "/" + slowForm)
			nativeFast = true
		}
	}
}

// BenchmarkReadBandwidth reads 128 MB with eight independent 64-bit sums:
// about what one core can stream from memory.
func BenchmarkReadBandwidth(b *testing.B) {
	data := alignedBytes(128 << 20)
	for i := range data {
		data[i] = byte(i)
	}
	u := unsafe.Slice((*uint64)(unsafe.Pointer(&data[0])), len(data)/8)
	b.SetBytes(int64(len(data)))
	var s uint64
	for b.Loop() {
		var a [8]uint64
		for i := 0; i+8 <= len(u); i += 8 {
			a[0] += u[i]
			a[1] += u[i+1]
			a[2] += u[i+2]
			a[3] += u[i+3]
			a[4] += u[i+4]
			a[5] += u[i+5]
			a[6] += u[i+6]
			a[7] += u[i+7]
		}
		s += a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7]
	}
	sink = s
}

// sink keeps a benchmark's result alive.
var sink uint64
