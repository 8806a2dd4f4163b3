package gguf_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

var updateSplit = flag.Bool("update-split", false,
	"rewrite "+splitGoldenPath+" by running llama.cpp's llama-gguf-split, named by $LLAMA_GGUF_SPLIT")

// splitGoldenPath holds what llama-gguf-split wrote for splitCases: the
// parts' names, sizes and SHA-256 (some parts are megabytes: the tool's
// smallest --split-max-size is 1M).
const splitGoldenPath = "testdata/split/llama-gguf-split.json"

// splitInputs are the files splitCases split. "small" has a value of every
// type llama.cpp reads, general.alignment 32 (which the first part keeps),
// and tensors whose sizes need padding and whose dims end in 1s. "large" is
// GGUF v2 with tensors of hundreds of kB and split keys of its own, which
// the tool replaces and moves last.
func splitInputs(t testing.TB) map[string]*gguf.Builder {
	small := gguf.NewBuilder()
	small.Set("general.architecture", gguf.ValueOf("llama"))
	small.SetAlignment(32)
	for _, kv := range everyValue() {
		if elem, _ := kv.Value.ElemType(); elem != gguf.TypeArray { // llama.cpp reads no arrays of arrays
			small.Set(kv.Key, kv.Value)
		}
	}
	for i, tc := range []struct {
		name string
		typ  tensor.Type
		dims []uint64
	}{
		{"token_embd.weight", tensor.Q8_0, []uint64{64, 5}},
		{"norm.weight", tensor.F32, []uint64{3}},           // 12 bytes
		{"column.weight", tensor.F32, []uint64{5, 1}},      // written with n_dims 1
		{"cube.weight", tensor.F16, []uint64{2, 3, 1, 1}},  // n_dims 2
		{"q4.weight", tensor.Q4_K, []uint64{256, 2, 1, 3}}, // a 1 inside stays
		{"one.weight", tensor.F32, []uint64{1, 1}},         // n_dims 1
		{"bf16.weight", tensor.BF16, []uint64{7}},
	} {
		small.AddTensor(tc.name, tc.typ, tc.dims, tensorData(t, tc.typ, tc.dims, byte(i)))
	}

	large := gguf.NewBuilder()
	large.SetVersion(2)
	large.Set("general.architecture", gguf.ValueOf("llama"))
	large.Set(gguf.SplitCountKey, gguf.ValueOf(uint16(9)))
	large.Set(gguf.SplitNoKey, gguf.ValueOf(uint16(4)))
	large.Set("general.name", gguf.ValueOf("large"))
	for i, n := range []int{100_000, 100_000, 75_000, 125_000, 8} { // 400 kB, 400 kB, 300 kB, 500 kB, 32 B
		data := make([]byte, 4*n) // mostly zeros: the bytes do not matter, their places do
		copy(data, pattern(64, byte(i)))
		large.AddTensor("t"+string(rune('0'+i)), tensor.F32, []uint64{uint64(n)}, data)
	}
	return map[string]*gguf.Builder{"small": small, "large": large}
}

// splitCases are llama-gguf-split command lines and the options that ask
// SplitBytes for the same.
var splitCases = []struct {
	input string
	args  []string
	opts  gguf.SplitOptions
}{
	{"small", nil, gguf.SplitOptions{}},
	{"small", []string{"--split-max-tensors", "3"}, gguf.SplitOptions{MaxTensors: 3}},
	{"small", []string{"--split-max-tensors", "1"}, gguf.SplitOptions{MaxTensors: 1}},
	{"small", []string{"--split-max-tensors", "4", "--no-tensor-first-split"}, gguf.SplitOptions{MaxTensors: 4, NoTensorsInFirst: true}},
	{"large", []string{"--split-max-size", "1M"}, gguf.SplitOptions{MaxBytes: 1_000_000}},
	{"large", []string{"--split-max-size", "1M", "--no-tensor-first-split"}, gguf.SplitOptions{MaxBytes: 1_000_000, NoTensorsInFirst: true}},
}

// splitGolden is the file at splitGoldenPath.
type splitGolden struct {
	Tool   string                `json:"tool"`
	Inputs map[string]goldenFile `json:"inputs"`
	Cases  []splitGoldenCase     `json:"cases"`
}

type splitGoldenCase struct {
	Input string       `json:"input"`
	Args  []string     `json:"args"`
	Files []goldenFile `json:"files"` // in part order
}

type goldenFile struct {
	Name   string `json:"name,omitempty"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
}

func fileOf(name string, data []byte) goldenFile {
	sum := sha256.Sum256(data)
	return goldenFile{Name: name, Size: len(data), SHA256: hex.EncodeToString(sum[:])}
}

// TestSplitBytesAsLlamaGGUFSplit: SplitBytes writes the bytes
// llama-gguf-split writes for the same file and options.
func TestSplitBytesAsLlamaGGUFSplit(t *testing.T) {
	if *updateSplit {
		updateSplitGolden(t)
	}
	var golden splitGolden
	require.NoError(t, json.Unmarshal(readTestdata(t, "split/llama-gguf-split.json"), &golden))
	require.Len(t, golden.Cases, len(splitCases), "run go test -run TestSplitBytesAsLlamaGGUFSplit -update-split")
	inputs := splitInputs(t)
	for name, b := range inputs {
		data, err := b.Bytes()
		require.NoError(t, err)
		require.Equal(t, golden.Inputs[name], fileOf("", data), "input %q is not the file the tool split", name)
	}
	for i, c := range splitCases {
		require.Equal(t, c.input, golden.Cases[i].Input)
		require.Equal(t, c.args, golden.Cases[i].Args)
		parts, err := inputs[c.input].SplitBytes(c.opts)
		require.NoError(t, err, c.args)
		var got []goldenFile
		for j, p := range parts {
			got = append(got, fileOf(gguf.SplitPath("out", j+1, len(parts)), p))
		}
		assert.Equal(t, golden.Cases[i].Files, got, "%s %v", c.input, c.args)
	}
}

// updateSplitGolden runs llama-gguf-split on splitInputs for each case.
func updateSplitGolden(t *testing.T) {
	tool := os.Getenv("LLAMA_GGUF_SPLIT")
	require.NotEmpty(t, tool, "-update-split runs the llama-gguf-split that $LLAMA_GGUF_SPLIT names")
	dir := t.TempDir()
	golden := splitGolden{
		Tool: "llama-gguf-split of llama.cpp 80fb11a, the source node-llama-cpp 3.21.1 ships as node_modules/node-llama-cpp/llama/gitRelease.bundle " +
			"(git clone it; cmake -B build -DLLAMA_CURL=OFF; cmake --build build --target llama-gguf-split)",
		Inputs: map[string]goldenFile{},
	}
	for name, b := range splitInputs(t) {
		data, err := b.Bytes()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".gguf"), data, 0o644))
		golden.Inputs[name] = fileOf("", data)
	}
	for i, c := range splitCases {
		out := filepath.Join(dir, "case"+string(rune('a'+i)))
		require.NoError(t, os.Mkdir(out, 0o755))
		args := append(slices.Clone(c.args), filepath.Join(dir, c.input+".gguf"), filepath.Join(out, "out"))
		cmd := exec.Command(tool, args...)
		output, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", output)
		names, err := filepath.Glob(filepath.Join(out, "out-*.gguf"))
		require.NoError(t, err)
		slices.Sort(names)
		gc := splitGoldenCase{Input: c.input, Args: c.args}
		for _, name := range names {
			data, err := os.ReadFile(name)
			require.NoError(t, err)
			gc.Files = append(gc.Files, fileOf(filepath.Base(name), data))
		}
		golden.Cases = append(golden.Cases, gc)
	}
	data, err := json.MarshalIndent(golden, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(splitGoldenPath), 0o755))
	require.NoError(t, os.WriteFile(splitGoldenPath, append(data, '\n'), 0o644))
}

// TestSplitBytesParts: what each part holds, read back with Parse.
func TestSplitBytesParts(t *testing.T) {
	b := splitInputs(t)["small"]
	whole, err := b.Bytes()
	require.NoError(t, err)
	wf, err := gguf.Parse(whole)
	require.NoError(t, err)
	parts, err := b.SplitBytes(gguf.SplitOptions{MaxTensors: 3})
	require.NoError(t, err)
	require.Len(t, parts, 3) // 7 tensors: 3, 3, 1

	var tensors []gguf.TensorInfo
	for i, p := range parts {
		f, err := gguf.Parse(p)
		require.NoError(t, err, "part %d", i+1)
		assert.Equal(t, uint32(3), f.Version)
		s, ok, err := f.Split()
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, gguf.SplitInfo{Index: i, Count: 3, Tensors: 7}, s)

		var keys []string
		for _, kv := range f.KVs() {
			keys = append(keys, kv.Key)
		}
		tail := []string{gguf.SplitNoKey, gguf.SplitTensorsKey, gguf.SplitCountKey}
		if i == 0 {
			var want []string
			for _, kv := range wf.KVs() {
				want = append(want, kv.Key)
			}
			assert.Equal(t, append(want, tail...), keys)
			for _, kv := range wf.KVs() {
				v, _ := f.Lookup(kv.Key)
				assert.Equal(t, kv.Value.String(), v.String(), kv.Key)
			}
		} else {
			assert.Equal(t, tail, keys)
		}
		tensors = append(tensors, f.Tensors()...)
	}
	require.Len(t, tensors, len(wf.Tensors()))
	for i, want := range wf.Tensors() {
		got := tensors[i]
		assert.Equal(t, want.Name, got.Name)
		assert.Equal(t, want.Type, got.Type)
		assert.True(t, bytes.Equal(want.Data, got.Data), want.Name)
		trimmed := want.Dims
		for len(trimmed) > 1 && trimmed[len(trimmed)-1] == 1 {
			trimmed = trimmed[:len(trimmed)-1]
		}
		assert.Equal(t, trimmed, got.Dims, want.Name)
	}
}

// TestSplitBytesPlan: how many tensors each part gets.
func TestSplitBytesPlan(t *testing.T) {
	counts := func(b *gguf.Builder, opts gguf.SplitOptions) []int {
		parts, err := b.SplitBytes(opts)
		require.NoError(t, err)
		var n []int
		for _, p := range parts {
			f, err := gguf.Parse(p)
			require.NoError(t, err)
			n = append(n, len(f.Tensors()))
		}
		return n
	}
	small, large := splitInputs(t)["small"], splitInputs(t)["large"]
	assert.Equal(t, []int{7}, counts(small, gguf.SplitOptions{}))
	assert.Equal(t, []int{0, 7}, counts(small, gguf.SplitOptions{NoTensorsInFirst: true}))
	assert.Equal(t, []int{2, 2, 2, 1}, counts(small, gguf.SplitOptions{MaxTensors: 2}))
	assert.Equal(t, []int{7}, counts(small, gguf.SplitOptions{MaxTensors: 7}))
	// 400 000 + 400 000 fit 1 000 000 bytes, + 300 000 does not; 300 000 + 500 000 + 32 do.
	assert.Equal(t, []int{2, 3}, counts(large, gguf.SplitOptions{MaxBytes: 1_000_000}))
	assert.Equal(t, []int{1, 1, 1, 1, 1}, counts(large, gguf.SplitOptions{MaxBytes: 500_000}))
	assert.Equal(t, []int{1, 1, 1, 2}, counts(large, gguf.SplitOptions{MaxBytes: 500_032}), "a part may fill the limit exactly")
	assert.Equal(t, []int{0, 1, 1, 1, 2}, counts(large, gguf.SplitOptions{MaxBytes: 500_032, NoTensorsInFirst: true}))

	empty := gguf.NewBuilder()
	empty.Set("general.architecture", gguf.ValueOf("llama"))
	assert.Equal(t, []int{0}, counts(empty, gguf.SplitOptions{}))
	parts, err := empty.SplitBytes(gguf.SplitOptions{})
	require.NoError(t, err)
	assert.Zero(t, len(parts[0])%32, "a part without tensors is padded as ggml pads every header")
}

func TestSplitBytesRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		fill func(b *gguf.Builder)
		opts gguf.SplitOptions
	}{
		{"alignment 64", func(b *gguf.Builder) { b.SetAlignment(64) }, gguf.SplitOptions{}},
		{"alignment uint64", func(b *gguf.Builder) { b.Set(gguf.AlignmentKey, gguf.ValueOf(uint64(32))) }, gguf.SplitOptions{}},
		{"array of arrays", func(b *gguf.Builder) { b.Set("a", gguf.ArrayOfArrays(gguf.ArrayOf([]int32{1}))) }, gguf.SplitOptions{}},
		{"both limits", func(*gguf.Builder) {}, gguf.SplitOptions{MaxTensors: 2, MaxBytes: 1 << 20}},
		{"negative tensors", func(*gguf.Builder) {}, gguf.SplitOptions{MaxTensors: -1}},
		{"negative bytes", func(*gguf.Builder) {}, gguf.SplitOptions{MaxBytes: -1}},
		{"a tensor past the size", func(*gguf.Builder) {}, gguf.SplitOptions{MaxBytes: 63}},
		{"a tensor past the size, metadata first", func(*gguf.Builder) {}, gguf.SplitOptions{MaxBytes: 63, NoTensorsInFirst: true}},
		{"a builder error", func(b *gguf.Builder) { b.AddTensor("", tensor.F32, []uint64{1}, nil) }, gguf.SplitOptions{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := gguf.NewBuilder()
			b.AddTensor("w", tensor.F32, []uint64{16}, make([]byte, 64))
			c.fill(b)
			_, err := b.SplitBytes(c.opts)
			require.ErrorIs(t, err, gguf.ErrInvalid)
			t.Log(err)
		})
	}
}
