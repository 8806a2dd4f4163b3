package gguf_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// metadataFile parses a file holding one key per case the getters handle.
func metadataFile(t *testing.T) *gguf.File {
	t.Helper()
	b := gguf.NewBuilder()
	for _, kv := range []gguf.KV{
		{"u8", gguf.ValueOf(uint8(200))},
		{"i8.neg", gguf.ValueOf(int8(-3))},
		{"i64.small", gguf.ValueOf(int64(4096))},
		{"u64.big", gguf.ValueOf(uint64(math.MaxUint32 + 1))},
		{"u64.huge", gguf.ValueOf(uint64(math.MaxUint64))},
		{"i32.min", gguf.ValueOf(int32(math.MinInt32))},
		{"u32.max", gguf.ValueOf(uint32(math.MaxUint32))},
		{"f32", gguf.ValueOf(float32(1e-5))},
		{"f64", gguf.ValueOf(0.25)},
		{"bool", gguf.ValueOf(true)},
		{"str", gguf.ValueOf("llama")},
		{"strs", gguf.ArrayOf([]string{"a", "b"})},
		{"f32s", gguf.ArrayOf([]float32{1, -1})},
		{"i32s", gguf.ArrayOf([]int32{3, -3})},
		{"u32s", gguf.ArrayOf([]uint32{9})},
		{"arrs", gguf.ArrayOfArrays(gguf.ArrayOf([]uint8{1}))},
	} {
		b.Set(kv.Key, kv.Value)
	}
	data, err := b.Bytes()
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	return f
}

func TestGetters(t *testing.T) {
	f := metadataFile(t)
	type getter func(key string) (any, error)
	wrap := func(g func(string) (uint32, error)) getter { return func(k string) (any, error) { return g(k) } }
	tests := []struct {
		name string
		get  getter
		key  string
		want any   // nil: an error is expected
		is   error // the error's sentinel
		msg  string
	}{
		{"Uint32 from uint8", wrap(f.Uint32), "u8", uint32(200), nil, ""},
		{"Uint32 from int64", wrap(f.Uint32), "i64.small", uint32(4096), nil, ""},
		{"Uint32 from uint32 max", wrap(f.Uint32), "u32.max", uint32(math.MaxUint32), nil, ""},
		{"Uint32 refuses negative", wrap(f.Uint32), "i8.neg", nil, gguf.ErrType, `"i8.neg" is int8 -3, want an integer in uint32 range`},
		{"Uint32 refuses 2^32", wrap(f.Uint32), "u64.big", nil, gguf.ErrType, `"u64.big" is uint64 4294967296`},
		{"Uint32 refuses float", wrap(f.Uint32), "f32", nil, gguf.ErrType, `"f32" is float32`},
		{"Uint32 refuses array", wrap(f.Uint32), "i32s", nil, gguf.ErrType, `"i32s" is an array of int32`},
		{"Uint32 missing", wrap(f.Uint32), "nope", nil, gguf.ErrNotFound, `"nope"`},
		{"Int32 from int8", func(k string) (any, error) { return f.Int32(k) }, "i8.neg", int32(-3), nil, ""},
		{"Int32 min", func(k string) (any, error) { return f.Int32(k) }, "i32.min", int32(math.MinInt32), nil, ""},
		{"Int32 refuses uint32 max", func(k string) (any, error) { return f.Int32(k) }, "u32.max", nil, gguf.ErrType, `"u32.max" is uint32 4294967295`},
		{"Int64 from int32", func(k string) (any, error) { return f.Int64(k) }, "i32.min", int64(math.MinInt32), nil, ""},
		{"Int64 refuses uint64 max", func(k string) (any, error) { return f.Int64(k) }, "u64.huge", nil, gguf.ErrType, `"u64.huge"`},
		{"Uint64 from uint64 max", func(k string) (any, error) { return f.Uint64(k) }, "u64.huge", uint64(math.MaxUint64), nil, ""},
		{"Uint64 refuses negative", func(k string) (any, error) { return f.Uint64(k) }, "i32.min", nil, gguf.ErrType, `"i32.min"`},
		{"Float32", func(k string) (any, error) { return f.Float32(k) }, "f32", float32(1e-5), nil, ""},
		{"Float32 from float64", func(k string) (any, error) { return f.Float32(k) }, "f64", float32(0.25), nil, ""},
		{"Float32 refuses integer", func(k string) (any, error) { return f.Float32(k) }, "u8", nil, gguf.ErrType, `"u8" is uint8 200, want float32`},
		{"Bool", func(k string) (any, error) { return f.Bool(k) }, "bool", true, nil, ""},
		{"Bool refuses uint8", func(k string) (any, error) { return f.Bool(k) }, "u8", nil, gguf.ErrType, `"u8"`},
		{"String", func(k string) (any, error) { return f.String(k) }, "str", "llama", nil, ""},
		{"String refuses array", func(k string) (any, error) { return f.String(k) }, "strs", nil, gguf.ErrType, `"strs" is an array of string, want string`},
		{"String missing", func(k string) (any, error) { return f.String(k) }, "general.name", nil, gguf.ErrNotFound, `key not found: "general.name"`},
		{"Strings", func(k string) (any, error) { return f.Strings(k) }, "strs", []string{"a", "b"}, nil, ""},
		{"Strings refuses string", func(k string) (any, error) { return f.Strings(k) }, "str", nil, gguf.ErrType, `"str" is string, want an array of string`},
		{"Float32s", func(k string) (any, error) { return f.Float32s(k) }, "f32s", []float32{1, -1}, nil, ""},
		{"Float32s refuses int32s", func(k string) (any, error) { return f.Float32s(k) }, "i32s", nil, gguf.ErrType, `"i32s" is an array of int32, want an array of float32`},
		{"Int32s", func(k string) (any, error) { return f.Int32s(k) }, "i32s", []int32{3, -3}, nil, ""},
		{"Int32s refuses uint32s", func(k string) (any, error) { return f.Int32s(k) }, "u32s", nil, gguf.ErrType, `"u32s"`},
		{"Int32s missing", func(k string) (any, error) { return f.Int32s(k) }, "nope", nil, gguf.ErrNotFound, `"nope"`},
		{"StringOr present", func(k string) (any, error) { return f.StringOr(k, "x") }, "str", "llama", nil, ""},
		{"StringOr missing", func(k string) (any, error) { return f.StringOr(k, "x") }, "nope", "x", nil, ""},
		{"StringOr wrong type", func(k string) (any, error) { return f.StringOr(k, "x") }, "u8", nil, gguf.ErrType, `"u8"`},
		{"Uint32Or missing", func(k string) (any, error) { return f.Uint32Or(k, 7) }, "nope", uint32(7), nil, ""},
		{"Uint32Or present", func(k string) (any, error) { return f.Uint32Or(k, 7) }, "u8", uint32(200), nil, ""},
		{"Uint32Or does not fit", func(k string) (any, error) { return f.Uint32Or(k, 7) }, "u64.big", nil, gguf.ErrType, `"u64.big"`},
		{"Int32Or missing", func(k string) (any, error) { return f.Int32Or(k, -1) }, "nope", int32(-1), nil, ""},
		{"Uint64Or missing", func(k string) (any, error) { return f.Uint64Or(k, 9) }, "nope", uint64(9), nil, ""},
		{"Float32Or missing", func(k string) (any, error) { return f.Float32Or(k, 0.5) }, "nope", float32(0.5), nil, ""},
		{"Float32Or wrong type", func(k string) (any, error) { return f.Float32Or(k, 0.5) }, "str", nil, gguf.ErrType, `"str" is string, want float32`},
		{"BoolOr missing", func(k string) (any, error) { return f.BoolOr(k, true) }, "nope", true, nil, ""},
		{"BoolOr wrong type", func(k string) (any, error) { return f.BoolOr(k, true) }, "f32s", nil, gguf.ErrType, `"f32s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.get(tt.key)
			if tt.is == nil {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			require.ErrorIs(t, err, tt.is)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestValueAccessors(t *testing.T) {
	f := metadataFile(t)
	v, ok := f.Lookup("i32s")
	require.True(t, ok)
	assert.Equal(t, gguf.TypeArray, v.Type())
	elem, ok := v.ElemType()
	assert.True(t, ok)
	assert.Equal(t, gguf.TypeInt32, elem)
	assert.Equal(t, 2, v.Len())
	assert.Equal(t, []int32{3, -3}, v.Any())

	v, ok = f.Lookup("arrs")
	require.True(t, ok)
	inner, ok := v.Arrays()
	require.True(t, ok)
	require.Len(t, inner, 1)
	assert.Equal(t, []uint8{1}, inner[0].Any())

	scalar := gguf.ValueOf(int16(-2))
	_, ok = scalar.ElemType()
	assert.False(t, ok)
	assert.Zero(t, scalar.Len())
	assert.Equal(t, int16(-2), scalar.Any())
	n, ok := scalar.AsInt64()
	assert.True(t, ok)
	assert.Equal(t, int64(-2), n)
	_, ok = scalar.AsUint64()
	assert.False(t, ok)
	_, ok = scalar.AsFloat64()
	assert.False(t, ok)
	_, ok = scalar.AsString()
	assert.False(t, ok)
	_, ok = scalar.Strings()
	assert.False(t, ok)

	_, ok = f.Lookup("missing")
	assert.False(t, ok)
	_, ok = f.Tensor("missing")
	assert.False(t, ok)

	assert.Equal(t, "uint32", gguf.TypeUint32.String())
	assert.Equal(t, "type(13)", gguf.ValueType(13).String())
}

func TestSummarizeAndString(t *testing.T) {
	tests := []struct {
		v       gguf.Value
		summary string // JSON of Summarize(2)
		str     string
	}{
		{gguf.ValueOf(uint32(7)), `7`, `7`},
		{gguf.ValueOf(int8(-7)), `-7`, `-7`},
		{gguf.ValueOf(float32(1e-5)), `0.00001`, `1e-05`},
		{gguf.ValueOf(float32(math.NaN())), `"NaN"`, `NaN`},
		{gguf.ValueOf(math.Inf(-1)), `"-Inf"`, `-Inf`},
		{gguf.ValueOf(true), `true`, `true`},
		{gguf.ValueOf("a\"b"), `"a\"b"`, `"a\"b"`},
		{gguf.ArrayOf([]int32{1, 2}), `[1,2]`, `[1 2] (2 int32)`},
		{gguf.ArrayOf([]string{"x", "y", "z"}), `{"head":["x","y"],"len":3,"type":"string"}`, `["x" "y" "z"] (3 string)`},
		{gguf.ArrayOf(make([]uint8, 9)), `{"head":[0,0],"len":9,"type":"uint8"}`, `[0 0 0 0 0 0 0 0 ...] (9 uint8)`},
		{gguf.ArrayOfArrays(gguf.ArrayOf([]bool{true})), `[[true]]`, `[[true] (1 bool)] (1 array)`},
	}
	for _, tt := range tests {
		t.Run(tt.str, func(t *testing.T) {
			out, err := json.Marshal(tt.v.Summarize(2))
			require.NoError(t, err)
			assert.Equal(t, tt.summary, string(out))
			assert.Equal(t, tt.str, tt.v.String())
		})
	}
}
