package tensor

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// MXFP4 against llama.cpp itself: testdata/mxfp4/ holds what the ggml
// libraries of the node-llama-cpp build the project is held to compute
// (ggmlref.c, run by `go test -run TestMXFP4 -update`, which needs a C
// compiler and node_modules): for rows of float32, quantize_row_mxfp4_ref's
// bytes, dequantize_row_mxfp4's floats and ggml_vec_dot_mxfp4_q8_0's dot
// product with an activation; and where glibc's floorf(log2f(x)) changes,
// over every float32, which the quantizer's exponent rests on.

const (
	mxfp4RefRows = "testdata/mxfp4/ggml.rows"
	mxfp4RefLog2 = "testdata/mxfp4/log2f.txt"
	mxfp4RefCols = 128
)

// mxfp4Ref is one row of the reference: weights w and activation x (the
// inputs), and llama.cpp's bytes, dequantized floats and dot product.
type mxfp4Ref struct {
	w, x  []float32
	bytes []byte
	deq   []float32
	dot   float32
}

// mxfp4RefInputs are the reference's weight rows: Gaussian rows of many
// scales, and blocks at the quantizer's edges (zeros, values halfway
// between codes, magnitudes just below powers of two where log2f rounds
// up, subnormal and near-overflow magnitudes, infinities and NaNs).
func mxfp4RefInputs() [][]float32 {
	rng := rand.New(rand.NewPCG(39, 39))
	var rows [][]float32
	for i := range 24 {
		rows = append(rows, randNormal(rng, mxfp4RefCols, math.Ldexp(1, 3*i-40)))
	}
	edge := func(f func(i int) float32) {
		w := make([]float32, mxfp4RefCols)
		for i := range w {
			w[i] = f(i)
		}
		rows = append(rows, w)
	}
	grid := []float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	edge(func(i int) float32 { // zeros; values halfway between codes, and on them, under max|x| = 6
		blk, j := i/32, i%32
		switch {
		case blk == 0:
			return 0
		case j == 0:
			return 6
		case blk == 3:
			return -grid[j%8]
		}
		v := (grid[j%7] + grid[j%7+1]) / 2
		if blk == 2 {
			v = -v
		}
		return v
	})
	for _, bits := range []uint32{0x40ffffff, 0x417fffff, 0x41fffffe, 0x43fffffb, 0x3dffffff, 0x3bfffffe, 0x37fffffb} {
		edge(func(i int) float32 { // max|x| where log2f rounds up, and one ulp below that
			top := math.Float32frombits(bits - uint32(i/32%2))
			if i%32 == 5 {
				return -top
			}
			return top * float32(rng.NormFloat64()) / 4
		})
	}
	edge(func(i int) float32 { return float32(math.Ldexp(rng.NormFloat64(), -130+i/32)) })     // subnormal blocks
	edge(func(i int) float32 { return float32(math.Ldexp(rng.NormFloat64(), 124+i/32)) })      // near the largest float32
	edge(func(i int) float32 { return []float32{1, float32(math.Inf(1)), -2, 3}[i/32] * 0.1 }) // an infinite block
	edge(func(i int) float32 {                                                                 // NaNs among finite values
		if i%7 == 0 {
			return float32(math.NaN())
		}
		return float32(rng.NormFloat64())
	})
	return rows
}

func TestMXFP4LlamaCpp(t *testing.T) {
	if *update {
		writeMXFP4Reference(t)
	}
	refs := readMXFP4Reference(t)
	require.Len(t, refs, len(mxfp4RefInputs()))
	for i, ref := range refs {
		got := make([]byte, len(ref.bytes))
		require.NoError(t, Quantize(MXFP4, got, ref.w))
		require.Equal(t, ref.bytes, got, "row %d: quantized bytes", i)

		deq := make([]float32, mxfp4RefCols)
		dequantizeMXFP4(deq, ref.bytes)
		for j := range deq {
			require.Equal(t, math.Float32bits(ref.deq[j]), math.Float32bits(deq[j]), "row %d element %d", i, j)
		}

		// The dot product: llama.cpp's AVX2 kernel sums in its own order,
		// with fused multiply-adds, so within the kernels' rounding bound
		// (dotTolerance, both sides) of ours.
		a := encodeFor(MXFP4, ref.x)
		ours := dotMXFP4(ref.bytes, a)
		want, mag := naiveDot(MXFP4, ref.bytes, a, mxfp4RefCols)
		if math.IsInf(want, 0) || math.IsNaN(want) {
			continue
		}
		require.InDelta(t, float64(ref.dot), float64(ours), 2*dotTolerance(MXFP4, mxfp4RefCols, mag), "row %d: dot", i)
	}
}

// TestMXFP4ExponentIsGlibcs: the quantizer's exponent changes exactly where
// glibc's floorf(log2f(x)) does, over every positive float32 (the
// thresholds are glibc's, and floor(log2) only grows with x).
func TestMXFP4ExponentIsGlibcs(t *testing.T) {
	if *update {
		out, err := exec.Command(mxfp4RefTool(t), "log2f").Output()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(mxfp4RefLog2, out, 0o644))
	}
	b, err := os.ReadFile(mxfp4RefLog2)
	require.NoError(t, err)
	lines := strings.Fields(string(b))
	require.Len(t, lines, 2*278)
	prev := byte(0)
	for i := 0; i < len(lines); i += 2 {
		bits, err := strconv.ParseUint(lines[i], 16, 32)
		require.NoError(t, err)
		floor, err := strconv.Atoi(lines[i+1])
		require.NoError(t, err)
		x := math.Float32frombits(uint32(bits))
		want := byte(int32(floor - 2 + 127))
		require.Equal(t, want, mxfp4Exponent(x), "%#08x (%g)", bits, x)
		if bits > 1 {
			require.Equal(t, prev, mxfp4Exponent(math.Float32frombits(uint32(bits-1))), "%#08x, one ulp below %g", bits-1, x)
		}
		prev = want
	}
	require.Equal(t, prev, mxfp4Exponent(math.MaxFloat32))
}

// mxfp4RefTool compiles ggmlref.c into the test's temporary folder.
func mxfp4RefTool(t *testing.T) string {
	tool := filepath.Join(t.TempDir(), "ggmlref")
	out, err := exec.Command("cc", "-O2", "-o", tool, "testdata/mxfp4/ggmlref.c", "-ldl", "-lm").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return tool
}

// writeMXFP4Reference runs ggmlref on mxfp4RefInputs with the ggml
// libraries of node-llama-cpp's linux-x64 build (its AVX2 CPU backend,
// whose MXFP4 kernel is the one ggml_vec_dot_mxfp4_q8_0's source shows)
// and writes the reference file.
func writeMXFP4Reference(t *testing.T) {
	libs, err := filepath.Glob("../../node_modules/@node-llama-cpp/linux-x64/bins/*/libggml-base.so")
	require.NoError(t, err)
	require.Len(t, libs, 1, "node-llama-cpp's linux-x64 libraries (npm ci)")
	base, err := filepath.Abs(libs[0])
	require.NoError(t, err)
	cpu := filepath.Join(filepath.Dir(base), "libggml-cpu-haswell.so")

	inputs := mxfp4RefInputs()
	rng := rand.New(rand.NewPCG(40, 40))
	var in bytes.Buffer
	le := binary.LittleEndian
	in.Write(le.AppendUint32(le.AppendUint32(nil, uint32(len(inputs))), mxfp4RefCols))
	var xs [][]float32
	for _, w := range inputs {
		x := randNormal(rng, mxfp4RefCols, 1)
		xs = append(xs, x)
		require.NoError(t, binary.Write(&in, le, w))
		require.NoError(t, binary.Write(&in, le, x))
	}
	cmd := exec.Command(mxfp4RefTool(t), "rows", base, cpu)
	cmd.Stdin = &in
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)

	// The file: per row the inputs (w, x), then ggmlref's output (bytes,
	// dequantized floats, dot).
	var file bytes.Buffer
	per := mxfp4RefCols/qk8*mxfp4BlockBytes + 4*mxfp4RefCols + 4
	require.Len(t, out, len(inputs)*per)
	for i, w := range inputs {
		require.NoError(t, binary.Write(&file, le, w))
		require.NoError(t, binary.Write(&file, le, xs[i]))
		file.Write(out[i*per : (i+1)*per])
	}
	require.NoError(t, os.WriteFile(mxfp4RefRows, file.Bytes(), 0o644))
}

func readMXFP4Reference(t *testing.T) []mxfp4Ref {
	f, err := os.Open(mxfp4RefRows)
	require.NoError(t, err)
	defer f.Close()
	r := bufio.NewReader(f)
	floats := func(n int) []float32 {
		v := make([]float32, n)
		require.NoError(t, binary.Read(r, binary.LittleEndian, v))
		return v
	}
	var refs []mxfp4Ref
	for {
		if _, err := r.Peek(1); err != nil {
			break
		}
		ref := mxfp4Ref{w: floats(mxfp4RefCols), x: floats(mxfp4RefCols)}
		ref.bytes = make([]byte, mxfp4RefCols/qk8*mxfp4BlockBytes)
		_, err := io.ReadFull(r, ref.bytes)
		require.NoError(t, err)
		ref.deq = floats(mxfp4RefCols)
		ref.dot = floats(1)[0]
		refs = append(refs, ref)
	}
	require.NotEmpty(t, refs, fmt.Sprintf("%s holds no rows", mxfp4RefRows))
	return slices.Clip(refs)
}

// TestMXFP4EveryExponent: rows whose blocks hold every E8M0 exponent
// (0 and 1 subnormal scales, 254 and 255 past float32's range in a
// product), row r only 2r and 2r+1 so that no block's term is lost in
// larger ones, give the pure-Go dot's bits (or a NaN for a NaN) through
// MatVec and MatMul, whichever kernels run them on this host (packed, as
// a model's weights are, where they read packed rows).
func TestMXFP4EveryExponent(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 41))
	const rows, cols = 128, 8 * qk8
	m := matrixOfRows(t, MXFP4, rows, cols, func(r int) []byte {
		row := make([]byte, cols/qk8*mxfp4BlockBytes)
		for i := range row {
			row[i] = byte(rng.Uint32())
		}
		for b := range cols / qk8 {
			row[b*mxfp4BlockBytes] = byte(2*r + b%2)
		}
		return row
	})
	Pack(m)
	const n = 3
	x := randNormal(rng, n*cols, 1)
	ws := NewWorkspace(cols)
	got := make([]float32, n*rows)
	MatMul(got, m, x, n, ws)
	one := make([]float32, rows)
	for tok := range n {
		xt := x[tok*cols : (tok+1)*cols]
		MatVec(one, m, xt, ws)
		a := encodeFor(MXFP4, xt)
		for r := range rows {
			want := dotMXFP4(m.RowData(r), a)
			requireSameDot(t, want, one[r], "MatVec, vector %d row %d", tok, r)
			requireSameDot(t, want, got[tok*rows+r], "MatMul, vector %d row %d", tok, r)
		}
	}
}
