//go:build js

package webgpu

import (
	"encoding/binary"
	"errors"
	"os"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// openHost opens a device, closed when the test ends. Without WebGPU the
// test skips, but not under tools/wasmbrowser (WASMLM_WASMBROWSER set),
// whose Chromium has SwiftShader's adapter: there it fails.
func openHost(t *testing.T, opts Options) *Host {
	t.Helper()
	h, err := Open(opts)
	if err != nil {
		if errors.Is(err, gpu.ErrUnsupported) && os.Getenv("WASMLM_WASMBROWSER") == "" {
			t.Skipf("%v (the WebGPU tests run in Chromium: make test-gpu)", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func words(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

// TestAdapter: SwiftShader's adapter is a fallback adapter with 4-wide
// subgroups and no shader-f16, and the device has the adapter's limits,
// not WebGPU's defaults.
func TestAdapter(t *testing.T) {
	h := openHost(t, Options{})
	a := h.Adapter()
	t.Logf("%+v", a)
	require.Positive(t, a.MaxBufferSize)
	require.Positive(t, a.MaxComputeWorkgroupsPerDimension)
	if a.Architecture != "swiftshader" {
		t.Skipf("not SwiftShader (%s/%s): nothing more is known of it", a.Vendor, a.Architecture)
	}
	require.True(t, a.Fallback, "isFallbackAdapter")
	require.True(t, a.Subgroups, "subgroups")
	require.Equal(t, 4, a.SubgroupMin)
	require.Equal(t, 4, a.SubgroupMax)
	require.False(t, a.F16, "shader-f16")
	require.True(t, a.TimestampQuery, "timestamp-query")
	require.Equal(t, 1<<30, a.MaxStorageBufferBindingSize, "the adapter's, not the default 128 MiB")
}

// TestWithoutFeatures: a feature left out is not requested, so a shader
// that enables it does not compile.
func TestWithoutFeatures(t *testing.T) {
	h := openHost(t, Options{WithoutFeatures: []string{"subgroups"}})
	require.False(t, h.Adapter().Subgroups)
	_, err := h.NewKernel("sum", subgroupSource, "main")
	require.ErrorContains(t, err, "does not compile")
}

// TestWriteRead: bytes written come back, at offsets and lengths that are
// not whole words of the staging copy, and the rest of a buffer reads as
// zeros; the staging buffer is kept between reads that fit it.
func TestWriteRead(t *testing.T) {
	h := openHost(t, Options{})
	b, err := h.NewBuffer("data", 1024, gpu.UsageReadback)
	require.NoError(t, err)
	first, second := words(1, 2, 3, 4), words(0xdeadbeef, 0x01020304)
	h.Write(b, 0, first)
	h.Write(b, 512, second)

	all := make([]byte, 1024)
	require.NoError(t, h.Read(b, 0, all))
	want := make([]byte, 1024)
	copy(want, first)
	copy(want[512:], second)
	require.Equal(t, want, all)
	staging := h.staging

	part := make([]byte, 6)
	require.NoError(t, h.Read(b, 512, part))
	require.Equal(t, second[:6], part)
	require.Same(t, staging, h.staging, "a read that fits reuses the staging buffer")
	require.Equal(t, 1, h.LiveBuffers())
}

// TestMisuse: what the device would reject is an error naming it, and
// the device keeps working.
func TestMisuse(t *testing.T) {
	h := openHost(t, Options{})
	b, err := h.NewBuffer("data", 64, gpu.UsageStorage|gpu.UsageCopyDst)
	require.NoError(t, err)

	require.ErrorContains(t, h.Read(b, 0, make([]byte, 4)), "lacks")
	r, err := h.NewBuffer("readable", 64, gpu.UsageReadback)
	require.NoError(t, err)
	require.ErrorContains(t, h.Read(r, 2, make([]byte, 4)), "offset")
	require.ErrorContains(t, h.Read(r, 60, make([]byte, 5)), "within the buffer")
	h.Write(b, 60, words(1, 2)) // past the end
	require.ErrorContains(t, h.Submit(nil), "Write: 8 bytes at offset 60")
	require.NoError(t, h.Submit(nil), "the error is returned once")

	_, err = h.NewBuffer("odd", 6, gpu.UsageStorage)
	require.ErrorContains(t, err, "multiple of 4")
	_, err = h.NewBuffer("invalid usage", 64, gpu.UsageMapRead|gpu.UsageStorage)
	require.Error(t, err)
	require.NotErrorIs(t, err, gpu.ErrOutOfMemory)
	require.NoError(t, h.Err())
	require.Equal(t, 2, h.LiveBuffers())
}

// TestBufferOverTheLimit: a buffer larger than the device's maxBufferSize
// is out of memory, and nothing is left allocated.
func TestBufferOverTheLimit(t *testing.T) {
	h := openHost(t, Options{})
	_, err := h.NewBuffer("huge", h.Adapter().MaxBufferSize+4, gpu.UsageStorage)
	require.ErrorIs(t, err, gpu.ErrOutOfMemory)
	require.ErrorContains(t, err, "maxBufferSize")
	require.Equal(t, 0, h.LiveBuffers())
	require.NoError(t, h.Err())
}

// TestNoWebGPU: without navigator.gpu, or with no adapter, Open says so
// with an error wrapping gpu.ErrUnsupported.
func TestNoWebGPU(t *testing.T) {
	navigator := js.Global().Get("navigator")
	if navigator.Type() != js.TypeObject {
		t.Skip("no navigator here")
	}
	define := func(v any) {
		desc := js.Global().Get("Object").New()
		desc.Set("value", v)
		desc.Set("configurable", true)
		js.Global().Get("Object").Call("defineProperty", navigator, "gpu", desc)
	}
	t.Cleanup(func() { js.Global().Get("Reflect").Call("deleteProperty", navigator, "gpu") })

	define(js.Undefined())
	_, err := Open(Options{})
	require.ErrorIs(t, err, gpu.ErrUnsupported)
	require.ErrorContains(t, err, "no navigator.gpu")

	noAdapter := js.Global().Call("eval", "({ requestAdapter: async () => null })")
	define(noAdapter)
	_, err = Open(Options{})
	require.ErrorIs(t, err, gpu.ErrUnsupported)
	require.ErrorContains(t, err, "no adapter")

	rejects := js.Global().Call("eval", "({ requestAdapter: async () => { throw new Error('blocked') } })")
	define(rejects)
	_, err = Open(Options{})
	require.ErrorIs(t, err, gpu.ErrUnsupported)
	require.ErrorContains(t, err, "blocked")
}

// TestJavaScriptException: an exception thrown inside an error scope is an
// error naming the call, and the scopes are popped all the same (popping
// once more finds the stack empty).
func TestJavaScriptException(t *testing.T) {
	h := openHost(t, Options{})
	h.device.Set("createBuffer", js.Global().Get("Function").New("throw new TypeError('a test exception')"))
	_, err := h.NewBuffer("thrown", 64, gpu.UsageStorage)
	js.Global().Get("Reflect").Call("deleteProperty", h.device, "createBuffer")
	require.ErrorContains(t, err, `buffer "thrown": TypeError: a test exception`)
	require.Equal(t, 0, h.LiveBuffers())

	_, err = await(h.device.Call("popErrorScope"))
	require.ErrorContains(t, err, "OperationError", "the error scopes NewBuffer pushed are all popped")
	_, err = h.NewBuffer("after", 64, gpu.UsageStorage)
	require.NoError(t, err)
	require.NoError(t, h.Err())
}
