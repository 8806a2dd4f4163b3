package tensor_test

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// A Q8_0 matrix built from float32 weights, multiplied by a vector of ones:
// row 0 (all 0.5) sums to 32 up to the fp16 rounding of its block scales,
// row 1 (alternating ±1) cancels exactly, block by block in integers.
func ExampleMatVec() {
	const rows, cols = 2, 64
	rb, err := tensor.RowBytes(tensor.Q8_0, cols)
	if err != nil {
		fmt.Println(err)
		return
	}
	data := make([]byte, rows*rb)
	w := make([]float32, cols)
	for r := range rows {
		for c := range w {
			w[c] = 0.5
			if r == 1 {
				w[c] = float32(1 - 2*(c%2))
			}
		}
		if err := tensor.Quantize(tensor.Q8_0, data[r*rb:(r+1)*rb], w); err != nil {
			fmt.Println(err)
			return
		}
	}
	m, err := tensor.NewMatrix(tensor.Q8_0, rows, cols, data)
	if err != nil {
		fmt.Println(err)
		return
	}
	x := make([]float32, cols)
	for i := range x {
		x[i] = 1
	}
	out := make([]float32, rows)
	tensor.MatVec(out, m, x, tensor.NewWorkspace(cols))
	fmt.Printf("%.1f %.1f\n", out[0], out[1])
	// Output: 32.0 0.0
}
