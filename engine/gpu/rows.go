package gpu

import "fmt"

// Rows is an element-wise operation over n rows of width values: a
// residual or a bias added, a scale, a soft-cap, a copy, the gated units.
// One invocation computes one value.
type Rows struct {
	op
	name     string
	width    int
	dst, src Binding // src: the second operand, if the operation has one
	hasSrc   bool
	arg      float32
}

// rowKernel is an element-wise kernel: the value dst[i] becomes expr,
// which may read src (the second operand at p.srcAt + i, or a bias at i
// mod width), x (dst[i]) and p.arg.
type rowKernel struct {
	name string
	expr string
	src  string // "": no second operand; "i": src[p.srcAt + i]; "bias": src[i % width]
	fns  string // WGSL functions expr calls
}

// The kernels' expressions follow the CPU's: SiLU g/(1+e^−g) (tensor.SwiGLU),
// the soft-cap x·(1/cap) through tanh, times cap (softCap), GELU's tanh
// approximation (gelu.go).
var (
	kernelAdd      = rowKernel{name: "add", expr: "x + src[p.srcAt + i]", src: "i"}
	kernelBias     = rowKernel{name: "bias", expr: "x + src[i % p.width]", src: "bias"}
	kernelCopy     = rowKernel{name: "copy", expr: "src[p.srcAt + i]", src: "i"}
	kernelScale    = rowKernel{name: "scale", expr: "x * p.arg"}
	kernelSoftCap  = rowKernel{name: "softcap", expr: "tanhClamped(x * (1.0 / p.arg)) * p.arg", fns: tanhFn}
	kernelSwiGLU   = rowKernel{name: "swiglu", expr: "(x / (1.0 + exp(-x))) * src[p.srcAt + i]", src: "i"}
	kernelGeGLU    = rowKernel{name: "geglu", expr: "gelu(x) * src[p.srcAt + i]", src: "i", fns: tanhFn + f16Fn + geluFn}
	kernelGeGLUF16 = rowKernel{name: "geglu-f16", expr: "geluF16(x) * src[p.srcAt + i]", src: "i", fns: tanhFn + f16Fn + geluFn}
	kernelGELU     = rowKernel{name: "gelu", expr: "gelu(x)", fns: tanhFn + f16Fn + geluFn}
	kernelGELUF16  = rowKernel{name: "gelu-f16", expr: "geluF16(x)", fns: tanhFn + f16Fn + geluFn}
)

// tanhFn is tanh of an argument clamped to ±10 (tanh(±10) is ±1 in f32),
// since some backends compute tanh from exponentials that overflow for a
// large argument (inf/inf).
const tanhFn = `
fn tanhClamped(x: f32) -> f32 { return tanh(clamp(x, -10.0, 10.0)); }
`

// geluFn is GELU's tanh approximation in f32, 0.5·x·(1 + tanh(√(2/π)·x·(1 +
// 0.044715·x²))), and geluF16 llama.cpp's GELU (gelu.go): 0 from -10 down,
// x from 10 up, between them the approximation at x rounded to F16, its
// result rounded to F16, as ggml's table of GELU at every F16 value holds
// it (roundF16: f16Fn).
const geluFn = `
fn gelu(x: f32) -> f32 {
  let inner = 1.0 + (0.044715 * x) * x;
  return (0.5 * x) * (1.0 + tanhClamped((0.7978845608028654 * x) * inner));
}
fn geluF16(x: f32) -> f32 {
  if (x <= -10.0) { return 0.0; }
  if (x >= 10.0) { return x; }
  return roundF16(gelu(roundF16(x)));
}
`

func (k rowKernel) source() string {
	buffers := []string{"dst: array<f32>"}
	if k.src != "" {
		buffers = append(buffers, "src: array<f32>")
	}
	return kernelSource("count: u32, width: u32, arg: f32, srcAt: u32,", buffers, k.fns+`
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = groupIndex(wg, nwg) * WG + li;
  if (i >= p.count) { return; }
  let x = dst[i];
  dst[i] = `+k.expr+`;
}
`)
}

func newRows(lib *Library, pass *Pass, k rowKernel, dst, src Binding, width int, arg float32) (*Rows, error) {
	if width < 1 {
		return nil, fmt.Errorf("gpu: %s: width must be at least 1, got %d", k.name, width)
	}
	bs := []Binding{dst}
	if k.src != "" {
		bs = append(bs, src)
	}
	if k.src == "bias" {
		if err := rowsFit(k.name+" bias", src, 1, width); err != nil {
			return nil, err
		}
	}
	o, err := newOp(lib, pass, k.name, k.source(), bs...)
	if err != nil {
		return nil, err
	}
	return &Rows{op: o, name: k.name, width: width, dst: dst, src: src, hasSrc: k.src == "i", arg: arg}, nil
}

// NewAdd makes dst += src over rows of width values: a residual.
func NewAdd(lib *Library, pass *Pass, dst, src Binding, width int) (*Rows, error) {
	return newRows(lib, pass, kernelAdd, dst, src, width, 0)
}

// NewBias makes dst += bias over rows of width values, bias one row added
// to each.
func NewBias(lib *Library, pass *Pass, dst, bias Binding, width int) (*Rows, error) {
	return newRows(lib, pass, kernelBias, dst, bias, width, 0)
}

// NewCopy makes dst = src over rows of width values.
func NewCopy(lib *Library, pass *Pass, dst, src Binding, width int) (*Rows, error) {
	return newRows(lib, pass, kernelCopy, dst, src, width, 0)
}

// NewScale makes dst ×= s over rows of width values.
func NewScale(lib *Library, pass *Pass, dst Binding, width int, s float32) (*Rows, error) {
	return newRows(lib, pass, kernelScale, dst, Binding{}, width, s)
}

// NewSoftCap makes dst = limit·tanh(dst/limit) over rows of width values
// (gemma2's scores and logits), as ggml computes it: dst times the f32
// 1/limit.
func NewSoftCap(lib *Library, pass *Pass, dst Binding, width int, limit float32) (*Rows, error) {
	if !(limit > 0) {
		return nil, fmt.Errorf("gpu: softcap: limit must be positive, got %v", limit)
	}
	return newRows(lib, pass, kernelSoftCap, dst, Binding{}, width, limit)
}

// NewSwiGLU makes gate = silu(gate)·up over rows of width values (the
// gated units of a llama feed-forward; tensor.SwiGLU).
func NewSwiGLU(lib *Library, pass *Pass, gate, up Binding, width int) (*Rows, error) {
	return newRows(lib, pass, kernelSwiGLU, gate, up, width, 0)
}

// NewGeGLU makes gate = gelu(gate)·up over rows of width values (gemma's
// gated units): with f16Table, GELU as llama.cpp's table gives it (the
// input and the result rounded to F16, as the engine's geglu), without,
// GELU in f32 (the engine's exact GELU).
func NewGeGLU(lib *Library, pass *Pass, gate, up Binding, width int, f16Table bool) (*Rows, error) {
	k := kernelGeGLU
	if f16Table {
		k = kernelGeGLUF16
	}
	return newRows(lib, pass, k, gate, up, width, 0)
}

// NewGELU makes x = gelu(x) over rows of width values (bert's
// feed-forward), f16Table as NewGeGLU's.
func NewGELU(lib *Library, pass *Pass, x Binding, width int, f16Table bool) (*Rows, error) {
	k := kernelGELU
	if f16Table {
		k = kernelGELUF16
	}
	return newRows(lib, pass, k, x, Binding{}, width, 0)
}

// Record records the operation over n rows.
func (r *Rows) Record(n int) error { return r.RecordFrom(0, n) }

// RecordFrom records the operation over n rows of dst with src's rows
// from..from+n-1 (an operation with a second operand, not a bias): say, the
// last row of a block copied to the first of another buffer.
func (r *Rows) RecordFrom(from, n int) error {
	switch {
	case from < 0:
		return fmt.Errorf("gpu: %s: from must not be negative, got %d", r.name, from)
	case from > 0 && !r.hasSrc:
		return fmt.Errorf("gpu: %s: from %d: the operation has no second operand", r.name, from)
	}
	if err := rowsFit(r.name+" dst", r.dst, n, r.width); err != nil {
		return err
	}
	if r.hasSrc {
		if err := rowsFit(r.name+" src", r.src, from+n, r.width); err != nil {
			return err
		}
	}
	count := n * r.width
	r.params.SetU32(0, uint32(count))
	r.params.SetU32(1, uint32(r.width))
	r.params.SetF32(2, r.arg)
	r.params.SetU32(3, uint32(from*r.width))
	r.dispatch((count + workgroup - 1) / workgroup)
	return nil
}
