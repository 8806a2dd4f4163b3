//go:build js

package webgpu

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// spinSource adds to y[i], spins words of a linear congruential sequence
// seeded by y[i] itself: each dispatch depends on the one before, and
// takes long enough on SwiftShader (milliseconds) for its span to be
// longer than a rounded timestamp's step.
const spinSource = `
struct Params { steps: u32, n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) {
	if (id.x >= p.n) { return; }
	var s = y[id.x];
	for (var k = 0u; k < p.steps; k++) {
		s = s * 1664525u + 1013904223u;
	}
	y[id.x] = s;
}
`

// spin is spinSource's arithmetic.
func spin(s uint32, steps int) uint32 {
	for range steps {
		s = s*1664525 + 1013904223
	}
	return s
}

// TestSubmitTimed: a timed submission computes what Submit does, and
// gives each dispatch a span of positive length, in the order they ran.
func TestSubmitTimed(t *testing.T) {
	h := openHost(t, Options{})
	if !h.Adapter().TimestampQuery {
		t.Skip("the device has no timestamp-query")
	}
	const n, steps, dispatches = 4096, 4000, 3
	k, err := h.NewKernel("spin", spinSource, "main")
	require.NoError(t, err)
	pass, err := gpu.NewPass(h, 1)
	require.NoError(t, err)
	t.Cleanup(pass.Destroy)
	params, err := pass.Reserve()
	require.NoError(t, err)
	params.SetU32(0, steps)
	params.SetU32(1, n)
	y, err := h.NewBuffer("y", 4*n, gpu.UsageReadback)
	require.NoError(t, err)
	init := make([]uint32, n)
	for i := range init {
		init[i] = uint32(i)
	}
	h.Write(y, 0, words(init...))
	b, err := h.NewBindings(k, params.Binding(), gpu.Binding{Buffer: y})
	require.NoError(t, err)
	pass.Dispatch(k, b, n/64, 1, 1) // writes the parameters' slot
	require.NoError(t, pass.Submit())

	ds := make([]gpu.Dispatch, dispatches)
	for i := range ds {
		ds[i] = gpu.Dispatch{Kernel: k, Bindings: b, X: n / 64, Y: 1, Z: 1}
	}
	spans, err := h.SubmitTimed(ds)
	require.NoError(t, err)
	require.Len(t, spans, dispatches)
	for i, s := range spans {
		t.Logf("dispatch %d: %d → %d ns (%v)", i, s.Begin, s.End, s.Duration())
		require.Greater(t, s.End, s.Begin, "dispatch %d's span", i)
		if i > 0 {
			require.GreaterOrEqual(t, s.Begin, spans[i-1].End, "dispatch %d begins after dispatch %d ends", i, i-1)
		}
	}

	got := make([]byte, 4*n)
	require.NoError(t, h.Read(y, 0, got))
	for i := range n {
		require.Equal(t, spin(uint32(i), (1+dispatches)*steps), binary.LittleEndian.Uint32(got[4*i:]), "y[%d]", i)
	}
}

// TestSubmitTimedWithoutTimestamps: a device without timestamp-query
// refuses to time, and a Profile refuses to be made to time over it.
func TestSubmitTimedWithoutTimestamps(t *testing.T) {
	h := openHost(t, Options{WithoutFeatures: []string{"timestamp-query"}})
	require.False(t, h.Adapter().TimestampQuery)
	_, err := h.SubmitTimed(nil)
	require.ErrorIs(t, err, gpu.ErrUnsupported)
	p := gpu.NewProfile(h)
	require.ErrorIs(t, p.SetTimed(true), gpu.ErrUnsupported)
	require.False(t, p.Timed())
}
