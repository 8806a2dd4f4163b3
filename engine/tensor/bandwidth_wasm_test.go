//go:build js && wasm

package tensor

import (
	"syscall/js"
	"testing"

	wg "github.com/wasmlm/wasmlm/internal/wasmgen"
)

// readBytes is what BenchmarkReadBandwidthSIMD reads: four times the
// largest last-level cache it is run on (32 MB), as BenchmarkMatVecStreamed
// reads at least three times it.
const readBytes = 128 << 20

// readModule is a WebAssembly module exporting read(p, n), which adds up
// the n bytes at p (a multiple of 128) as i32x4 lanes in eight
// independent sums, 128 bytes an iteration, and stores their XOR at
// address 0: the least work a kernel can do on each byte it streams.
func readModule() ([]byte, error) {
	m := wg.NewModule()
	m.ImportMemory("env", "memory", readBytes/65536+1)
	f := m.Func("read", []wg.ValType{wg.I32, wg.I32}, nil)
	p, n := f.Param(0), f.Param(1)
	end := f.Local(wg.I32)
	var acc [8]wg.Local
	for i := range acc {
		acc[i] = f.Local(wg.V128)
	}
	f.Set(end, wg.I32Add(wg.Get(p), wg.Get(n)))
	f.Block(func() {
		f.Loop(func() {
			f.BrIf(1, wg.I32GeS(wg.Get(p), wg.Get(end)))
			for i, a := range acc {
				f.Set(a, wg.I32x4Add(wg.Get(a), wg.V128Load(wg.Get(p), uint32(16*i))))
			}
			f.Set(p, wg.I32Add(wg.Get(p), wg.I32Const(128)))
			f.Br(0)
		})
	})
	x := wg.Get(acc[0])
	for _, a := range acc[1:] {
		x = wg.V128Xor(x, wg.Get(a))
	}
	f.V128Store(wg.I32Const(0), 0, x)
	return m.Bytes()
}

// BenchmarkReadBandwidthSIMD reads 128 MB with WebAssembly SIMD128 loads
// (readModule, in a memory of its own) in the engine that runs the test:
// what one core can stream from memory there, the bound of
// BenchmarkMatVecStreamed in the same engine (BenchmarkReadBandwidth is
// the native one). Run it in Chromium with tools/wasmbrowser.
func BenchmarkReadBandwidthSIMD(b *testing.B) {
	code, err := readModule()
	if err != nil {
		b.Fatal(err)
	}
	wasm := js.Global().Get("WebAssembly") // the host running this test has it
	bytes := js.Global().Get("Uint8Array").New(len(code))
	js.CopyBytesToJS(bytes, code)
	mem := wasm.Get("Memory").New(map[string]any{"initial": readBytes/65536 + 1})
	inst := wasm.Get("Instance").New(wasm.Get("Module").New(bytes),
		map[string]any{"env": map[string]any{"memory": mem}})
	js.Global().Get("Uint8Array").New(mem.Get("buffer")).Call("fill", 1) // touch every page
	read := inst.Get("exports").Get("read")
	b.SetBytes(readBytes)
	for b.Loop() {
		read.Invoke(128, readBytes)
	}
}
