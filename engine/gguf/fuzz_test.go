package gguf_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the seed files of testdata/fuzz")

// FuzzParse checks that no input panics Parse or makes it allocate more
// than a small multiple of its size, that every error wraps a sentinel, and that whatever Parse accepts is a consistent file: its
// tensors lie inside the input, and writing it again and parsing that gives
// the same bytes once more.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		file, err := gguf.Parse(data)
		runtime.ReadMemStats(&after)
		// Parse allocates in proportion to the bytes it has read, never to
		// what the file claims: a few Go headers per encoded value at most.
		require.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(16*len(data)+64<<10), "bytes allocated")
		if err != nil {
			require.True(t, errors.Is(err, gguf.ErrFormat) || errors.Is(err, gguf.ErrTruncated) ||
				errors.Is(err, gguf.ErrUnsupported), "error wraps no sentinel: %v", err)
			return
		}
		require.LessOrEqual(t, file.DataOffset, len(data))
		for _, ti := range file.Tensors() {
			start := file.DataOffset + ti.Offset
			require.LessOrEqual(t, start+ti.Size, len(data))
			require.True(t, bytes.Equal(data[start:start+ti.Size], ti.Data), ti.Name)
		}
		again := rebuild(t, file)
		file2, err := gguf.Parse(again)
		require.NoError(t, err)
		require.True(t, bytes.Equal(again, rebuild(t, file2)), "write → parse → write is not stable")
		require.Equal(t, len(file.KVs()), len(file2.KVs()))
		for i, ti := range file2.Tensors() {
			require.True(t, bytes.Equal(file.Tensors()[i].Data, ti.Data), ti.Name)
		}
	})
}

// fuzzSeeds are small files that reach every part of the parser.
func fuzzSeeds(t *testing.T) map[string][]byte {
	seeds := map[string][]byte{}
	build := func(name string, fill func(b *gguf.Builder)) {
		b := gguf.NewBuilder()
		fill(b)
		data, err := b.Bytes()
		require.NoError(t, err, name)
		seeds[name] = data
	}
	small := smallFile(t)
	seeds["small"] = small
	for _, n := range []int{3, 22, 60, len(small) / 2, len(small) - 40, len(small) - 1} {
		seeds[fmt.Sprintf("small-truncated-%d", n)] = small[:n]
	}
	build("v2-align8-quants", func(b *gguf.Builder) {
		b.SetVersion(2)
		b.SetAlignment(8)
		b.Set("general.architecture", gguf.ValueOf("llama"))
		for _, typ := range []tensor.Type{tensor.F16, tensor.Q4_0, tensor.Q4_K, tensor.BF16} {
			block, err := tensor.BlockSize(typ)
			require.NoError(t, err)
			dims := []uint64{uint64(block), 2}
			b.AddTensor("w."+typ.String(), typ, dims, tensorData(t, typ, dims, byte(typ)))
		}
	})
	build("vocab", func(b *gguf.Builder) {
		b.Set("tokenizer.ggml.model", gguf.ValueOf("llama"))
		b.Set("tokenizer.ggml.tokens", gguf.ArrayOf([]string{"<unk>", "<s>", "</s>", "\xe2\x96\x81a", "b"}))
		b.Set("tokenizer.ggml.scores", gguf.ArrayOf([]float32{0, 0, 0, -1, -2}))
		b.Set("tokenizer.ggml.token_type", gguf.ArrayOf([]int32{2, 3, 3, 1, 1}))
		b.Set("tokenizer.ggml.add_bos_token", gguf.ValueOf(true))
	})
	build("every-value", func(b *gguf.Builder) {
		for _, kv := range everyValue() {
			b.Set(kv.Key, kv.Value)
		}
	})
	seeds["empty"] = []byte{}
	seeds["magic-only"] = []byte("GGUF")
	return seeds
}

// TestFuzzSeedsCommitted keeps testdata/fuzz/FuzzParse in step with
// fuzzSeeds; run with -update-seeds to rewrite the files.
func TestFuzzSeedsCommitted(t *testing.T) {
	for name, data := range fuzzSeeds(t) {
		checkSeed(t, "FuzzParse", name, fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data))
	}
}

// checkSeed checks that the committed seed file of fuzz target fuzz called
// name holds want, or writes it there with -update-seeds.
func checkSeed(t *testing.T, fuzz, name, want string) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", fuzz)
	path := filepath.Join(dir, "seed-"+name)
	if *updateSeeds {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run %s -update-seeds", t.Name())
	assert.Equal(t, want, string(got), path)
}

func BenchmarkParseVocabLlamaSPM(b *testing.B) {
	data := readTestdata(b, "ggml-vocab-llama-spm.gguf")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gguf.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseStories260KQ8_0(b *testing.B) {
	data := readTestdata(b, "stories260K-Q8_0.gguf")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gguf.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzParseHeader checks ParseHeader against Parse on every input and every
// prefix of it: with the whole file it agrees with Parse (a header needs no
// data), and with a prefix it either reads the same header or asks for more
// (ErrNeedMore), never more than the file has and never less than the
// header's end. Its seeds are FuzzParse's (testdata/fuzz/FuzzParseHeader
// holds copies of them).
func FuzzParseHeader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole, err := gguf.Parse(data)
		full, ferr := gguf.ParseHeader(data, int64(len(data)))
		if err != nil {
			require.Error(t, ferr, "ParseHeader accepted what Parse refused: %v", err)
			require.NotErrorIs(t, ferr, gguf.ErrNeedMore)
			return
		}
		require.NoError(t, ferr, "ParseHeader refused what Parse accepted")
		require.Equal(t, whole.DataOffset, full.DataOffset)
		k := int(cut) % (len(data) + 1)
		part, err := gguf.ParseHeader(data[:k], int64(len(data)))
		if k >= whole.HeaderSize {
			require.NoError(t, err, "the prefix holds the whole header")
			require.Equal(t, whole.KVs(), part.KVs())
			require.Equal(t, len(whole.Tensors()), len(part.Tensors()))
			return
		}
		require.ErrorIs(t, err, gguf.ErrNeedMore, "a prefix inside the header")
	})
}
