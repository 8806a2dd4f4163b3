//go:build js

// Package webgpu is engine/gpu's Host over the browser's WebGPU
// (navigator.gpu, through syscall/js), in a page or a Web Worker served from
// a secure context; only the browser build links it.
//
// Open requests the adapter and a device with the adapter's own limits for
// what the kernels size by (buffers, storage bindings, workgroup memory and
// invocations) and the features subgroups, shader-f16 and timestamp-query
// where the adapter has them. Calls that wait for the device (Open,
// NewBuffer, NewKernel, NewBindings, Read) block the calling goroutine until
// the Promise settles, so they must not be made from inside a js.FuncOf
// callback, which would keep the Promise from ever settling.
//
// A lost device (GPUDevice.lost: destroy, a driver reset) or an uncaptured
// WebGPU error makes Err non-nil, an error wrapping gpu.ErrDeviceLost with
// the browser's message, and every later call fails with it; nothing here
// panics on a JavaScript exception.
package webgpu
