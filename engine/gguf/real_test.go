package gguf_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/testmodel"
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

// The expected values come from the shared models README, as copied into
// testdata/reference-models.md: stories260K is "dim 64, hidden 172, 5
// layers, 8 heads, 4 kv heads, vocab 512, seq_len 512"; its Q8_0 file is
// "GGUF v3 ... tensors: F16:5, F32:11, Q8_0:32"; the 172-wide
// blk.*.ffn_down fell back to F16; output.weight is a separate copy of
// token_embd.weight.
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

// testdata/reference-models.md: ggml-vocab-llama-spm.gguf is "vocab-only GGUF,
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

// referenceFacts is testdata/reference-models.md: lines copied verbatim
// from the shared models folder's README (shared/models/README.md, which is
// not part of this repository), one for each reference file the repository
// holds a copy of. The files the repository does not hold are left out, and
// so not checked here: synth-k256.bin (6.9 MB) and its F32, F16, Q8_0 and
// Q4_0 GGUF conversions (7.4, 3.7, 2.0 and 1.1 MB; engine/tensor keeps a few
// rows of each in its testdata/ggml), and the tokenizer test vectors of
// chameleon, command-r and roberta-bpe.
const referenceFacts = "testdata/reference-models.md"

// referenceEntry is what the reference README states about one file.
type referenceEntry struct {
	size      int            // "Size: 1185376 B."
	md5       string         // "md5: `3ea1...`"
	version   int            // "GGUF v3"; 0 for vocab files and non-GGUF files
	types     map[string]int // "tensors: F16:5, F32:11, Q8_0:32"
	tokenizer string         // "tokenizer.ggml.model=llama"
	pre       string         // "pre=default" ("-": no such key)
	tokens    int            // "32000 tokens"
}

var (
	referenceLine  = regexp.MustCompile("^- `([^`]+)` — (.*)$")
	referenceSize  = regexp.MustCompile("Size: (\\d+) B\\. md5: `([0-9a-f]{32})`")
	referenceVer   = regexp.MustCompile(`GGUF v(\d+)`)
	referenceTypes = regexp.MustCompile(`tensors: ([A-Z0-9_]+:\d+(?:, [A-Z0-9_]+:\d+)*)`)
	referenceVocab = regexp.MustCompile(`tokenizer\.ggml\.model=(\w+), pre=([^,]+), (\d+) tokens`)
)

// atoi converts a number the regular expressions above matched.
func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// readReferenceFacts parses referenceFacts, keyed by file name without its
// folder ("ggml-vocab-gpt-2.gguf" for "vocab/ggml-vocab-gpt-2.gguf").
func readReferenceFacts(t *testing.T) map[string]referenceEntry {
	t.Helper()
	fh, err := os.Open(referenceFacts)
	require.NoError(t, err)
	defer fh.Close()
	entries := map[string]referenceEntry{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := referenceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name, facts := path.Base(m[1]), m[2]
		var e referenceEntry
		sm := referenceSize.FindStringSubmatch(facts)
		require.NotNil(t, sm, "%s: no size and md5", name)
		e.size, e.md5 = atoi(t, sm[1]), sm[2]
		if strings.HasSuffix(name, ".gguf") {
			if v := referenceVer.FindStringSubmatch(facts); v != nil {
				e.version = atoi(t, v[1])
			}
			if ty := referenceTypes.FindStringSubmatch(facts); ty != nil {
				e.types = map[string]int{}
				for _, pair := range strings.Split(ty[1], ", ") {
					typ, n, ok := strings.Cut(pair, ":")
					require.True(t, ok, pair)
					e.types[typ] = atoi(t, n)
				}
			}
			if v := referenceVocab.FindStringSubmatch(facts); v != nil {
				e.tokenizer, e.pre, e.tokens = v[1], v[2], atoi(t, v[3])
			}
			require.True(t, e.types != nil || e.tokenizer != "", "%s: neither tensor types nor a vocabulary", name)
		}
		_, dup := entries[name]
		require.False(t, dup, "%s twice", name)
		entries[name] = e
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, entries)
	return entries
}

// repositoryRoot is the directory of go.mod above the test's directory.
func repositoryRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test's directory")
		dir = parent
	}
}

// notRepository are the folders under the root that are not the
// repository's files: git's, npm's and the build outputs .gitignore names.
var notRepository = []string{".git", "node_modules", "build", "web/dist", "bench/models", "tests/e2e/artifacts"}

// Every copy of a reference file in the repository, wherever it is and
// gzipped or not, has the size and md5 the reference README states; every
// GGUF file parses, has the version, tensor types and vocabulary stated, its
// tensors are views of the file, and the Builder writes it again byte for
// byte. Every file the facts describe must be found.
func TestReferenceFiles(t *testing.T) {
	entries := readReferenceFacts(t)
	root := repositoryRoot(t)
	found := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if slices.Contains(notRepository, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		name := strings.TrimSuffix(d.Name(), ".gz")
		e, ok := entries[name]
		if !ok || !d.Type().IsRegular() {
			return nil
		}
		found[name]++
		t.Run(rel, func(t *testing.T) { checkReferenceFile(t, p, name, e) })
		return nil
	})
	require.NoError(t, err)
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		assert.Positive(t, found[name], "%s describes %s, which the repository does not hold", referenceFacts, name)
	}
}

// checkReferenceFile checks one copy (at path, gzipped if it ends in .gz)
// of the reference file name against what the README states of it.
func checkReferenceFile(t *testing.T, path, name string, e referenceEntry) {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		require.NoError(t, err)
		data, err = io.ReadAll(zr)
		require.NoError(t, err)
		require.NoError(t, zr.Close())
	}
	require.Len(t, data, e.size)
	require.Equal(t, e.md5, fmt.Sprintf("%x", md5.Sum(data)))
	if !strings.HasSuffix(name, ".gguf") {
		return
	}
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	checkTensors(t, f, data)
	if e.version != 0 {
		assert.Equal(t, uint32(e.version), f.Version)
	}
	if e.types != nil {
		assert.Equal(t, e.types, typeCounts(f))
	} else {
		assert.Empty(t, f.Tensors(), "a vocab-only file")
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
		assert.Equal(t, e.tokens, len(tokens), "tokens")
	}
	assert.True(t, bytes.Equal(data, rebuild(t, f)), "rebuilt bytes differ")
}

// The F32 conversion of stories260K keeps token_embd.weight verbatim: its
// data is the llama2.c checkpoint's token embedding table, which follows
// the checkpoint's 7-int32 header. (TestReferenceFiles checks both files
// are the reference's bytes.)
func TestStoriesF32MatchesCheckpoint(t *testing.T) {
	ckpt, _ := testmodel.Stories260K()
	data, err := os.ReadFile("../testdata/gguf/stories260K-F32.gguf")
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	embd, ok := f.Tensor("token_embd.weight")
	require.True(t, ok)
	const headerBytes = 7 * 4
	require.Equal(t, 512*64*4, embd.Size)
	assert.True(t, bytes.Equal(ckpt[headerBytes:headerBytes+embd.Size], embd.Data))
}
