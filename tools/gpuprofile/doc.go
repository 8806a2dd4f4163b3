// Command gpuprofile is the GPU half of `make bench BENCH=webgpu`: built
// with GOOS=js GOARCH=wasm, it runs in a Web Worker of Chromium (tools/benchrun
// starts it there) and reports, as JSON on stdout, what the page's JS API
// does not show of a model's forward pass on the worker's WebGPU adapter:
// the adapter, the bytes of weights the products read per token, the
// submissions and dispatches of the prompt and of each generated token,
// and — where the device has timestamp-query — each kernel's time on the
// device, per token.
//
//	gpuprofile -m MODEL.gguf [-prompt 128] [-n 8] [-timed]
//
// It makes the model's device (gpu.NewDevice) over a gpu.Profile of the
// worker's webgpu.Host, so the forward pass it counts is the one the page
// runs. After a first token (which uploads the weights and compiles the
// kernels, as the page's load does), one greedy generation is counted —
// its prompt and decode tokens/s are reported too — and with -timed timed
// dispatch by dispatch, each in a compute pass of its own and waited for,
// so that its own speed is then not the forward pass's.
package main
