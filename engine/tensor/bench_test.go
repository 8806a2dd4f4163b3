package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchRows, benchCols: the shape of the benchmarks' matrices, a
// feed-forward projection of a small model.
const benchRows, benchCols = 2048, 768

// benchMatrix is a benchRows×benchCols matrix of random weights of type typ.
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
	return m
}

// BenchmarkMatVec times MatVec on a benchRows×benchCols matrix for every
// type, reporting GFLOP/s (2·rows·cols per product) and allocations (which
// must be zero).
func BenchmarkMatVec(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 11))
	x := randNormal(rng, benchCols, 1)
	for _, typ := range kernelTypes {
		b.Run(typ.String(), func(b *testing.B) {
			m := benchMatrix(b, rng, typ)
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
