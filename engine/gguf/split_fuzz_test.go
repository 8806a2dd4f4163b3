package gguf_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// FuzzSplit checks that Split never panics on a file Parse accepts, that
// its errors wrap ErrFormat, and that what it accepts is in range.
func FuzzSplit(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := gguf.Parse(data)
		if err != nil {
			return
		}
		s, ok, err := file.Split()
		if err != nil {
			require.ErrorIs(t, err, gguf.ErrFormat)
			require.False(t, ok)
			return
		}
		if !ok {
			require.Zero(t, s)
			return
		}
		require.True(t, 0 <= s.Index && s.Index < s.Count && s.Count <= gguf.MaxSplitCount, "%+v", s)
		require.True(t, s.Tensors == -1 && s.Index > 0 || s.Tensors >= len(file.Tensors()), "%+v", s)
	})
}

// FuzzParseSplitPath checks that a path ParseSplitPath accepts is exactly
// what SplitPath writes from its parts.
func FuzzParseSplitPath(f *testing.F) {
	f.Fuzz(func(t *testing.T, path string) {
		prefix, no, count, ok := gguf.ParseSplitPath(path)
		if !ok {
			return
		}
		require.True(t, prefix != "" && 1 <= no && no <= count && count <= gguf.MaxSplitCount)
		require.Equal(t, path, gguf.SplitPath(prefix, no, count))
	})
}

// splitFuzzSeeds are the parts of a split file and parts with broken keys.
func splitFuzzSeeds(t *testing.T) map[string][]byte {
	seeds := map[string][]byte{}
	b := gguf.NewBuilder()
	b.Set("general.architecture", gguf.ValueOf("llama"))
	for i := range 3 {
		b.AddTensor(fmt.Sprintf("w%d", i), tensor.F32, []uint64{8}, pattern(32, byte(i)))
	}
	parts, err := b.SplitBytes(gguf.SplitOptions{MaxTensors: 2})
	require.NoError(t, err)
	for i, p := range parts {
		seeds[fmt.Sprintf("part-%d", i+1)] = p
	}
	broken := func(name string, no, count, tensors gguf.Value) {
		b := gguf.NewBuilder()
		b.Set(gguf.SplitNoKey, no)
		b.Set(gguf.SplitCountKey, count)
		b.Set(gguf.SplitTensorsKey, tensors)
		b.AddTensor("w", tensor.F32, []uint64{8}, pattern(32, 9))
		data, err := b.Bytes()
		require.NoError(t, err)
		seeds[name] = data
	}
	broken("count-uint32", gguf.ValueOf(uint16(0)), gguf.ValueOf(uint32(2)), gguf.ValueOf(int32(2)))
	broken("no-past-count", gguf.ValueOf(uint16(2)), gguf.ValueOf(uint16(2)), gguf.ValueOf(int32(2)))
	broken("merged", gguf.ValueOf(uint16(0)), gguf.ValueOf(uint16(0)), gguf.ValueOf(int32(1)))
	return seeds
}

var splitPathSeeds = map[string]string{
	"first":     "models/m-00001-of-00003.gguf",
	"last":      "m-65535-of-65535.gguf",
	"past":      "m-00004-of-00003.gguf",
	"no-prefix": "-00001-of-00002.gguf",
	"short":     "m-1-of-2.gguf",
}

// TestSplitFuzzSeedsCommitted keeps testdata/fuzz/FuzzSplit and
// FuzzParseSplitPath in step with their seeds; -update-seeds rewrites them.
func TestSplitFuzzSeedsCommitted(t *testing.T) {
	for name, data := range splitFuzzSeeds(t) {
		checkSeed(t, "FuzzSplit", name, fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data))
	}
	for name, path := range splitPathSeeds {
		checkSeed(t, "FuzzParseSplitPath", name, fmt.Sprintf("go test fuzz v1\nstring(%q)\n", path))
	}
}
