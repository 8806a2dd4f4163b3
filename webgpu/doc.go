//go:build js

// Package webgpu is engine/gpu's Host over the browser's WebGPU
// (navigator.gpu, through syscall/js): in a page or a Web Worker served
// from a secure context. Only the browser build links it.
package webgpu
