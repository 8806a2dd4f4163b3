//go:build !js

package wasmlm_test

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// tryModels are the shapes and tensor types of docs/try-a-model.md's
// models, by the name its table gives them; mixed is true for a file whose
// matrices are of several types (a _K_M quantization), which no
// random-weight file here reproduces.
var tryModels = map[string]struct {
	spec  modelgen.Spec
	mixed bool
}{
	"Qwen3-0.6B": {spec: modelgen.Spec{Arch: "qwen3", Shape: modelgen.Qwen3_0_6B(), Type: tensor.Q8_0}},
	"Llama-3.2-1B-Instruct": {spec: modelgen.Spec{Shape: modelgen.Shape{Dim: 2048, HiddenDim: 8192, Layers: 16, Heads: 32, KVHeads: 8,
		VocabSize: 128256, ContextLength: 131072}, Type: tensor.Q4_K}, mixed: true},
	"Gemma-3-1B-it": {spec: modelgen.Spec{Arch: "gemma3", Shape: modelgen.Gemma3_1B(), Type: tensor.Q8_0}},
	"SmolLM2-360M-Instruct": {spec: modelgen.Spec{Shape: modelgen.Shape{Dim: 960, HiddenDim: 2560, Layers: 32, Heads: 15, KVHeads: 5,
		VocabSize: 49152, ContextLength: 8192}, Type: tensor.Q8_0}},
	"all-MiniLM-L6-v2": {spec: modelgen.Spec{Arch: "bert", Shape: modelgen.MiniLML6(), Type: tensor.F16}},
	"bge-small-en-v1.5": {spec: modelgen.Spec{Arch: "bert", Shape: modelgen.Shape{Dim: 384, HiddenDim: 1536, Layers: 12, Heads: 12, KVHeads: 12,
		VocabSize: modelgen.BertVocabSize, ContextLength: 512}, Type: tensor.Q8_0}},
}

// docs/try-a-model.md's memory column is what inspect predicts (the
// engine's EstimateMemory at the default context and KV type) for a file
// of the model's shape and the documented size, and each documented size
// of a file of one tensor type is within 1% of a random-weight file's of
// that shape and type.
func TestTryAModelDocs(t *testing.T) {
	doc, err := os.ReadFile("docs/try-a-model.md")
	require.NoError(t, err)
	seen := 0
	for line := range strings.Lines(string(doc)) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 7 {
			continue
		}
		name := strings.TrimSpace(cells[1])
		m, ok := tryModels[name]
		if !ok {
			continue
		}
		seen++
		t.Run(name, func(t *testing.T) {
			size := parseSize(t, strings.TrimSpace(cells[4]))
			l, err := modelgen.Header(m.spec)
			require.NoError(t, err)
			f, err := gguf.ParseHeader(l.Header, int64(l.Size))
			require.NoError(t, err)
			h, err := engine.ReadHeader(f)
			require.NoError(t, err)
			positions, err := h.SessionContextLength(0)
			require.NoError(t, err)
			kv := engine.KVAuto.Resolve(h.Info(l.Size).Parameters)
			memory := engine.EstimateMemory(h.Config(), size, positions, kv)
			assert.Equal(t, fmtSize(memory.Total), strings.TrimSpace(cells[5]), "the memory inspect predicts")
			if !m.mixed {
				assert.InDelta(t, 1, float64(l.Size)/float64(size), 0.01, "the documented size %d, a random file's %d", size, l.Size)
			}
		})
	}
	assert.Equal(t, len(tryModels), seen, "every model has its row")
}

// parseSize reads "639 MB" or "1.07 GB" (powers of 1000, as Hugging Face
// shows sizes).
func parseSize(t *testing.T, s string) int64 {
	t.Helper()
	num, unit, ok := strings.Cut(s, " ")
	require.True(t, ok, "a size: %q", s)
	v, err := strconv.ParseFloat(num, 64)
	require.NoError(t, err, s)
	scale := map[string]float64{"MB": 1e6, "GB": 1e9}[unit]
	require.NotZero(t, scale, "MB or GB: %q", s)
	return int64(math.Round(v * scale))
}

// fmtSize writes bytes as the table does: whole MB below 1 GB, GB to two
// decimals above.
func fmtSize(n int64) string {
	if n < 1e9 {
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}
