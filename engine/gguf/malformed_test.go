package gguf_test

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Cutting a file anywhere must give ErrTruncated, never a panic or a File.
// smallFile has no trailing padding, so every proper prefix is too short.
func TestParseEveryTruncation(t *testing.T) {
	data := smallFile(t)
	_, err := gguf.Parse(data)
	require.NoError(t, err)
	for n := range len(data) {
		_, err := gguf.Parse(data[:n:n])
		require.ErrorIs(t, err, gguf.ErrTruncated, "prefix of %d bytes", n)
	}
}

func TestParseMalformed(t *testing.T) {
	offsetOf := func(data []byte, name string) uint64 {
		return binary.LittleEndian.Uint64(data[tensorField(t, data, name, "offset"):])
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, d []byte)
		is     error
		want   []string // substrings of the message
	}{
		{"magic", func(t *testing.T, d []byte) { d[0] = 'X' }, gguf.ErrFormat, []string{`magic "XGUF"`}},
		{"version 1", func(t *testing.T, d []byte) { put32(d, 4, 1) }, gguf.ErrUnsupported, []string{"GGUF v1 is not supported"}},
		{"big-endian v3", func(t *testing.T, d []byte) { binary.BigEndian.PutUint32(d[4:], 3) }, gguf.ErrUnsupported, []string{"big-endian GGUF is not supported"}},
		{"big-endian v2", func(t *testing.T, d []byte) { binary.BigEndian.PutUint32(d[4:], 2) }, gguf.ErrUnsupported, []string{"big-endian GGUF is not supported"}},
		{"version 4", func(t *testing.T, d []byte) { put32(d, 4, 4) }, gguf.ErrUnsupported, []string{"GGUF v4 is not supported"}},
		{"version 0", func(t *testing.T, d []byte) { put32(d, 4, 0) }, gguf.ErrUnsupported, []string{"GGUF v0 is not supported"}},
		{"tensor count 2^40", func(t *testing.T, d []byte) { put64(d, 8, 1<<40) }, gguf.ErrTruncated, []string{"tensor count is 1099511627776", "at byte 8"}},
		{"KV count 2^40", func(t *testing.T, d []byte) { put64(d, 16, 1<<40) }, gguf.ErrTruncated, []string{"KV count is 1099511627776", "at byte 16"}},
		{"key length 2^32", func(t *testing.T, d []byte) { put64(d, keyAt(t, d, "kv.other")-8, 1<<32) }, gguf.ErrTruncated, []string{"KV 2:", "key length 4294967296 exceeds"}},
		{"empty key", func(t *testing.T, d []byte) { put64(d, keyAt(t, d, "kv.other")-8, 0) }, gguf.ErrFormat, []string{"KV 2:", "empty key"}},
		{"key not UTF-8", func(t *testing.T, d []byte) { d[keyAt(t, d, "kv.other")+3] = 0xff }, gguf.ErrFormat, []string{`key "kv.\xffther" is not valid UTF-8`}},
		{"duplicate key", func(t *testing.T, d []byte) { copy(d[keyAt(t, d, "kv.words"):], "kv.flags") }, gguf.ErrFormat, []string{`duplicate key "kv.flags" (first is KV 3)`}},
		{"unknown value type", func(t *testing.T, d []byte) { put32(d, keyAt(t, d, "kv.other")+8, 13) }, gguf.ErrUnsupported, []string{`key "kv.other"`, "unknown value type 13"}},
		{"unknown array element type", func(t *testing.T, d []byte) { put32(d, keyAt(t, d, "kv.flags")+12, 99) }, gguf.ErrUnsupported, []string{`key "kv.flags"`, "unknown array element type 99"}},
		{"bool 2", func(t *testing.T, d []byte) { d[keyAt(t, d, "kv.flag")+7+4] = 2 }, gguf.ErrFormat, []string{`key "kv.flag"`, "bool value 2 is not 0 or 1"}},
		{"bool array element 2", func(t *testing.T, d []byte) { d[keyAt(t, d, "kv.flags")+8+4+4+8+1] = 7 }, gguf.ErrFormat, []string{`key "kv.flags"`, "element 1: bool value 7 is not 0 or 1"}},
		{"string length 2^32", func(t *testing.T, d []byte) {
			put64(d, keyAt(t, d, "general.architecture")+20+4, 1<<32)
		}, gguf.ErrTruncated, []string{`key "general.architecture"`, "string length 4294967296 exceeds"}},
		{"array count 2^60", func(t *testing.T, d []byte) { put64(d, keyAt(t, d, "kv.flags")+8+4+4, 1<<60) }, gguf.ErrTruncated, []string{`key "kv.flags"`, "count of array of bool is 1152921504606846976"}},
		{"string element length 2^40", func(t *testing.T, d []byte) {
			// kv.words = ["a", "bc"]: key, type, elem type, count, then "a" (8+1 bytes), then "bc".
			put64(d, keyAt(t, d, "kv.words")+8+4+4+8+9, 1<<40)
		}, gguf.ErrTruncated, []string{`key "kv.words"`, "element 1", "string length 1099511627776 exceeds"}},
		{"duplicate tensor", func(t *testing.T, d []byte) { copy(d[tensorField(t, d, "weight.b", "n_dims")-1:], "a") }, gguf.ErrFormat, []string{"tensor 1", `duplicate tensor name "weight.a" (first is tensor 0)`}},
		{"n_dims 0", func(t *testing.T, d []byte) { put32(d, tensorField(t, d, "weight.b", "n_dims"), 0) }, gguf.ErrFormat, []string{`tensor 1 "weight.b"`, "n_dims 0 is not in 1..4"}},
		{"n_dims 5", func(t *testing.T, d []byte) { put32(d, tensorField(t, d, "weight.a", "n_dims"), 5) }, gguf.ErrFormat, []string{`tensor 0 "weight.a"`, "n_dims 5 is not in 1..4"}},
		{"ne 0", func(t *testing.T, d []byte) { put64(d, tensorField(t, d, "weight.a", "ne1"), 0) }, gguf.ErrFormat, []string{`"weight.a"`, "ne[1] is 0"}},
		{"element count overflow", func(t *testing.T, d []byte) {
			put64(d, tensorField(t, d, "weight.a", "ne0"), 1<<32)
			put64(d, tensorField(t, d, "weight.a", "ne1"), 1<<32)
		}, gguf.ErrFormat, []string{`"weight.a"`, "element count overflows at ne[1] = 4294967296"}},
		{"removed tensor type", func(t *testing.T, d []byte) { put32(d, tensorField(t, d, "weight.b", "type"), 4) }, gguf.ErrUnsupported, []string{`"weight.b"`, "unknown tensor type 4"}},
		{"unknown tensor type", func(t *testing.T, d []byte) { put32(d, tensorField(t, d, "weight.b", "type"), 1000) }, gguf.ErrUnsupported, []string{`"weight.b"`, "unknown tensor type 1000"}},
		{"partial block", func(t *testing.T, d []byte) { put64(d, tensorField(t, d, "weight.a", "ne0"), 33) }, gguf.ErrFormat, []string{`"weight.a"`, "ne[0] = 33 is not a multiple of Q8_0's block size 32"}},
		{"row 4 GiB", func(t *testing.T, d []byte) { put64(d, tensorField(t, d, "weight.b", "ne0"), 1<<30) }, gguf.ErrTruncated, []string{`"weight.b"`, "F32 row of 1073741824 elements is larger than the"}},
		{"tensor 68 GiB", func(t *testing.T, d []byte) { put64(d, tensorField(t, d, "weight.a", "ne1"), 1<<30) }, gguf.ErrTruncated, []string{`"weight.a"`, "Q8_0 tensor of 68719476736 elements is larger than the"}},
		{"offset 2^62", func(t *testing.T, d []byte) { put64(d, tensorField(t, d, "weight.b", "offset"), 1<<62) }, gguf.ErrTruncated, []string{`"weight.b"`, "offset 4611686018427387904 is past the end"}},
		{"offset misaligned", func(t *testing.T, d []byte) {
			put64(d, tensorField(t, d, "weight.b", "offset"), offsetOf(d, "weight.b")+4)
		}, gguf.ErrFormat, []string{`tensor "weight.b" offset`, "is not a multiple of the alignment 32"}},
		{"tensor past the end", func(t *testing.T, d []byte) {
			put64(d, tensorField(t, d, "weight.b", "offset"), offsetOf(d, "weight.b")+32)
		}, gguf.ErrTruncated, []string{`tensor "weight.b" bytes`, "end past"}},
		{"tensors overlap", func(t *testing.T, d []byte) {
			put64(d, tensorField(t, d, "weight.b", "offset"), 128) // weight.a is [0, 136)
		}, gguf.ErrFormat, []string{`tensors "weight.a" [0, 136) and "weight.b" [128, 160) overlap`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := smallFile(t)
			tt.mutate(t, data)
			_, err := gguf.Parse(data)
			require.ErrorIs(t, err, tt.is)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseBadAlignment(t *testing.T) {
	tests := []struct {
		name  string
		value gguf.Value
		want  string
	}{
		{"string", gguf.ValueOf("32"), "general.alignment is string, want uint32"},
		{"uint64", gguf.ValueOf(uint64(32)), "general.alignment is uint64, want uint32"},
		{"zero", gguf.ValueOf(uint32(0)), "general.alignment 0 is not a power of two"},
		{"48", gguf.ValueOf(uint32(48)), "general.alignment 48 is not a power of two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := gguf.NewBuilder()
			b.Set(gguf.AlignmentKey, tt.value)
			data, err := b.Bytes()
			require.NoError(t, err)
			_, err = gguf.Parse(data)
			require.ErrorIs(t, err, gguf.ErrFormat)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestParseNestingLimit(t *testing.T) {
	build := func(depth int) []byte {
		r := header(3, 0, 1).str("deep").u32(uint32(gguf.TypeArray))
		for range depth - 1 {
			r.u32(uint32(gguf.TypeArray)).u64(1)
		}
		r.u32(uint32(gguf.TypeUint8)).u64(0)
		return r.Bytes()
	}
	_, err := gguf.Parse(build(8))
	require.NoError(t, err)
	_, err = gguf.Parse(build(9))
	require.ErrorIs(t, err, gguf.ErrUnsupported)
	assert.Contains(t, err.Error(), "arrays nested more than 8 deep")
}

// A tensor-less file may omit the padding before its (empty) data section,
// as llama.cpp's vocab files do; a file with tensors may not.
func TestParseHeaderOnly(t *testing.T) {
	data := header(3, 0, 1).str("k").u32(uint32(gguf.TypeUint8)).Bytes()
	data = append(data, 5)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	assert.Equal(t, len(data), f.DataOffset)
	assert.Empty(t, f.Tensors())

	data = header(3, 1, 0).str("w").u32(1).u64(1).u32(uint32(tensor.F32)).u64(0).Bytes()
	_, err = gguf.Parse(data)
	require.ErrorIs(t, err, gguf.ErrTruncated)
	assert.Contains(t, err.Error(), "file ends before the data section at byte 64")
}

// hostile are 100-byte files that claim far more than they hold.
func hostile() map[string][]byte {
	pad := func(r *raw) []byte {
		b := r.Bytes()
		return append(b, make([]byte, 100-len(b))...)
	}
	kv := func(key string, typ gguf.ValueType) *raw { return header(3, 0, 1).str(key).u32(uint32(typ)) }
	return map[string][]byte{
		"2^40 KVs":              pad(header(3, 0, 1<<40)),
		"2^40 tensors":          pad(header(3, 1<<40, 0)),
		"4 GiB string":          pad(kv("s", gguf.TypeString).u64(1 << 32)),
		"4 GiB key":             pad(header(3, 0, 1).u64(1 << 32)),
		"2^60 uint8 array":      pad(kv("a", gguf.TypeArray).u32(uint32(gguf.TypeUint8)).u64(1 << 60)),
		"2^60 string array":     pad(kv("a", gguf.TypeArray).u32(uint32(gguf.TypeString)).u64(1 << 60)),
		"2^60 array array":      pad(kv("a", gguf.TypeArray).u32(uint32(gguf.TypeArray)).u64(1 << 60)),
		"4 GiB string in array": pad(kv("a", gguf.TypeArray).u32(uint32(gguf.TypeString)).u64(2).u64(1 << 32)),
		"4 GiB tensor": pad(header(3, 1, 0).str("w").u32(2).u64(32).u64(1 << 25).
			u32(uint32(tensor.F32)).u64(0)),
		"2^62-element tensor": pad(header(3, 1, 0).str("w").u32(2).u64(1 << 31).u64(1 << 31).
			u32(uint32(tensor.Q8_0)).u64(0)),
	}
}

// Each hostile file fails, and parsing it allocates a few hundred bytes at
// most, not memory in proportion to what it claims.
func TestParseHostileAllocatesLittle(t *testing.T) {
	const runs = 50
	const budget = 64 << 10 // bytes per parse
	for name, data := range hostile() {
		t.Run(name, func(t *testing.T) {
			require.Len(t, data, 100)
			_, err := gguf.Parse(data)
			require.ErrorIs(t, err, gguf.ErrTruncated)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range runs {
				if _, err := gguf.Parse(data); !errors.Is(err, gguf.ErrTruncated) {
					t.Fatalf("got %v, want ErrTruncated", err)
				}
			}
			runtime.ReadMemStats(&after)
			perParse := (after.TotalAlloc - before.TotalAlloc) / runs
			assert.Less(t, perParse, uint64(budget), "bytes allocated per parse")
		})
	}
}
