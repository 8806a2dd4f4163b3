package gguf_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

func TestSplitPath(t *testing.T) {
	assert.Equal(t, "dir/model-00001-of-00003.gguf", gguf.SplitPath("dir/model", 1, 3))
	assert.Equal(t, "m-65535-of-65535.gguf", gguf.SplitPath("m", 65535, 65535))
	for _, c := range []struct {
		prefix    string
		no, count int
	}{{"a", 1, 1}, {"dir/model", 2, 3}, {"x-00001-of-00002", 1, 2}, {"https://host/m/Q4_K_M/model", 9, 12}, {"m", 65535, 65535}} {
		prefix, no, count, ok := gguf.ParseSplitPath(gguf.SplitPath(c.prefix, c.no, c.count))
		require.True(t, ok, c)
		assert.Equal(t, c, struct {
			prefix    string
			no, count int
		}{prefix, no, count})
	}
}

func TestParseSplitPathRefuses(t *testing.T) {
	for _, path := range []string{
		"",
		"model.gguf",
		"-00001-of-00003.gguf",       // no prefix (llama_split_prefix needs one)
		"m-00000-of-00003.gguf",      // parts count from 1
		"m-00004-of-00003.gguf",      // past the count
		"m-00001-of-00000.gguf",      // no parts
		"m-00001-of-70000.gguf",      // more than a uint16 counts
		"m-0001-of-0003.gguf",        // four digits
		"m-000001-of-000003.gguf",    // six digits
		"m-00001-of-00003.GGUF",      // llama.cpp's suffix is lower case
		"m-00001-of-00003.gguf.part", // not the end
		"m_00001-of-00003.gguf",
		"m-00001_of-00003.gguf",
		"m-0000a-of-00003.gguf",
		"m-00001-of-0000+.gguf",
		"m-00001-of-00003.gguf?download=true",
	} {
		_, _, _, ok := gguf.ParseSplitPath(path)
		assert.False(t, ok, path)
	}
}

// splitFile is a file with the given split keys (nil: absent) and one
// tensor.
func splitFile(t *testing.T, no, count, tensors *gguf.Value) *gguf.File {
	t.Helper()
	b := gguf.NewBuilder()
	b.Set("general.architecture", gguf.ValueOf("llama"))
	for _, kv := range []struct {
		key string
		v   *gguf.Value
	}{{gguf.SplitNoKey, no}, {gguf.SplitCountKey, count}, {gguf.SplitTensorsKey, tensors}} {
		if kv.v != nil {
			b.Set(kv.key, *kv.v)
		}
	}
	b.AddTensor("w", tensor.F32, []uint64{8}, make([]byte, 32))
	data, err := b.Bytes()
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	return f
}

func u16(x uint16) *gguf.Value     { v := gguf.ValueOf(x); return &v }
func i32(x int32) *gguf.Value      { v := gguf.ValueOf(x); return &v }
func val(v gguf.Value) *gguf.Value { return &v }

// TestFileSplit: the split keys as llama-gguf-split and gguf-py write
// them, and files llama.cpp treats as whole.
func TestFileSplit(t *testing.T) {
	for _, c := range []struct {
		name               string
		no, count, tensors *gguf.Value
		want               gguf.SplitInfo
		ok                 bool
	}{
		{"not split", nil, nil, nil, gguf.SplitInfo{}, false},
		{"merged by llama-gguf-split", u16(0), u16(0), i32(20), gguf.SplitInfo{}, false},
		{"one part", u16(0), u16(1), i32(1), gguf.SplitInfo{Index: 0, Count: 1, Tensors: 1}, true},
		{"first of three", u16(0), u16(3), i32(20), gguf.SplitInfo{Index: 0, Count: 3, Tensors: 20}, true},
		{"last of three", u16(2), u16(3), i32(20), gguf.SplitInfo{Index: 2, Count: 3, Tensors: 20}, true},
		{"later part without the total", u16(1), u16(3), nil, gguf.SplitInfo{Index: 1, Count: 3, Tensors: -1}, true},
		{"the most parts", u16(65534), u16(65535), i32(1 << 20), gguf.SplitInfo{Index: 65534, Count: 65535, Tensors: 1 << 20}, true},
		{"split.no without split.count", u16(1), nil, nil, gguf.SplitInfo{}, false}, // llama.cpp reads only split.count first
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ok, err := splitFile(t, c.no, c.count, c.tensors).Split()
			require.NoError(t, err)
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, s)
		})
	}
}

func TestFileSplitRefuses(t *testing.T) {
	for _, c := range []struct {
		name               string
		no, count, tensors *gguf.Value
	}{
		{"count is uint32", u16(0), val(gguf.ValueOf(uint32(3))), i32(20)},
		{"count is int16", u16(0), val(gguf.ValueOf(int16(3))), i32(20)},
		{"no is int32", val(gguf.ValueOf(int32(0))), u16(3), i32(20)},
		{"no is a string", val(gguf.ValueOf("0")), u16(3), i32(20)},
		{"tensors is uint32", u16(0), u16(3), val(gguf.ValueOf(uint32(20)))},
		{"tensors is an array", u16(0), u16(3), val(gguf.ArrayOf([]int32{20}))},
		{"tensors is negative", u16(0), u16(3), i32(-1)},
		{"fewer tensors than the part holds", u16(1), u16(3), i32(0)},
		{"no is the count", u16(3), u16(3), i32(20)},
		{"no past the count", u16(7), u16(3), i32(20)},
		{"count without no", nil, u16(3), i32(20)},
		{"first part without the total", u16(0), u16(3), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, ok, err := splitFile(t, c.no, c.count, c.tensors).Split()
			require.ErrorIs(t, err, gguf.ErrFormat)
			assert.False(t, ok)
			t.Log(err)
		})
	}
}

func ExampleSplitPath() {
	fmt.Println(gguf.SplitPath("models/big", 2, 3))
	prefix, no, count, ok := gguf.ParseSplitPath("models/big-00001-of-00003.gguf")
	fmt.Println(prefix, no, count, ok)
	// Output:
	// models/big-00002-of-00003.gguf
	// models/big 1 3 true
}
