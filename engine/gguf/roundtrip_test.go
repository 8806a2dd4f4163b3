package gguf_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// everyValue has each value type at its extremes, arrays of every element
// type (empty ones too) and arrays of arrays nested two deep.
func everyValue() []gguf.KV {
	nan := math.Float32frombits(0x7fc01234) // a NaN with a payload, kept bit for bit
	return []gguf.KV{
		{"u8.max", gguf.ValueOf(uint8(math.MaxUint8))},
		{"i8.min", gguf.ValueOf(int8(math.MinInt8))},
		{"u16.max", gguf.ValueOf(uint16(math.MaxUint16))},
		{"i16.min", gguf.ValueOf(int16(math.MinInt16))},
		{"u32.max", gguf.ValueOf(uint32(math.MaxUint32))},
		{"i32.min", gguf.ValueOf(int32(math.MinInt32))},
		{"f32", gguf.ValueOf(float32(-1.5e-7))},
		{"f32.nan", gguf.ValueOf(nan)},
		{"f32.negzero", gguf.ValueOf(float32(math.Copysign(0, -1)))},
		{"f32.inf", gguf.ValueOf(float32(math.Inf(1)))},
		{"bool.true", gguf.ValueOf(true)},
		{"bool.false", gguf.ValueOf(false)},
		{"str", gguf.ValueOf("héllo, wörld")},
		{"str.empty", gguf.ValueOf("")},
		{"str.bytes", gguf.ValueOf("\xff\xfe not UTF-8")}, // values are bytes; only keys must be UTF-8
		{"u64.max", gguf.ValueOf(uint64(math.MaxUint64))},
		{"i64.min", gguf.ValueOf(int64(math.MinInt64))},
		{"f64", gguf.ValueOf(math.Pi)},
		{"arr.u8", gguf.ArrayOf([]uint8{0, 1, 255})},
		{"arr.i8", gguf.ArrayOf([]int8{-128, 0, 127})},
		{"arr.u16", gguf.ArrayOf([]uint16{0, 65535})},
		{"arr.i16", gguf.ArrayOf([]int16{-32768, 32767})},
		{"arr.u32", gguf.ArrayOf([]uint32{0, math.MaxUint32})},
		{"arr.i32", gguf.ArrayOf([]int32{math.MinInt32, -1, math.MaxInt32})},
		{"arr.f32", gguf.ArrayOf([]float32{-2, 0.5, float32(math.Inf(-1))})},
		{"arr.bool", gguf.ArrayOf([]bool{true, false, false, true})},
		{"arr.str", gguf.ArrayOf([]string{"", "a", "<0x0A>", "\xe2\x96\x81the"})},
		{"arr.u64", gguf.ArrayOf([]uint64{0, math.MaxUint64})},
		{"arr.i64", gguf.ArrayOf([]int64{math.MinInt64, math.MaxInt64})},
		{"arr.f64", gguf.ArrayOf([]float64{math.SmallestNonzeroFloat64, -math.MaxFloat64})},
		{"arr.empty.f32", gguf.ArrayOf([]float32{})},
		{"arr.empty.str", gguf.ArrayOf[string](nil)},
		{"arr.empty.arr", gguf.ArrayOfArrays()},
		{"arr.arr", gguf.ArrayOfArrays(
			gguf.ArrayOf([]string{"x", "yz"}),
			gguf.ArrayOf([]float32{1, 2, 3}),
			gguf.ArrayOf([]bool{}),
			gguf.ArrayOfArrays(gguf.ArrayOf([]int64{-1}), gguf.ArrayOfArrays()),
		)},
	}
}

// everyTensorType has one tensor of each type ggml defines, 2 blocks wide
// and 3 rows, plus 1-d and 4-d shapes.
func everyTensorType(t testing.TB) []gguf.TensorInfo {
	var ts []gguf.TensorInfo
	for id := range tensor.Type(64) {
		if !tensor.Known(id) {
			continue
		}
		block, err := tensor.BlockSize(id)
		require.NoError(t, err)
		dims := []uint64{2 * uint64(block), 3}
		ts = append(ts, gguf.TensorInfo{Name: "t." + id.String(), Type: id, Dims: dims, Data: tensorData(t, id, dims, byte(id))})
	}
	for _, dims := range [][]uint64{{96}, {32, 2, 3, 4}} {
		ts = append(ts, gguf.TensorInfo{Name: fmt.Sprintf("t.q8.%d", len(dims)), Type: tensor.Q8_0, Dims: dims, Data: tensorData(t, tensor.Q8_0, dims, byte(len(dims)))})
	}
	return ts
}

func TestRoundTrip(t *testing.T) {
	kvs := everyValue()
	tensors := everyTensorType(t)
	for _, version := range []uint32{2, 3} {
		for _, align := range []int{0, 1, 8, 32, 64, 4096} { // 0: no general.alignment
			t.Run(fmt.Sprintf("v%d/align%d", version, align), func(t *testing.T) {
				b := gguf.NewBuilder()
				b.SetVersion(version)
				wantKVs := kvs
				if align != 0 {
					b.SetAlignment(align)
					wantKVs = append([]gguf.KV{{Key: gguf.AlignmentKey, Value: gguf.ValueOf(uint32(align))}}, kvs...)
				}
				for _, kv := range kvs {
					b.Set(kv.Key, kv.Value)
				}
				for _, ti := range tensors {
					b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
				}
				data, err := b.Bytes()
				require.NoError(t, err)

				f, err := gguf.Parse(data)
				require.NoError(t, err)
				assert.Equal(t, version, f.Version)
				wantAlign := align
				if align == 0 {
					wantAlign = gguf.DefaultAlignment
				}
				assert.Equal(t, wantAlign, f.Alignment)
				assert.Zero(t, f.DataOffset%f.Alignment)
				assert.Equal(t, wantKVs, f.KVs()) // Value keeps float bits, so NaN compares equal
				for _, kv := range wantKVs {
					v, ok := f.Lookup(kv.Key)
					require.True(t, ok, kv.Key)
					assert.Equal(t, kv.Value, v, kv.Key)
				}
				got := f.Tensors()
				require.Len(t, got, len(tensors))
				for i, ti := range tensors {
					assert.Equal(t, ti.Name, got[i].Name)
					assert.Equal(t, ti.Type, got[i].Type)
					assert.Equal(t, ti.Dims, got[i].Dims)
					assert.True(t, bytes.Equal(ti.Data, got[i].Data), ti.Name)
				}
				checkTensors(t, f, data)

				var w bytes.Buffer
				n, err := b.WriteTo(&w)
				require.NoError(t, err)
				assert.Equal(t, int64(len(data)), n)
				assert.True(t, bytes.Equal(data, w.Bytes()), "WriteTo and Bytes differ")
				assert.True(t, bytes.Equal(data, rebuild(t, f)), "parse → build is not the identity")
			})
		}
	}
}

func TestRoundTripFloatArrayNaN(t *testing.T) {
	in := []float32{math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00002), 1}
	b := gguf.NewBuilder()
	b.Set("nan", gguf.ArrayOf(in))
	data, err := b.Bytes()
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	out, err := f.Float32s("nan")
	require.NoError(t, err)
	require.Len(t, out, len(in))
	for i := range in {
		assert.Equal(t, math.Float32bits(in[i]), math.Float32bits(out[i]), i)
	}
}

// Set on an existing key replaces the value in place; later keys keep
// their order.
func TestBuilderSetReplaces(t *testing.T) {
	b := gguf.NewBuilder()
	b.Set("a", gguf.ValueOf(uint32(1)))
	b.Set("b", gguf.ValueOf("x"))
	b.Set("a", gguf.ValueOf("now a string"))
	data, err := b.Bytes()
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	assert.Equal(t, []gguf.KV{{"a", gguf.ValueOf("now a string")}, {"b", gguf.ValueOf("x")}}, f.KVs())
}

func TestBuilderErrors(t *testing.T) {
	f32 := func(n int) []byte { return make([]byte, 4*n) }
	tests := []struct {
		name  string
		build func(b *gguf.Builder)
		want  string
	}{
		{"version 1", func(b *gguf.Builder) { b.SetVersion(1) }, "version 1"},
		{"version 4", func(b *gguf.Builder) { b.SetVersion(4) }, "version 4"},
		{"alignment 0", func(b *gguf.Builder) { b.SetAlignment(0) }, "alignment 0"},
		{"alignment 48", func(b *gguf.Builder) { b.SetAlignment(48) }, "alignment 48"},
		{"alignment 2^32", func(b *gguf.Builder) { b.SetAlignment(1 << 32) }, "alignment 4294967296"},
		{"empty key", func(b *gguf.Builder) { b.Set("", gguf.ValueOf(true)) }, `key ""`},
		{"key not UTF-8", func(b *gguf.Builder) { b.Set("k\xff", gguf.ValueOf(true)) }, `key "k\xff"`},
		{"array of arrays holding a scalar", func(b *gguf.Builder) {
			b.Set("nest", gguf.ArrayOfArrays(gguf.ArrayOf([]int8{1}), gguf.ValueOf(int8(1))))
		}, `key "nest": element 1 of an array of arrays is int8`},
		{"arrays nested too deep", func(b *gguf.Builder) {
			v := gguf.ArrayOf([]uint8{1})
			for range 8 {
				v = gguf.ArrayOfArrays(v)
			}
			b.Set("deep", v)
		}, "nested more than 8 deep"},
		{"empty tensor name", func(b *gguf.Builder) { b.AddTensor("", tensor.F32, []uint64{1}, f32(1)) }, `tensor name ""`},
		{"duplicate tensor", func(b *gguf.Builder) {
			b.AddTensor("w", tensor.F32, []uint64{1}, f32(1))
			b.AddTensor("w", tensor.F32, []uint64{1}, f32(1))
		}, `duplicate tensor "w"`},
		{"no dims", func(b *gguf.Builder) { b.AddTensor("w", tensor.F32, nil, nil) }, "0 dims"},
		{"5 dims", func(b *gguf.Builder) { b.AddTensor("w", tensor.F32, []uint64{1, 1, 1, 1, 1}, f32(1)) }, "5 dims"},
		{"zero dim", func(b *gguf.Builder) { b.AddTensor("w", tensor.F32, []uint64{1, 0}, nil) }, "a dim is 0"},
		{"zero row length", func(b *gguf.Builder) { b.AddTensor("w", tensor.F32, []uint64{0}, nil) }, "row length 0"},
		{"unknown type", func(b *gguf.Builder) { b.AddTensor("w", tensor.Type(4), []uint64{32}, f32(8)) }, "unknown type"},
		{"partial block", func(b *gguf.Builder) { b.AddTensor("w", tensor.Q8_0, []uint64{33}, make([]byte, 34)) }, "block size"},
		{"short data", func(b *gguf.Builder) { b.AddTensor("w", tensor.F32, []uint64{4, 2}, f32(7)) }, "28 bytes"},
		{"first error wins", func(b *gguf.Builder) {
			b.SetVersion(9)
			b.Set("", gguf.ValueOf(true))
		}, "version 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := gguf.NewBuilder()
			tt.build(b)
			_, err := b.Bytes()
			require.ErrorIs(t, err, gguf.ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
			_, err = b.WriteTo(&bytes.Buffer{})
			require.ErrorIs(t, err, gguf.ErrInvalid)
		})
	}
}

// A general.alignment the Builder writes as given but Parse must refuse.
func TestBuilderWritesBadAlignmentForTests(t *testing.T) {
	b := gguf.NewBuilder()
	b.Set(gguf.AlignmentKey, gguf.ValueOf(uint32(3)))
	b.AddTensor("w", tensor.F32, []uint64{1}, make([]byte, 4))
	data, err := b.Bytes()
	require.NoError(t, err)
	_, err = gguf.Parse(data)
	require.ErrorIs(t, err, gguf.ErrFormat)
	assert.Contains(t, err.Error(), "general.alignment 3 is not a power of two")
}
