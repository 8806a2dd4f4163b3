//go:build js

package webgpu

import (
	"encoding/binary"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// axpySource computes y = a·x + y over n words, in integers so the
// expected values are exact.
const axpySource = `
struct Params { a: u32, n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
	if (id.x < p.n) {
		y[id.x] = p.a * x[id.x] + y[id.x];
	}
}
`

// subgroupSource writes, for each invocation, subgroupAdd(1) (the number
// of active invocations in its subgroup) and the subgroup size.
const subgroupSource = `
enable subgroups;
@group(0) @binding(0) var<storage, read_write> out: array<vec2u>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u, @builtin(subgroup_size) size: u32) {
	out[id.x] = vec2u(subgroupAdd(1u), size);
}
`

// axpy binds axpySource to new buffers over n words: x[i] = i, y[i] = 7.
func axpy(t *testing.T, h *Host, pass *gpu.Pass, n int) (k gpu.Kernel, b gpu.Bindings, y gpu.Buffer) {
	t.Helper()
	k, err := gpu.NewLibrary(h).Kernel("axpy", axpySource, "main")
	require.NoError(t, err)
	x, err := h.NewBuffer("x", 4*n, gpu.UsageStorage|gpu.UsageCopyDst)
	require.NoError(t, err)
	y, err = h.NewBuffer("y", 4*n, gpu.UsageReadback)
	require.NoError(t, err)
	xs, ys := make([]uint32, n), make([]uint32, n)
	for i := range n {
		xs[i], ys[i] = uint32(i), 7
	}
	h.Write(x, 0, words(xs...))
	h.Write(y, 0, words(ys...))
	params, err := pass.Reserve()
	require.NoError(t, err)
	params.SetU32(0, 3)
	params.SetU32(1, uint32(n))
	b, err = h.NewBindings(k, params.Binding(), gpu.Binding{Buffer: x}, gpu.Binding{Buffer: y})
	require.NoError(t, err)
	return k, b, y
}

// TestKernel: a compute kernel's results, twice in one submission (each
// dispatch sees the one before) and once more in the next, with its
// parameters in a Pass's uniform arena.
func TestKernel(t *testing.T) {
	h := openHost(t, Options{})
	pass, err := gpu.NewPass(h, 4)
	require.NoError(t, err)
	const n = 1000
	k, b, y := axpy(t, h, pass, n)
	pass.Dispatch(k, b, (n+63)/64, 1, 1)
	pass.Dispatch(k, b, (n+63)/64, 1, 1)
	require.NoError(t, pass.Submit())
	pass.Dispatch(k, b, (n+63)/64, 1, 1)
	require.NoError(t, pass.Submit())

	got := make([]byte, 4*n)
	require.NoError(t, h.Read(y, 0, got))
	for i := range n {
		want := uint32(7 + 3*3*i) // three times y += 3·i
		require.Equal(t, want, binary.LittleEndian.Uint32(got[4*i:]), "y[%d]", i)
	}
}

// TestSubgroupAdd: where the device has subgroups, subgroupAdd sums over
// whole subgroups of a size within the adapter's range.
func TestSubgroupAdd(t *testing.T) {
	h := openHost(t, Options{})
	a := h.Adapter()
	if !a.Subgroups {
		t.Skip("the device has no subgroups")
	}
	k, err := h.NewKernel("subgroups", subgroupSource, "main")
	require.NoError(t, err)
	out, err := h.NewBuffer("out", 8*128, gpu.UsageReadback)
	require.NoError(t, err)
	b, err := h.NewBindings(k, gpu.Binding{Buffer: out})
	require.NoError(t, err)
	require.NoError(t, h.Submit([]gpu.Dispatch{{Kernel: k, Bindings: b, X: 2, Y: 1, Z: 1}}))
	got := make([]byte, 8*128)
	require.NoError(t, h.Read(out, 0, got))
	for i := range 128 {
		sum, size := binary.LittleEndian.Uint32(got[8*i:]), binary.LittleEndian.Uint32(got[8*i+4:])
		require.Equal(t, size, sum, "invocation %d: subgroupAdd(1) over a whole subgroup", i)
		require.GreaterOrEqual(t, int(size), a.SubgroupMin, "invocation %d", i)
		require.LessOrEqual(t, int(size), a.SubgroupMax, "invocation %d", i)
	}
}

// TestCompileError: a WGSL error is reported with its line and column,
// and a missing entry point with the device's message; the device keeps
// working.
func TestCompileError(t *testing.T) {
	h := openHost(t, Options{})
	_, err := h.NewKernel("broken", "@compute @workgroup_size(1)\nfn main() {\n\tlet x = ;\n}\n", "main")
	require.ErrorContains(t, err, `kernel "broken" does not compile`)
	require.ErrorContains(t, err, "3:")
	t.Log(err)

	_, err = h.NewKernel("axpy", axpySource, "nowhere")
	require.ErrorContains(t, err, `entry point "nowhere"`)
	t.Log(err)
	require.NoError(t, h.Err())

	_, err = h.NewKernel("axpy", axpySource, "main")
	require.NoError(t, err)
}

// TestDeviceLost: after device.destroy(), Read, Submit and the rest fail
// with gpu.ErrDeviceLost, and nothing panics.
func TestDeviceLost(t *testing.T) {
	h := openHost(t, Options{})
	pass, err := gpu.NewPass(h, 1)
	require.NoError(t, err)
	k, b, y := axpy(t, h, pass, 64)

	h.device.Call("destroy")
	require.ErrorIs(t, h.Read(y, 0, make([]byte, 16)), gpu.ErrDeviceLost)
	require.ErrorIs(t, h.Submit([]gpu.Dispatch{{Kernel: k, Bindings: b, X: 1, Y: 1, Z: 1}}), gpu.ErrDeviceLost)
	pass.Dispatch(k, b, 1, 1, 1)
	require.ErrorIs(t, pass.Submit(), gpu.ErrDeviceLost)
	h.Write(y, 0, words(1))
	_, err = h.NewBuffer("after", 16, gpu.UsageStorage)
	require.ErrorIs(t, err, gpu.ErrDeviceLost)
	_, err = h.NewKernel("axpy", axpySource, "main")
	require.ErrorIs(t, err, gpu.ErrDeviceLost)
	_, err = h.NewBindings(k, gpu.Binding{Buffer: y})
	require.ErrorIs(t, err, gpu.ErrDeviceLost)
	require.ErrorIs(t, h.Err(), gpu.ErrDeviceLost)
	y.Destroy()
	h.Close()
	require.Equal(t, 0, h.LiveBuffers())
}

// TestUncapturedError: an error the device reports outside any error
// scope makes the host unusable, with the device's message.
func TestUncapturedError(t *testing.T) {
	h := openHost(t, Options{})
	y, err := h.NewBuffer("y", 16, gpu.UsageReadback)
	require.NoError(t, err)
	init := js.Global().Get("Object").New()
	init.Set("error", js.Global().Get("GPUValidationError").New("a test's validation error"))
	h.device.Call("dispatchEvent", js.Global().Get("GPUUncapturedErrorEvent").New("uncapturederror", init))

	require.ErrorIs(t, h.Err(), gpu.ErrDeviceLost)
	require.ErrorContains(t, h.Err(), "a test's validation error")
	require.ErrorIs(t, h.Read(y, 0, make([]byte, 4)), gpu.ErrDeviceLost)
	require.ErrorIs(t, h.Submit(nil), gpu.ErrDeviceLost)
}

// aliasSource binds two writable arrays, which must not be the same
// bytes of one buffer.
const aliasSource = `
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
@compute @workgroup_size(1)
fn main() { a[0] = b[0] + 1u; }
`

// TestValidationErrorInSubmit: a submission the device rejects (writable
// bindings aliasing one buffer) is an uncaptured error, which the next
// Read returns (the device reports it before the read's map completes)
// and every call after it.
func TestValidationErrorInSubmit(t *testing.T) {
	h := openHost(t, Options{})
	k, err := h.NewKernel("alias", aliasSource, "main")
	require.NoError(t, err)
	buf, err := h.NewBuffer("buf", 16, gpu.UsageReadback)
	require.NoError(t, err)
	b, err := h.NewBindings(k, gpu.Binding{Buffer: buf}, gpu.Binding{Buffer: buf})
	require.NoError(t, err)
	require.NoError(t, h.Submit([]gpu.Dispatch{{Kernel: k, Bindings: b, X: 1, Y: 1, Z: 1}}))
	err = h.Read(buf, 0, make([]byte, 4))
	require.ErrorIs(t, err, gpu.ErrDeviceLost)
	require.ErrorContains(t, err, "aliasing")
	require.ErrorIs(t, h.Submit(nil), gpu.ErrDeviceLost)
}

// TestClose: Close destroys every live buffer and the device; Destroy
// twice is harmless, and so is Close.
func TestClose(t *testing.T) {
	h := openHost(t, Options{})
	var bufs []gpu.Buffer
	for range 3 {
		b, err := h.NewBuffer("b", 64, gpu.UsageReadback)
		require.NoError(t, err)
		bufs = append(bufs, b)
	}
	require.NoError(t, h.Read(bufs[0], 0, make([]byte, 64)))
	bufs[1].Destroy()
	bufs[1].Destroy()
	require.Equal(t, 2, h.LiveBuffers())
	require.ErrorContains(t, h.Read(bufs[1], 0, make([]byte, 4)), "destroyed")

	h.Close()
	require.Equal(t, 0, h.LiveBuffers())
	require.ErrorIs(t, h.Err(), gpu.ErrDeviceLost)
	require.ErrorIs(t, h.Read(bufs[0], 0, make([]byte, 4)), gpu.ErrDeviceLost)
	bufs[0].Destroy()
	h.Close()
}
