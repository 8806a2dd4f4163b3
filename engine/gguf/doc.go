// Package gguf reads and writes GGUF files, the model container of ggml and
// llama.cpp (versions 2 and 3, little-endian).
//
// [Parse] reads a whole file held in memory. It is strict: every length,
// count, dimension and offset is checked against the bytes that remain before
// it is used, so a small hostile file cannot make the reader allocate much or
// panic, and every rule of the format (unique keys and tensor names, known
// types, aligned non-overlapping tensors inside the data section) is checked
// before a [File] is returned. Tensor data is never copied: each
// [TensorInfo.Data] is a sub-slice of the bytes given to Parse, so the caller
// must keep those bytes unchanged while the File is in use. Metadata values
// are decoded into Go values; arrays become typed slices ([]float32, []int32,
// []string, ...) so a 150k-entry vocabulary costs little more than its text.
//
// [Builder] writes files. It exists for tests and tools that need small
// models of any architecture and tensor type; Parse(Builder.Bytes()) gives
// back exactly what was added.
//
// Layout of a file (all integers little-endian):
//
//	magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
//	kv_count × (string key | u32 value type | value)
//	tensor_count × (string name | u32 n_dims | n_dims × u64 ne | u32 type | u64 offset)
//	padding to general.alignment (default 32)
//	data section: each tensor at its offset, aligned
//
// where a string is a u64 byte length and the bytes, and an array value is a
// u32 element type, a u64 count and the elements.
package gguf
