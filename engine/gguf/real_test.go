package gguf_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// checkTensors checks what must hold for every tensor of a parsed file: its
// size follows from its type and dims, its offset is aligned, and its Data
// is the file's own bytes at DataOffset+Offset (a view, not a copy).
func checkTensors(t *testing.T, f *gguf.File, data []byte) {
	t.Helper()
	for _, ti := range f.Tensors() {
		rowBytes, err := tensor.RowBytes(ti.Type, int(ti.Dims[0]))
		require.NoError(t, err, ti.Name)
		rows := 1
		for _, d := range ti.Dims[1:] {
			rows *= int(d)
		}
		assert.Equal(t, rowBytes*rows, ti.Size, ti.Name)
		assert.Len(t, ti.Data, ti.Size, ti.Name)
		assert.Zero(t, ti.Offset%f.Alignment, ti.Name)
		assert.Same(t, &data[f.DataOffset+ti.Offset], &ti.Data[0], "%s: Data must alias the file", ti.Name)
		got, ok := f.Tensor(ti.Name)
		require.True(t, ok, ti.Name)
		assert.Equal(t, ti, got)
	}
}

// typeCounts counts a file's tensors by type name ("Q8_0": 32, ...).
func typeCounts(f *gguf.File) map[string]int {
	counts := map[string]int{}
	for _, ti := range f.Tensors() {
		counts[ti.Type.String()]++
	}
	return counts
}

// rebuild writes a parsed file again with the Builder.
func rebuild(t testing.TB, f *gguf.File) []byte {
	t.Helper()
	b := gguf.NewBuilder()
	b.SetVersion(f.Version)
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors() {
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
	}
	data, err := b.Bytes()
	require.NoError(t, err)
	return data
}

// The expected values come from /work/shared/models/README.md: stories260K
// is "dim 64, hidden 172, 5 layers, 8 heads, 4 kv heads, vocab 512, seq_len
// 512"; its Q8_0 file is "GGUF v3 ... tensors: F16:5, F32:11, Q8_0:32"; the
// 172-wide blk.*.ffn_down fell back to F16; output.weight is a separate copy
// of token_embd.weight.
func TestParseStories260KQ8_0(t *testing.T) {
	data := readTestdata(t, "stories260K-Q8_0.gguf")
	f, err := gguf.Parse(data)
	require.NoError(t, err)

	assert.Equal(t, uint32(3), f.Version)
	assert.Equal(t, gguf.DefaultAlignment, f.Alignment)
	assert.Equal(t, map[string]int{"F16": 5, "F32": 11, "Q8_0": 32}, typeCounts(f))
	assert.Len(t, f.Tensors(), 48)

	for key, want := range map[string]uint32{
		"llama.context_length":          512,
		"llama.embedding_length":        64,
		"llama.feed_forward_length":     172,
		"llama.block_count":             5,
		"llama.attention.head_count":    8,
		"llama.attention.head_count_kv": 4,
	} {
		got, err := f.Uint32(key)
		require.NoError(t, err, key)
		assert.Equal(t, want, got, key)
	}
	arch, err := f.String("general.architecture")
	require.NoError(t, err)
	assert.Equal(t, "llama", arch)
	model, err := f.String("tokenizer.ggml.model")
	require.NoError(t, err)
	assert.Equal(t, "llama", model)
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	require.NoError(t, err)
	assert.Len(t, tokens, 512)
	scores, err := f.Float32s("tokenizer.ggml.scores")
	require.NoError(t, err)
	assert.Len(t, scores, 512)
	types, err := f.Int32s("tokenizer.ggml.token_type")
	require.NoError(t, err)
	assert.Len(t, types, 512)

	checkTensors(t, f, data)
	embd, ok := f.Tensor("token_embd.weight")
	require.True(t, ok)
	assert.Equal(t, []uint64{64, 512}, embd.Dims) // (dim, vocab), dim innermost
	out, ok := f.Tensor("output.weight")
	require.True(t, ok)
	assert.Equal(t, embd.Data, out.Data, "output.weight is a copy of token_embd.weight")
	for layer := range 5 {
		down, ok := f.Tensor("blk." + strconv.Itoa(layer) + ".ffn_down.weight")
		require.True(t, ok)
		assert.Equal(t, tensor.F16, down.Type)
		assert.Equal(t, []uint64{172, 64}, down.Dims)
	}
}

// README: ggml-vocab-llama-spm.gguf is "vocab-only GGUF,
// tokenizer.ggml.model=llama, pre=default, 32000 tokens" from llama.cpp.
func TestParseVocabLlamaSPM(t *testing.T) {
	data := readTestdata(t, "ggml-vocab-llama-spm.gguf")
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	assert.Empty(t, f.Tensors())
	assert.Equal(t, len(data), f.DataOffset, "llama.cpp writes no padding after a tensor-less header")

	for key, want := range map[string]string{
		"general.architecture": "llama", "tokenizer.ggml.model": "llama", "tokenizer.ggml.pre": "default",
	} {
		got, err := f.String(key)
		require.NoError(t, err, key)
		assert.Equal(t, want, got, key)
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	require.NoError(t, err)
	assert.Len(t, tokens, 32000)
	scores, err := f.Float32s("tokenizer.ggml.scores")
	require.NoError(t, err)
	assert.Len(t, scores, 32000)
	types, err := f.Int32s("tokenizer.ggml.token_type")
	require.NoError(t, err)
	assert.Len(t, types, 32000)
}

// Writing a parsed llama.cpp file again must give back the very same bytes:
// the Builder lays out files as llama.cpp does.
func TestRebuildRealFilesByteIdentical(t *testing.T) {
	for _, name := range []string{"stories260K-Q8_0.gguf", "ggml-vocab-llama-spm.gguf"} {
		t.Run(name, func(t *testing.T) {
			data := readTestdata(t, name)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(data, rebuild(t, f)))
		})
	}
}

func TestSummaryOfRealFileIsJSON(t *testing.T) {
	f, err := gguf.Parse(readTestdata(t, "stories260K-Q8_0.gguf"))
	require.NoError(t, err)
	out, err := json.Marshal(f.Summary(3))
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(out, &back))
	assert.Len(t, back, len(f.KVs()))
	assert.Equal(t, "llama", back["general.architecture"])
	assert.Equal(t, 512.0, back["llama.context_length"])
	tokens := back["tokenizer.ggml.tokens"].(map[string]any)
	assert.Equal(t, 512.0, tokens["len"])
	assert.Equal(t, "string", tokens["type"])
	assert.Equal(t, []any{"<unk>", "<s>", "</s>"}, tokens["head"]) // the llama vocab's first three
}

const sharedModels = "/work/shared/models"

// readmeEntry is what /work/shared/models/README.md states about one file.
type readmeEntry struct {
	version   int            // "GGUF v3"; 0 for vocab files
	types     map[string]int // "tensors: F16:5, F32:11, Q8_0:32"
	tokenizer string         // "tokenizer.ggml.model=llama"
	pre       string         // "pre=default" ("-": no such key)
	tokens    int            // "32000 tokens"
}

var (
	readmeLine  = regexp.MustCompile("^- `([^`]+\\.gguf)` — (.*)$")
	readmeVer   = regexp.MustCompile(`GGUF v(\d+)`)
	readmeTypes = regexp.MustCompile(`tensors: ([A-Z0-9_]+:\d+(?:, [A-Z0-9_]+:\d+)*)`)
	readmeVocab = regexp.MustCompile(`tokenizer\.ggml\.model=(\w+), pre=([^,]+), (\d+) tokens`)
)

func parseReadme(t *testing.T) map[string]readmeEntry {
	fh, err := os.Open(filepath.Join(sharedModels, "README.md"))
	require.NoError(t, err)
	defer fh.Close()
	entries := map[string]readmeEntry{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := readmeLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var e readmeEntry
		if v := readmeVer.FindStringSubmatch(m[2]); v != nil {
			e.version, _ = strconv.Atoi(v[1])
		}
		if ty := readmeTypes.FindStringSubmatch(m[2]); ty != nil {
			e.types = map[string]int{}
			for _, pair := range strings.Split(ty[1], ", ") {
				name, n, _ := strings.Cut(pair, ":")
				e.types[name], _ = strconv.Atoi(n)
			}
		}
		if v := readmeVocab.FindStringSubmatch(m[2]); v != nil {
			e.tokenizer, e.pre = v[1], v[2]
			e.tokens, _ = strconv.Atoi(v[3])
		}
		entries[m[1]] = e
	}
	require.NoError(t, sc.Err())
	return entries
}

// Every reference GGUF file parses, and what the README says of it holds.
// Skipped where /work/shared is absent (CI).
func TestSharedModels(t *testing.T) {
	if _, err := os.Stat(sharedModels); err != nil {
		t.Skip("no", sharedModels)
	}
	entries := parseReadme(t)
	files, err := filepath.Glob(filepath.Join(sharedModels, "*.gguf"))
	require.NoError(t, err)
	vocab, err := filepath.Glob(filepath.Join(sharedModels, "vocab", "*.gguf"))
	require.NoError(t, err)
	files = append(files, vocab...)
	require.NotEmpty(t, files)
	for _, path := range files {
		rel, err := filepath.Rel(sharedModels, path)
		require.NoError(t, err)
		t.Run(rel, func(t *testing.T) {
			e, ok := entries[rel]
			require.True(t, ok, "README does not describe %s", rel)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			checkTensors(t, f, data)
			if e.version != 0 {
				assert.Equal(t, uint32(e.version), f.Version)
			}
			if e.types != nil {
				assert.Equal(t, e.types, typeCounts(f))
			}
			if e.tokenizer != "" {
				model, err := f.String("tokenizer.ggml.model")
				require.NoError(t, err)
				assert.Equal(t, e.tokenizer, model)
				pre, err := f.StringOr("tokenizer.ggml.pre", "-")
				require.NoError(t, err)
				assert.Equal(t, e.pre, pre)
				tokens, err := f.Strings("tokenizer.ggml.tokens")
				require.NoError(t, err)
				assert.Len(t, tokens, e.tokens)
			}
			assert.True(t, bytes.Equal(data, rebuild(t, f)), "rebuilt bytes differ")
		})
	}
}

// The F32 conversion of stories260K keeps token_embd.weight verbatim: its
// data is the llama2.c checkpoint's token embedding table, which follows
// the checkpoint's 7-int32 header.
func TestSharedStoriesF32MatchesCheckpoint(t *testing.T) {
	ckpt, err := os.ReadFile(filepath.Join(sharedModels, "stories260K.bin"))
	if err != nil {
		t.Skip("no", sharedModels)
	}
	data, err := os.ReadFile(filepath.Join(sharedModels, "stories260K-F32.gguf"))
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	embd, ok := f.Tensor("token_embd.weight")
	require.True(t, ok)
	const headerBytes = 7 * 4
	require.Equal(t, 512*64*4, embd.Size)
	assert.True(t, bytes.Equal(ckpt[headerBytes:headerBytes+embd.Size], embd.Data))
}
