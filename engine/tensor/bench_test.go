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
