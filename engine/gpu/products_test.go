//go:build js

package gpu_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// productTolerance bounds |GPU - CPU| of a product's output relative to
// Σ_c |w_rc·x_tc|: the GPU encodes the activation to the CPU's bits and
// sums the same integer block products, so only the order and rounding of
// the float sums differ (a few ulp of the sum of magnitudes; one
// activation quant off by one would be ~1e-4).
const productTolerance = 1e-5

// productTypes are the storage types with product kernels.
var productTypes = []tensor.Type{
	tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
	tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
}

func TestProductsMatchCPU(t *testing.T) {
	// The reduction in workgroup memory (a device without subgroups) and,
	// where the adapter has them, the one with subgroupAdd.
	type variant struct {
		name string
		host gpu.Host
		lib  *gpu.Library
	}
	shared := testHostWithout(t, "subgroups")
	variants := []variant{{"shared", shared, gpu.NewLibrary(shared)}}
	if h := testHost(t); h.Adapter().Subgroups {
		variants = append(variants, variant{"subgroups", h, gpu.NewLibrary(h)})
	} else {
		t.Log("the adapter has no subgroups: only the workgroup-memory reduction is tested")
	}
	const maxN = 32
	rng := rand.New(rand.NewPCG(1, 2))
	worst := map[tensor.Type]float64{}
	for _, typ := range productTypes {
		// Two matrices sharing x, rows not a multiple of the kernels' rows
		// per workgroup; 512 columns for the K-quants (two super-blocks).
		cols := 256
		if bs, _ := tensor.BlockSize(typ); bs == 256 {
			cols = 512
		}
		ms := []*tensor.Matrix{randomMatrix(t, typ, 75, cols, rng), randomMatrix(t, typ, 130, cols, rng)}
		// Where this build has SIMD kernels for the type, the second
		// matrix is packed for them: UploadMatrix uploads the file's rows.
		tensor.Pack(ms[1])
		x := make([]float32, maxN*cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for _, v := range variants {
			h, lib := v.host, v.lib
			pass, err := gpu.NewPass(h, 8)
			if err != nil {
				t.Fatal(err)
			}
			xb, err := h.NewBuffer("x", 4*len(x), gpu.UsageReadback)
			if err != nil {
				t.Fatal(err)
			}
			h.Write(xb, 0, f32Bytes(x))
			var ps []gpu.Product
			var outs []gpu.Buffer
			for i, m := range ms {
				gm, err := gpu.UploadMatrix(h, fmt.Sprint("m", i), m)
				if err != nil {
					t.Fatal(err)
				}
				defer gm.Destroy()
				ob, err := h.NewBuffer("out", 4*maxN*m.Rows, gpu.UsageReadback)
				if err != nil {
					t.Fatal(err)
				}
				defer ob.Destroy()
				outs = append(outs, ob)
				ps = append(ps, gpu.Product{M: gm, Out: gpu.Binding{Buffer: ob}})
			}
			prods, err := gpu.NewProducts(lib, pass, gpu.Binding{Buffer: xb}, maxN, ps...)
			if err != nil {
				t.Fatalf("%v %s: %v", typ, v.name, err)
			}
			for _, n := range []int{1, 5, maxN} {
				if err := prods.Record(n); err != nil {
					t.Fatal(err)
				}
				if err := pass.Submit(); err != nil {
					t.Fatalf("%v %s n=%d: %v", typ, v.name, n, err)
				}
				for i, m := range ms {
					want := make([]float32, n*m.Rows)
					tensor.MatMuls(x[:n*cols], n, tensor.NewWorkspace(cols), tensor.Product{Out: want, M: m})
					raw := make([]byte, 4*n*m.Rows)
					if err := h.Read(outs[i], 0, raw); err != nil {
						t.Fatal(err)
					}
					row := make([]float32, cols)
					for r := range m.Rows {
						m.Row(row, r)
						for tok := range n {
							var mag float64
							for c, w := range row {
								mag += math.Abs(float64(w) * float64(x[tok*cols+c]))
							}
							got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(tok*m.Rows+r):]))
							diff := math.Abs(float64(got)-float64(want[tok*m.Rows+r])) / mag
							worst[typ] = max(worst[typ], diff)
							if !(diff <= productTolerance) {
								t.Errorf("%v %s n=%d matrix %d out[%d·%d+%d] = %g, CPU %g (difference %.2g of Σ|w·x|)",
									typ, v.name, n, i, tok, m.Rows, r, got, want[tok*m.Rows+r], diff)
							}
						}
					}
				}
			}
			prods.Destroy()
			xb.Destroy()
			pass.Destroy()
		}
	}
	for _, typ := range productTypes {
		t.Logf("%v: largest difference %.2g of Σ|w·x|", typ, worst[typ])
	}
}

func TestNewProductsRefuses(t *testing.T) {
	h := testHost(t)
	lib := gpu.NewLibrary(h)
	pass, err := gpu.NewPass(h, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer pass.Destroy()
	rng := rand.New(rand.NewPCG(3, 4))
	upload := func(typ tensor.Type, rows, cols int) *gpu.Matrix {
		m, err := gpu.UploadMatrix(h, "m", randomMatrix(t, typ, rows, cols, rng))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Destroy)
		return m
	}
	x, err := h.NewBuffer("x", 4*4*512, gpu.UsageStorage)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Destroy()
	out, err := h.NewBuffer("out", 4*4*64, gpu.UsageStorage)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Destroy()
	f32, wide := upload(tensor.F32, 64, 256), upload(tensor.F32, 64, 512)
	// IQ4_NL: a type ggml has and engine/tensor has no kernels for.
	iq4nl := &gpu.Matrix{Type: 20, Rows: 64, Cols: 256, RowBytes: 144, Buffer: f32.Buffer}
	for _, c := range []struct {
		name string
		maxN int
		ps   []gpu.Product
		want string
	}{
		{"no products", 1, nil, "none given"},
		{"maxN", 0, []gpu.Product{{f32, gpu.Binding{Buffer: out}}}, "maxN 0"},
		{"type", 1, []gpu.Product{{iq4nl, gpu.Binding{Buffer: out}}}, "ps[0].M: no product kernel for IQ4_NL"},
		{"out", 4, []gpu.Product{{f32, gpu.Binding{Buffer: out, Size: 4 * 64}}}, "ps[0].Out holds 64 values, 4 tokens of 64 rows need 256"},
		{"columns", 1, []gpu.Product{{f32, gpu.Binding{Buffer: out}}, {wide, gpu.Binding{Buffer: out}}}, "ps[1].M has 512 columns"},
		{"no matrix", 1, []gpu.Product{{nil, gpu.Binding{Buffer: out}}}, "ps[0].M is nil"},
		{"x", 9, []gpu.Product{{f32, gpu.Binding{Buffer: out}}}, "x holds 2048 values, 9 tokens of 256 need 2304"},
	} {
		_, err := gpu.NewProducts(lib, pass, gpu.Binding{Buffer: x}, c.maxN, c.ps...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
	p, err := gpu.NewProducts(lib, pass, gpu.Binding{Buffer: x}, 4, gpu.Product{M: f32, Out: gpu.Binding{Buffer: out}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Destroy()
	for _, n := range []int{0, 5} {
		if err := p.Record(n); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("n %d is outside [1, 4]", n)) {
			t.Errorf("Record(%d): error %v", n, err)
		}
	}
	if pass.Dispatches() != 0 {
		t.Errorf("refused records left %d dispatches", pass.Dispatches())
	}
}

// edgeInputs are three activations whose encodings test the roundings:
// for Q8_0/Q8_1 blocks, quants that are ties (x·127/max = k + ½), a block
// whose F16 scale is subnormal, a zero block, a block of large values; for
// F16 and BF16, values halfway between two representable ones, past F16's
// largest, below its smallest subnormal; for Q8_K, the largest magnitude
// at once negative and positive (the first one sets the sign) and ties.
func edgeInputs(cols int, rng *rand.Rand) []float32 {
	x := make([]float32, 3*cols)
	q8, f, k := x[:cols], x[cols:2*cols], x[2*cols:]
	for i := range 32 {
		q8[i] = float32(i%16) - 7.5 // ties once scaled by 127/127
		q8[32+i] = float32(rng.NormFloat64() * 1e-6)
		q8[96+i] = float32(rng.NormFloat64() * 1e3)
	}
	q8[0] = 127
	for i := 128; i < cols; i++ {
		q8[i] = float32(rng.NormFloat64())
	}
	ones := []float32{
		1 + 0x1p-11, 1 + 3*0x1p-11, -(1 + 0x1p-11), 65519, 65520, 1e-8, 0x1p-24 * 1.5, 0x1p-14 * (1 - 0x1p-12),
		1 + 0x1p-8, 1 + 3*0x1p-8, -(1 + 0x1p-8), 3e38,
	}
	for i := range f {
		f[i] = float32(rng.NormFloat64())
	}
	copy(f, ones)
	for i := range k {
		k[i] = float32(i%7) - 3 + 0.5*float32(i%2) // ties of -127/max·x
	}
	k[0], k[1] = -4, 4
	return x
}

// TestEncodingsMatchCPUBitForBit multiplies edgeInputs by one-hot matrices
// (row r: 1 at column r; for F16 and BF16 2^-20, an F16 subnormal), whose
// products are a single block's term each, with no sum to reorder: the GPU
// must give the CPU's bits, which holds only if it encodes the activation
// (and decodes the weights) exactly as the CPU does.
func TestEncodingsMatchCPUBitForBit(t *testing.T) {
	h := testHost(t)
	lib := gpu.NewLibrary(h)
	pass, err := gpu.NewPass(h, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer pass.Destroy()
	const cols, n = 256, 3
	x := edgeInputs(cols, rand.New(rand.NewPCG(7, 8)))
	xb, err := h.NewBuffer("x", 4*len(x), gpu.UsageReadback)
	if err != nil {
		t.Fatal(err)
	}
	defer xb.Destroy()
	h.Write(xb, 0, f32Bytes(x))
	oneHot := make([]float32, cols)
	for _, typ := range []tensor.Type{tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_1, tensor.Q6_K} {
		rb, _ := tensor.RowBytes(typ, cols)
		data := make([]byte, cols*rb)
		one := float32(1)
		if typ == tensor.F16 || typ == tensor.BF16 {
			one = 0x1p-20
		}
		for r := range cols {
			clear(oneHot)
			oneHot[r] = one
			if err := tensor.Quantize(typ, data[r*rb:(r+1)*rb], oneHot); err != nil {
				t.Fatal(err)
			}
		}
		m, err := tensor.NewMatrix(typ, cols, cols, data)
		if err != nil {
			t.Fatal(err)
		}
		gm, err := gpu.UploadMatrix(h, typ.String(), m)
		if err != nil {
			t.Fatal(err)
		}
		defer gm.Destroy()
		ob, err := h.NewBuffer("out", 4*n*cols, gpu.UsageReadback)
		if err != nil {
			t.Fatal(err)
		}
		defer ob.Destroy()
		prods, err := gpu.NewProducts(lib, pass, gpu.Binding{Buffer: xb}, n, gpu.Product{M: gm, Out: gpu.Binding{Buffer: ob}})
		if err != nil {
			t.Fatal(err)
		}
		defer prods.Destroy()
		for _, tokens := range []int{1, n} {
			if err := prods.Record(tokens); err != nil {
				t.Fatal(err)
			}
			if err := pass.Submit(); err != nil {
				t.Fatal(err)
			}
			want := make([]float32, tokens*cols)
			tensor.MatMuls(x[:tokens*cols], tokens, tensor.NewWorkspace(cols), tensor.Product{Out: want, M: m})
			raw := make([]byte, 4*tokens*cols)
			if err := h.Read(ob, 0, raw); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, w := range want {
				got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				if math.Float32bits(got) != math.Float32bits(w) && !(got != got && w != w) {
					if bad++; bad <= 5 {
						t.Errorf("%v n=%d: token %d row %d: %g (%#x), CPU %g (%#x); x = %g", typ, tokens, i/cols, i%cols, got, math.Float32bits(got), w, math.Float32bits(w), x[i])
					}
				}
			}
			if bad > 5 {
				t.Errorf("%v n=%d: %d outputs differ", typ, tokens, bad)
			}
		}
	}
}
