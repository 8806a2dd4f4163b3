package gpu

import (
	"fmt"
	"strings"
)

// The operations of the forward pass other than the products: each binds
// its buffers once, when it is made (a bind group, a slot of the pass's
// parameters), and records one dispatch each time the pass needs it,
// writing that call's parameters into its slot. The activations are f32
// buffers of rows, n tokens × a width; the kernels declare every storage
// buffer read_write, so that several bindings may be ranges of one buffer
// (WebGPU refuses a buffer bound both read-only and writable in one
// dispatch) as long as a range written does not overlap another.

// workgroup is the invocations of every kernel's workgroup: WebGPU's
// default maxComputeInvocationsPerWorkgroup, which every adapter offers.
const workgroup = 256

// maxGroups is the workgroups a dispatch has along one dimension at most
// (WebGPU's default maxComputeWorkgroupsPerDimension); a kernel over more
// takes a second dimension (grid).
const maxGroups = 65535

// op is a bound kernel: its pipeline, its bind group and its parameters'
// slot (binding 0 of every kernel here).
type op struct {
	pass   *Pass
	kernel Kernel
	bind   Bindings
	params Params
}

// newOp compiles (once per library) the kernel name of source, entry point
// main, reserves a slot of pass for its parameters and binds them and bs.
func newOp(lib *Library, pass *Pass, name, source string, bs ...Binding) (op, error) {
	params, err := pass.Reserve()
	if err != nil {
		return op{}, err
	}
	return bindOp(lib, pass, params, name, source, bs...)
}

// bindOp is newOp with the parameters' slot given: kernels that one
// operation dispatches one after the other share it.
func bindOp(lib *Library, pass *Pass, params Params, name, source string, bs ...Binding) (op, error) {
	k, err := lib.Kernel(name, source, "main")
	if err != nil {
		return op{}, err
	}
	b, err := lib.Host().NewBindings(k, append([]Binding{params.Binding()}, bs...)...)
	if err != nil {
		return op{}, fmt.Errorf("gpu: binding %s: %w", name, err)
	}
	return op{pass: pass, kernel: k, bind: b, params: params}, nil
}

// dispatch records groups workgroups, in one dimension or, past maxGroups,
// two (the kernels number them wg.x + wg.y·num_workgroups.x and skip those
// past the end).
func (o *op) dispatch(groups int) {
	x, y := grid(groups)
	o.pass.Dispatch(o.kernel, o.bind, x, y, 1)
}

// grid lays groups workgroups out as x × y, x ≤ maxGroups.
func grid(groups int) (x, y int) {
	if groups <= maxGroups {
		return max(groups, 1), 1
	}
	return maxGroups, (groups + maxGroups - 1) / maxGroups
}

// values is how many f32 values binding b holds.
func values(b Binding) int {
	if b.Size > 0 {
		return b.Size / 4
	}
	if b.Buffer == nil {
		return 0
	}
	return (b.Buffer.Size() - b.Offset) / 4
}

// rowsFit checks that n rows of width values fit in binding b, named name.
func rowsFit(name string, b Binding, n, width int) error {
	if n < 0 || n*width > values(b) {
		return fmt.Errorf("gpu: %s holds %d values, not %d rows of %d", name, values(b), n, width)
	}
	return nil
}

// replaceAll is strings.ReplaceAll: a kernel's variant of another's source.
func replaceAll(s, old, new string) string { return strings.ReplaceAll(s, old, new) }

// kernelSource is a kernel's WGSL: its parameters, a struct of fields
// (binding 0, a uniform), its storage buffers, each "name: type" (bindings
// 1, 2, … in order), then body, which may say WG for the workgroup size
// and use wid, the workgroup's number in a grid.
func kernelSource(params string, buffers []string, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "struct Params {\n%s\n}\n@group(0) @binding(0) var<uniform> p: Params;\n", params)
	for i, buf := range buffers {
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> %s;\n", i+1, buf)
	}
	fmt.Fprintf(&b, "const WG = %du;\n", workgroup)
	b.WriteString(gridFn)
	b.WriteString(body)
	return b.String()
}

// gridFn numbers a workgroup of a grid (see op.dispatch).
const gridFn = `
fn groupIndex(wg: vec3u, nwg: vec3u) -> u32 { return wg.x + wg.y * nwg.x; }
`

// reduceFns add (reduceSum) or take the maximum of (reduceMax) the
// workgroup's values v, in a tree in workgroup memory, for every
// invocation to read; the last barrier lets part be used again.
const reduceFns = `
var<workgroup> part: array<f32, WG>;
fn reduceSum(li: u32, v: f32) -> f32 {
  part[li] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (li < k) { part[li] += part[li + k]; }
    workgroupBarrier();
  }
  let s = part[0];
  workgroupBarrier();
  return s;
}
fn reduceMax(li: u32, v: f32) -> f32 {
  part[li] = v;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k >>= 1u) {
    if (li < k) { part[li] = max(part[li], part[li + k]); }
    workgroupBarrier();
  }
  let s = part[0];
  workgroupBarrier();
  return s;
}
`
