package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

var ggmlGELUTable = flag.String("ggml-gelu-table", "", "a dump of ggml's ggml_table_gelu_f16 (testdata/ggml_gelu_table.c) to compare geluTable with, entry by entry")

// ggmlGELUTableSHA256 is tableDigest of ggml_table_gelu_f16 as the FMA
// builds of ggml's CPU backend in node-llama-cpp 3.21.1 compute it
// (libggml-cpu-haswell.so, -skylakex, -icelake, -zen4: one table), dumped
// by testdata/ggml_gelu_table.c. (The baseline builds' differs in one
// entry: 235d1b33….)
const ggmlGELUTableSHA256 = "7391278c094494a5d0e3c9ac8dede5524fedf857ee327b6d72783ffae4009183"

// f16NaN reports whether h is an F16 NaN.
func f16NaN(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }

// tableDigest is the SHA-256 of a GELU table of F16 bits, the entries of
// NaN inputs left out and NaN outputs (-inf gives one) written 0x7e00:
// which NaN a CPU makes is no part of the arithmetic.
func tableDigest(bits []uint16) string {
	h := sha256.New()
	var b [2]byte
	for in, out := range bits {
		if f16NaN(uint16(in)) {
			continue
		}
		if f16NaN(out) {
			out = 0x7e00
		}
		binary.LittleEndian.PutUint16(b[:], out)
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestGELUTable: the engine's GELU table is ggml's (its FMA builds'),
// entry for entry: its digest is the golden one, and with
// -ggml-gelu-table every entry is compared with the dump. Each entry is
// also GELU's tanh approximation, in float64, within one F16 step (or,
// where float32's 1 + tanh cancels, x/2 times one float32 step of 1).
func TestGELUTable(t *testing.T) {
	table := geluTable()
	bits := make([]uint16, len(table))
	tensor.EncodeF16(bits, table[:])
	assert.Equal(t, ggmlGELUTableSHA256, tableDigest(bits))
	if *ggmlGELUTable != "" {
		dump, err := os.ReadFile(*ggmlGELUTable)
		require.NoError(t, err)
		require.Len(t, dump, 2<<16)
		want := make([]uint16, 1<<16)
		for i := range want {
			want[i] = binary.LittleEndian.Uint16(dump[2*i:])
		}
		t.Logf("the dump's digest: %s", tableDigest(want))
		for in := range want {
			if !f16NaN(uint16(in)) && !(f16NaN(want[in]) && f16NaN(bits[in])) {
				assert.Equal(t, want[in], bits[in], "GELU at F16 %#04x", in)
			}
		}
	}
	var x [1 << 16]float32
	in := make([]uint16, len(x))
	for i := range in {
		in[i] = uint16(i)
	}
	tensor.DecodeF16(x[:], in)
	for i, v := range x {
		if math.Abs(float64(v)) >= 10 || math.IsNaN(float64(v)) {
			continue
		}
		exact := gelu(float64(v))
		step := max(math.Abs(exact)*0x1p-10, 0x1p-24, math.Abs(float64(v))*0x1p-23)
		assert.InDelta(t, exact, table[i], step, "GELU(%v)", v)
	}
}

// TestGeGLU: geglu is ggml_vec_geglu_f32: below -10 zero, from 10 on
// x·up, between the table's GELU at x rounded to F16, times up.
func TestGeGLU(t *testing.T) {
	tests := []struct {
		x, up float32
		want  func() float32
	}{
		{-10, 3, func() float32 { return 0 }},
		{-1e6, 3, func() float32 { return 0 }},
		{10, 3, func() float32 { return 30 }},
		{1e6, 0.5, func() float32 { return 5e5 }},
		{9.99, 2, func() float32 { return geluTable()[0x48ff] * 2 }},  // 9.99 rounds to F16 9.9921875
		{9.999, 2, func() float32 { return geluTable()[0x4900] * 2 }}, // and 9.999 to 10
		{-1.9990234, 1, func() float32 { return geluTable()[0xbfff] }},
		{0.1234567, -2, func() float32 { return roundedGELU(0.1234567) * -2 }},
	}
	for _, tt := range tests {
		gate, up := []float32{tt.x}, []float32{tt.up}
		geglu(gate, up)
		assert.Equal(t, tt.want(), gate[0], "x %v up %v", tt.x, tt.up)
	}
	// A long vector goes through the same lookups, run after run.
	gate, up, want := make([]float32, 1000), make([]float32, 1000), make([]float32, 1000)
	for i := range gate {
		gate[i], up[i] = float32(i-500)/40, float32(i%7)-3
		want[i] = func() float32 {
			g := []float32{gate[i]}
			geglu(g, up[i:i+1])
			return g[0]
		}()
	}
	geglu(gate, up)
	assert.Equal(t, want, gate)
}

// roundedGELU is the table's GELU at x rounded to F16.
func roundedGELU(x float32) float32 {
	var h [1]uint16
	tensor.EncodeF16(h[:], []float32{x})
	return geluTable()[h[0]]
}
