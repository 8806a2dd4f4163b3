// Package tensor holds weight matrices as views into model bytes and the
// matrix–vector kernels that read them.
//
// A [Matrix] never owns a copy of its weights: its Data slice points into the
// model file, quantized blocks stay quantized, and the kernels work on the
// blocks directly. Each storage type (F32, F16, Q8_0, ...) lives in a file of
// its own with its block layout, dequantization and dot product side by side,
// and is described by one entry in the traits table.
//
// Hosts are little-endian (amd64, arm64, wasm); the kernels read bytes in
// that order.
package tensor
