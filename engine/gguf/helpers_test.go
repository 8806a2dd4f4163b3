package gguf_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// readTestdata reads a file from testdata/.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return data
}

// pattern returns n bytes of a fixed non-repeating-looking pattern, so
// that tensor data mixed up between tensors would not compare equal.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

// tensorData returns pattern bytes for a tensor of type typ and dims,
// sized with tensor.RowBytes.
func tensorData(t testing.TB, typ tensor.Type, dims []uint64, seed byte) []byte {
	t.Helper()
	rowBytes, err := tensor.RowBytes(typ, int(dims[0]))
	require.NoError(t, err)
	rows := 1
	for _, d := range dims[1:] {
		rows *= int(d)
	}
	return pattern(rowBytes*rows, seed)
}

// smallFile builds the valid file the malformed-file tests mutate: a few
// KVs of distinct types and two tensors. The last tensor is 32 bytes, so
// the file has no trailing padding and every proper prefix is truncated.
func smallFile(t testing.TB) []byte {
	t.Helper()
	b := gguf.NewBuilder()
	b.Set("general.architecture", gguf.ValueOf("llama"))
	b.Set("kv.flag", gguf.ValueOf(true))
	b.Set("kv.other", gguf.ValueOf(uint32(7)))
	b.Set("kv.flags", gguf.ArrayOf([]bool{true, false, true}))
	b.Set("kv.words", gguf.ArrayOf([]string{"a", "bc"}))
	b.Set("kv.nested", gguf.ArrayOfArrays(gguf.ArrayOf([]int32{1, 2}), gguf.ArrayOf([]string{"x"})))
	b.AddTensor("weight.a", tensor.Q8_0, []uint64{64, 2}, tensorData(t, tensor.Q8_0, []uint64{64, 2}, 1))
	b.AddTensor("weight.b", tensor.F32, []uint64{8}, tensorData(t, tensor.F32, []uint64{8}, 2))
	data, err := b.Bytes()
	require.NoError(t, err)
	return data
}

// keyAt returns where key's bytes are in data; its u32 value type follows
// them and the value follows that.
func keyAt(t testing.TB, data []byte, key string) int {
	t.Helper()
	i := bytes.Index(data, []byte(key))
	require.Positive(t, i, "key %q", key)
	return i
}

// tensorField returns where a field of the tensor info of name is:
// "n_dims", "ne0", "ne1", "type" or "offset".
func tensorField(t testing.TB, data []byte, name, field string) int {
	t.Helper()
	p := bytes.LastIndex(data, []byte(name))
	require.Positive(t, p, "tensor %q", name)
	p += len(name)
	nDims := int(binary.LittleEndian.Uint32(data[p:]))
	switch field {
	case "n_dims":
		return p
	case "ne0":
		return p + 4
	case "ne1":
		return p + 12
	case "type":
		return p + 4 + 8*nDims
	case "offset":
		return p + 8 + 8*nDims
	}
	t.Fatalf("unknown field %q", field)
	return 0
}

func put32(data []byte, at int, x uint32) { binary.LittleEndian.PutUint32(data[at:], x) }
func put64(data []byte, at int, x uint64) { binary.LittleEndian.PutUint64(data[at:], x) }

// raw assembles bytes by hand, independently of the Builder, for files the
// Builder will not write.
type raw struct{ bytes.Buffer }

func (r *raw) u32(x uint32) *raw { r.Write(binary.LittleEndian.AppendUint32(nil, x)); return r }
func (r *raw) u64(x uint64) *raw { r.Write(binary.LittleEndian.AppendUint64(nil, x)); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }

// header starts a file: magic, version, counts.
func header(version uint32, tensors, kvs uint64) *raw {
	r := &raw{}
	r.WriteString("GGUF")
	return r.u32(version).u64(tensors).u64(kvs)
}
