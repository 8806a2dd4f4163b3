// Package gpu runs the engine's forward pass on a WebGPU device: WGSL
// kernels for every step (matrix–vector and matrix–matrix products over the
// weights in their stored, quantized form; norms; rotations; attention over
// a KV cache kept on the device; the gated units), the weights uploaded once,
// and each token's dispatches recorded into one command buffer. It is pure
// Go: the WebGPU calls go through a Host, which the browser build
// implements over navigator.gpu (package webgpu).
package gpu
