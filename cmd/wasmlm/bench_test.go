package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// TestBenchJSON: a quick bench of the default model and a GGUF file gives
// one sane result each: exactly the prompt and tokens asked for (greedy, the
// end tokens banned), positive rates, and sizes that follow from the model's
// documented shape (stories260K: 5 layers, context 512, 4 kv heads of 8).
func TestBenchJSON(t *testing.T) {
	q8 := "../../engine/testdata/gguf/stories260K-Q8_0.gguf"
	code, out, errOut := runCLI(t, "bench", "-m", "", "-m", q8, "-prompt", "16", "-n", "24", "-json")
	// (-warmup is left at its default, 1s a model.)
	require.Equal(t, exitOK, code, errOut)
	var res benchJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, runtime.GOOS, res.GOOS)
	assert.Equal(t, runtime.Version(), res.GoVersion)
	assert.Equal(t, []int{16, 24}, []int{res.PromptTokens, res.MaxTokens})
	assert.Equal(t, 1000.0, res.WarmupMS, "-warmup defaults to 1s")
	require.Len(t, res.Models, 2)

	st, err := os.Stat(q8)
	require.NoError(t, err)
	for i, want := range []struct {
		model, name string
		size        int
	}{
		{models.DefaultFile, models.DefaultName, len(models.Default())},
		{q8, "stories260K-Q8_0", int(st.Size())},
	} {
		r := res.Models[i]
		assert.Equal(t, want.model, r.Model)
		assert.Equal(t, want.name, r.Name)
		assert.Equal(t, want.size, r.FileSize)
		assert.Equal(t, "llama", r.Architecture)
		assert.Equal(t, 512, r.ContextLength)
		assert.EqualValues(t, 2*5*512*(4*8)*4, r.KVCacheBytes, "2 · layers · context · kvDim · 4 bytes")
		assert.Equal(t, engine.KVF32, r.KVType, "-kv-type auto, a small model")
		assert.Positive(t, r.WarmupTokens)
		assert.Zero(t, r.WarmupTokens%8, "rounds of 8 tokens")
		assert.Equal(t, 16, r.PromptTokens)
		assert.Equal(t, 24, r.GeneratedTokens, "never stops early")
		assert.Equal(t, string(engine.FinishLength), r.FinishReason)
		assert.Equal(t, 23, r.DecodeTokens, "decode counts the tokens after the first")
		for name, v := range map[string]float64{
			"load": r.LoadMS, "ttft": r.TimeToFirstTokenMS, "prefill": r.PrefillTokensPerSecond, "decode": r.DecodeTokensPerSecond,
		} {
			assert.Positive(t, v, name)
		}
		assert.GreaterOrEqual(t, r.TimeToFirstTokenMS, r.PrefillMS, "the first token comes after the prompt")
		assert.Greater(t, r.PeakMemoryBytes, uint64(r.FileSize), "the model is in memory")
		assert.Contains(t, []string{sourceVmHWM, sourceSys, sourceLifetime}, r.PeakMemorySource)
		assert.NotEmpty(t, r.TensorTypes)
	}
	data, err := os.ReadFile(q8)
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	want := map[string]int{}
	for _, ti := range f.Tensors() {
		want[ti.Type.String()]++
	}
	assert.Equal(t, want, res.Models[1].TensorTypes, "the file's tensors by type")
}

// TestBenchText: without -json, a header, a row per model and a note.
func TestBenchText(t *testing.T) {
	code, out, errOut := runCLI(t, "bench", "-prompt", "4", "-n", "4", "-warmup", "0")
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	assert.Contains(t, lines[0], "prompt 4 tokens, 4 generated")
	assert.Contains(t, lines[1], "decode/s")
	assert.True(t, strings.HasPrefix(lines[2], models.DefaultName), lines[2])
	assert.True(t, strings.HasSuffix(lines[2], " 0.6 f32"), "the KV cache: %s", lines[2])
	assert.Contains(t, lines[3], "peak memory:")
}

// TestBenchKVType: -kv-type f16 gives the session an F16 cache, half the
// size.
func TestBenchKVType(t *testing.T) {
	code, out, errOut := runCLI(t, "bench", "-prompt", "4", "-n", "4", "-warmup", "0", "-kv-type", "f16", "-json")
	require.Equal(t, exitOK, code, errOut)
	var res benchJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Models, 1)
	assert.Equal(t, engine.KVF16, res.Models[0].KVType)
	assert.EqualValues(t, 2*5*512*(4*8)*2, res.Models[0].KVCacheBytes, "2 · layers · context · kvDim · 2 bytes")
}

// TestBenchPrompt: the synthetic prompt starts with BOS, has the length
// asked for, stays in the vocabulary and avoids the banned (special) ids.
func TestBenchPrompt(t *testing.T) {
	for _, tt := range []struct{ n, vocab, bos int }{{128, 32000, 1}, {300, 512, 1}, {5, 260, -1}, {1, 512, 1}} {
		banned := map[int]float32{1: 0, 2: 0, 7919 % tt.vocab: 0, 7919%tt.vocab + 1: 0}
		ids := benchPrompt(tt.n, tt.vocab, tt.bos, banned)
		require.Len(t, ids, tt.n)
		start := 0
		if tt.bos >= 0 {
			assert.Equal(t, tt.bos, ids[0])
			start = 1
		}
		for _, id := range ids[start:] {
			assert.True(t, id >= 0 && id < tt.vocab, "id %d", id)
			_, bad := banned[id]
			assert.False(t, bad, "banned id %d", id)
		}
		assert.Equal(t, ids, benchPrompt(tt.n, tt.vocab, tt.bos, banned), "the same prompt every time")
	}
}

// TestBenchGen: -gen writes the benchmark's models and a manifest, and a
// second -gen keeps them.
func TestBenchGen(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 100 MB of models")
	}
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "bench", "-gen", dir, "-shapes", "stories15M")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 4, strings.Count(errOut, "wrote "), errOut)
	man := readManifest(dir)
	require.Len(t, man.Models, 4)
	for _, e := range man.Models {
		st, err := os.Stat(filepath.Join(dir, e.File))
		require.NoError(t, err)
		assert.Equal(t, e.Size, st.Size())
		assert.Equal(t, e.Name+".gguf", e.File)
		assert.Equal(t, 43, sum(e.MatrixTypes), "6 layers × 7 matrices + the embedding")
	}
	assert.Equal(t, map[string]int{"Q5_0": 37, "Q4_K": 6}, man.Models[3].MatrixTypes, "288-value rows fall back to Q5_0")

	data, err := os.ReadFile(filepath.Join(dir, "stories15M-Q4_0.gguf"))
	require.NoError(t, err)
	m, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 288, m.Config().Dim)

	code, _, errOut = runCLI(t, "bench", "-gen", dir, "-shapes", "stories15M")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 4, strings.Count(errOut, "kept "), errOut)

	require.NoError(t, os.Truncate(filepath.Join(dir, "stories15M-Q8_0.gguf"), 100))
	code, _, errOut = runCLI(t, "bench", "-gen", dir, "-shapes", "stories15M")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, errOut, "wrote "+filepath.Join(dir, "stories15M-Q8_0.gguf"), "a damaged file is written again")

	// -models: only those, the others untouched.
	other := t.TempDir()
	code, _, errOut = runCLI(t, "bench", "-gen", other, "-shapes", "stories15M", "-models", "stories15M-Q4_0")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, 1, strings.Count(errOut, "wrote "), errOut)
	man = readManifest(other)
	require.Len(t, man.Models, 1)
	assert.Equal(t, "stories15M-Q4_0", man.Models[0].Name)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestBenchErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bench", "-prompt", "0"}, exitUsage, "-prompt, -n and -rounds must be >= 1"},
		{[]string{"bench", "-rounds", "0"}, exitUsage, "-rounds must be >= 1"},
		{[]string{"bench", "-temperature", "-1"}, exitUsage, "-temperature >= 0"},
		{[]string{"bench", "-json-schema", "a.json", "-grammar", "b.gbnf"}, exitUsage, "exclude each other"},
		{[]string{"bench", "-json-schema", "/nonexistent/schema.json"}, exitUsage, "no such file"},
		{[]string{"bench", "-grammar", "testdata/bench-bad.gbnf"}, exitUsage, "no such file"},
		{[]string{"bench", "-warmup", "-1s"}, exitUsage, "-warmup"},
		{[]string{"bench", "stray"}, exitUsage, "models go in -m"},
		{[]string{"bench", "-prompt", "400", "-n", "200"}, exitError, "do not fit the context of 512"},
		{[]string{"bench", "-m", "/nonexistent/model.gguf"}, exitError, "no such file"},
		{[]string{"bench", "-gen", "x", "-m", "y"}, exitUsage, "takes no -m"},
		{[]string{"bench", "-gen", "x", "-shapes", "stories42M"}, exitError, `no shape named "stories42M"`},
		{[]string{"bench", "-gen", "x", "-shapes", "stories15M", "-models", "stories15M-Q9_0"}, exitError, `no model "stories15M-Q9_0"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}

// TestBenchGrammar: with -json-schema, each round is a generation without
// the schema (all the tokens asked for) and two held to it, whose texts
// are JSON.
func TestBenchGrammar(t *testing.T) {
	code, out, errOut := runCLI(t, "bench", "-m", "../../engine/testdata/gguf/stories260K-Q8_0.gguf", "-prompt", "8", "-n", "120",
		"-warmup", "0", "-temperature", "1", "-seed", "3", "-json-schema", "../../bench/grammar-schema.json", "-rounds", "2", "-json")
	require.Equal(t, exitOK, code, errOut)
	var res benchJSON
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res.Models, 1)
	runs := res.Models[0].Constrained
	require.Len(t, runs, 6)
	for i, r := range runs {
		assert.Equal(t, i/3, r.Round)
		assert.Equal(t, []string{"without", "first", "again"}[i%3], r.Pass)
		assert.Positive(t, r.DecodeTokensPerSecond)
		if r.Pass == "without" {
			assert.Equal(t, 120, r.GeneratedTokens, "the end tokens banned")
			continue
		}
		assert.True(t, r.ValidJSON, "%s: %q", r.Pass, r.Text)
		assert.LessOrEqual(t, r.GeneratedTokens, 120)
	}
	assert.Equal(t, runs[1].Text, runs[2].Text, "the same seed, the same grammar: the same text")
}

// TestBenchGenParity: -shapes parity writes one model per architecture,
// <architecture>.gguf in F32 and <architecture>-<type>.gguf quantized (and
// an architecture's second model, <architecture>-<variant>.gguf and
// <architecture>-<variant>-<type>.gguf), each of which loads and, but for
// the encoders, generates.
func TestBenchGenParity(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runCLI(t, "bench", "-gen", dir, "-shapes", "parity")
	require.Equal(t, exitOK, code, errOut)
	man := readManifest(dir)
	require.Len(t, man.Models, len(modelgen.ParityModels()))
	for _, arch := range modelgen.ParityArchitectures() {
		assert.True(t, slices.ContainsFunc(man.Models, func(e manifestEntry) bool { return e.Name == arch && e.File == arch+".gguf" }), arch)
	}
	for _, e := range man.Models {
		assert.Equal(t, "parity", e.Shape, e.Name)
		assert.Equal(t, e.Name+".gguf", e.File)
		assert.True(t, strings.HasPrefix(e.Name, e.Spec.Arch), e.Name)
		if e.Type != "F32" {
			assert.True(t, strings.HasSuffix(e.Name, "-"+e.Type), e.Name)
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.File))
		require.NoError(t, err, e.Name)
		m, err := engine.Load(data, engine.LoadOptions{})
		require.NoError(t, err, e.Name)
		assert.Equal(t, e.Spec.Arch, m.Info().Architecture, e.Name)
		if !m.Generates() {
			continue
		}
		code, out, errOut := runCLI(t, "generate", "-m", filepath.Join(dir, e.File), "-n", "4", "-temp", "0", "-p", "a")
		require.Equal(t, exitOK, code, "%s: %s", e.Name, errOut)
		assert.NotEmpty(t, out, e.Name)
	}
}
