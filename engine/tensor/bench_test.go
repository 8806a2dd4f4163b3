package tensor

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMatVec times MatVec on a 2048×768 matrix of random weights for
// every type (as a feed-forward projection of a small model), reporting
// GFLOP/s (2·rows·cols per product) and allocations (which must be zero).
func BenchmarkMatVec(b *testing.B) {
	const rows, cols = 2048, 768
	rng := rand.New(rand.NewPCG(11, 11))
	x := randNormal(rng, cols, 1)
	for _, typ := range kernelTypes {
		b.Run(typ.String(), func(b *testing.B) {
			rb, err := RowBytes(typ, cols)
			if err != nil {
				b.Fatal(err)
			}
			data := alignedBytes(rows * rb)
			w := randNormal(rng, cols, 0.05)
			for r := range rows {
				if err := Quantize(typ, data[r*rb:(r+1)*rb], w); err != nil {
					b.Fatal(err)
				}
				w = append(w[1:], w[0]) // a different row each time, cheaply
			}
			m, err := NewMatrix(typ, rows, cols, data)
			if err != nil {
				b.Fatal(err)
			}
			out := make([]float32, rows)
			ws := NewWorkspace(cols)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for b.Loop() {
				MatVec(out, m, x, ws)
			}
			b.ReportMetric(2*rows*cols*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkMatMul times a batched product of 32 vectors (a prompt block)
// with a 2048×5632 matrix (TinyLlama's feed-forward down projection) for
// every type, against the 32 MatVec calls it replaces, reporting GFLOP/s:
//
//	go test ./engine/tensor/ -run '^$' -bench MatMul -benchtime 1x
func BenchmarkMatMul(b *testing.B) {
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
