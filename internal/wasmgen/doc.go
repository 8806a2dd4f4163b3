// Package wasmgen writes WebAssembly binary modules: the section layout,
// LEB128 integers, and the instructions wasmlm's SIMD kernels use, including
// the 0xFD-prefixed SIMD128 ones.
//
// It exists so that the kernels of internal/simdgen can be written as Go
// code that emits instructions and reproduced by `go generate` with nothing
// but the Go toolchain. The alternative, WebAssembly text assembled by wabt's
// wat2wasm or binaryen's wasm-as, would need a C++ tool installed in every
// developer's and CI machine's PATH at a version that knows SIMD128, and the
// text format has no loops or functions at assembly time: the kernels unroll
// four rows and up to eight sub-blocks, which in text is hundreds of
// near-identical lines to keep in step by hand. In Go a kernel is a loop over
// the rows that calls the same emitting function four times.
//
// A function body is built from expressions ([Expr], functions that emit code
// leaving one value on the operand stack) and statements (methods of [Func]
// such as [Func.Set], [Func.Store] and [Func.Loop]), so kernels read as
// nested calls named after the instructions (I32x4Add(a, b)) rather than as
// stack code. Nothing checks types as it emits: a module is validated by the
// engine that loads it (the tests instantiate every module they build).
//
// Reference: the WebAssembly Core Specification 2.0, chapter 5 (Binary
// Format), which includes the fixed-width SIMD instructions.
package wasmgen
