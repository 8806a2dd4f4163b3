package gpu

import "fmt"

// Norms: a workgroup normalises one row, its invocations summing strided
// parts of the row and the workgroup adding their sums in a tree in
// workgroup memory.

// rowNorm is a norm's kernel over rows of width values, each row a
// workgroup's, with the parameters rows, width, eps.
type rowNorm struct {
	op
	name  string
	rows  []Binding // the bindings of rows, read or written
	width int       // values normalised together
	eps   float32
}

// record records the norm of rows rows.
func (r *rowNorm) record(rows int) error {
	for _, b := range r.rows {
		if err := rowsFit(r.name+" rows", b, rows, r.width); err != nil {
			return err
		}
	}
	r.params.SetU32(0, uint32(rows))
	r.params.SetU32(1, uint32(r.width))
	r.params.SetF32(2, r.eps)
	r.dispatch(rows)
	return nil
}

// RMSNorm is out = weight ⊙ x / √(mean(x²) + eps) for each row of width
// values (rmsNorm, rmsNormGGML), or for each of a row's heads.
type RMSNorm struct {
	rowNorm
	heads int // groups of width a row holds
}

// rowNormKernel is a norm's entry point: a workgroup per row, body
// computing row row, whose first value is at.
func rowNormKernel(body string) string {
	return reduceFns + `
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let row = groupIndex(wg, nwg);
  if (row >= p.rows) { return; }
  let at = row * p.width;` + body + "}\n"
}

// rmsNormSource is the kernel; in place, src is dst.
func rmsNormSource(inPlace bool) string {
	buffers := []string{"dst: array<f32>", "src: array<f32>", "weight: array<f32>"}
	body := rowNormKernel(`
  var s = 0.0;
  for (var i = li; i < p.width; i += WG) { let v = src[at + i]; s += v * v; }
  let scale = 1.0 / sqrt(reduceSum(li, s) / f32(p.width) + p.eps);
  for (var i = li; i < p.width; i += WG) { dst[at + i] = weight[i] * (scale * src[at + i]); }
`)
	if inPlace {
		buffers = []string{"dst: array<f32>", "weight: array<f32>"}
		body = replaceAll(body, "src[", "dst[")
	}
	return kernelSource("rows: u32, width: u32, eps: f32,", buffers, body)
}

// NewRMSNorm makes out = RMSNorm(x) with weight over rows of width values.
// out may be x (the same binding: in place). ggml names the CPU function
// the operation stands for, rmsNormGGML (the squares summed in float64) or
// rmsNorm (in float32, llama2.c's arithmetic); on the GPU both sum in f32
// in a tree, which differs from either by rounding only, so the kernel is
// the same.
func NewRMSNorm(lib *Library, pass *Pass, out, x, weight Binding, width int, eps float32, ggml bool) (*RMSNorm, error) {
	return newRMSNorm(lib, pass, "rmsnorm", out, x, weight, width, 1, eps)
}

// NewAddRMSNorm makes x += add, then out = RMSNorm(x) with weight, over
// rows of width values, in one kernel: a sub-layer's output added to the
// residual stream and the next sub-layer's input normalised (addInto, then
// preNorm's rmsNorm), one dispatch instead of two. out is neither x nor add.
func NewAddRMSNorm(lib *Library, pass *Pass, out, x, add, weight Binding, width int, eps float32) (*RMSNorm, error) {
	if out == x || out == add {
		return nil, fmt.Errorf("gpu: add rmsnorm: out must be neither x nor add")
	}
	if width < 1 {
		return nil, fmt.Errorf("gpu: add rmsnorm: width must be at least 1, got %d", width)
	}
	if err := rowsFit("add rmsnorm weight", weight, 1, width); err != nil {
		return nil, err
	}
	src := kernelSource("rows: u32, width: u32, eps: f32,",
		[]string{"dst: array<f32>", "src: array<f32>", "add: array<f32>", "weight: array<f32>"}, rowNormKernel(`
  var s = 0.0;
  for (var i = li; i < p.width; i += WG) { let v = src[at + i] + add[at + i]; src[at + i] = v; s += v * v; }
  let scale = 1.0 / sqrt(reduceSum(li, s) / f32(p.width) + p.eps);
  for (var i = li; i < p.width; i += WG) { dst[at + i] = weight[i] * (scale * src[at + i]); }
`))
	o, err := newOp(lib, pass, "add rmsnorm", src, out, x, add, weight)
	if err != nil {
		return nil, err
	}
	return &RMSNorm{rowNorm: rowNorm{op: o, name: "add rmsnorm", rows: []Binding{out, x, add}, width: width, eps: eps}, heads: 1}, nil
}

// NewHeadsRMSNorm makes v = RMSNorm(v) with weight for each head of
// headDim values of v's rows of heads heads, in place (headsRMSNorm: qwen3's
// and gemma3's q and k norms).
func NewHeadsRMSNorm(lib *Library, pass *Pass, v, weight Binding, headDim, heads int, eps float32) (*RMSNorm, error) {
	return newRMSNorm(lib, pass, "heads rmsnorm", v, v, weight, headDim, heads, eps)
}

func newRMSNorm(lib *Library, pass *Pass, name string, out, x, weight Binding, width, heads int, eps float32) (*RMSNorm, error) {
	if width < 1 || heads < 1 {
		return nil, fmt.Errorf("gpu: %s: width %d and heads %d must be at least 1", name, width, heads)
	}
	if err := rowsFit(name+" weight", weight, 1, width); err != nil {
		return nil, err
	}
	var o op
	var err error
	if out == x {
		o, err = newOp(lib, pass, "rmsnorm-inplace", rmsNormSource(true), out, weight)
	} else {
		o, err = newOp(lib, pass, "rmsnorm", rmsNormSource(false), out, x, weight)
	}
	if err != nil {
		return nil, err
	}
	return &RMSNorm{rowNorm: rowNorm{op: o, name: name, rows: []Binding{out, x}, width: width, eps: eps}, heads: heads}, nil
}

// Record records the norm of n rows.
func (r *RMSNorm) Record(n int) error { return r.record(n * r.heads) }

// LayerNorm is x = (x − mean(x)) / √(variance(x) + eps) ⊙ weight + bias
// for each row of width values, in place (tensor.LayerNorm: bert's norms).
type LayerNorm struct {
	rowNorm
}

var layerNormBody = rowNormKernel(`
  var s = 0.0;
  for (var i = li; i < p.width; i += WG) { s += x[at + i]; }
  let mean = reduceSum(li, s) / f32(p.width);
  var s2 = 0.0;
  for (var i = li; i < p.width; i += WG) { let d = x[at + i] - mean; s2 += d * d; }
  let scale = 1.0 / sqrt(reduceSum(li, s2) / f32(p.width) + p.eps);
  for (var i = li; i < p.width; i += WG) { x[at + i] = ((x[at + i] - mean) * scale) * weight[i] + bias[i]; }
`)

// NewLayerNorm makes the layer norm of x's rows of width values, in place,
// with weight and bias (width values each).
func NewLayerNorm(lib *Library, pass *Pass, x, weight, bias Binding, width int, eps float32) (*LayerNorm, error) {
	if width < 1 {
		return nil, fmt.Errorf("gpu: layernorm: width must be at least 1, got %d", width)
	}
	if err := rowsFit("layernorm weight", weight, 1, width); err != nil {
		return nil, err
	}
	if err := rowsFit("layernorm bias", bias, 1, width); err != nil {
		return nil, err
	}
	src := kernelSource("rows: u32, width: u32, eps: f32,", []string{"x: array<f32>", "weight: array<f32>", "bias: array<f32>"}, layerNormBody)
	o, err := newOp(lib, pass, "layernorm", src, x, weight, bias)
	if err != nil {
		return nil, err
	}
	return &LayerNorm{rowNorm{op: o, name: "layernorm", rows: []Binding{x}, width: width, eps: eps}}, nil
}

// Record records the norm of n rows.
func (r *LayerNorm) Record(n int) error { return r.record(n) }
