package modelgen_test

import (
	"cmp"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestQwen3Files: a qwen3 model holds what llama.cpp's converter writes for
// one (and llama.cpp's loader asks for): attention.key_length and
// value_length, queries Heads·HeadDim wide and an output projection as
// wide, one q and one k norm of HeadDim per layer, no biases; a llama
// model with a HeadDim writes the keys too, one without does not.
func TestQwen3Files(t *testing.T) {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 300, ContextLength: 32}
	tests := []struct {
		name     string
		spec     modelgen.Spec
		keys     bool // key_length and value_length written
		headDim  int
		qkNorms  bool
		tensors  int
		wantArch string
	}{
		{"qwen3 wide heads", modelgen.Spec{Arch: "qwen3", Shape: shape, Type: tensor.Q8_0, Seed: 1}, true, 32, true, 1 + 2*(7+4) + 1, "qwen3"},
		{"qwen3 dim/heads", modelgen.Spec{Arch: "qwen3", Shape: withHeadDim(shape, 0), Seed: 1}, true, 16, true, 1 + 2*(7+4) + 1, "qwen3"},
		{"llama with a head dim", modelgen.Spec{Shape: shape, Seed: 1}, true, 32, false, 1 + 2*(7+2) + 1, "llama"},
		{"llama without", modelgen.Spec{Shape: withHeadDim(shape, 0), Seed: 1}, false, 16, false, 1 + 2*(7+2) + 1, "llama"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := parse(t, tt.spec)
			prefix := tt.wantArch + ".attention."
			for _, key := range []string{"key_length", "value_length"} {
				v, err := f.Uint32(prefix + key)
				if !tt.keys {
					assert.ErrorIs(t, err, gguf.ErrNotFound, key)
					continue
				}
				require.NoError(t, err, key)
				assert.EqualValues(t, tt.headDim, v, key)
			}
			assert.Len(t, f.Tensors(), tt.tensors)
			q := uint64(tt.headDim * shape.Heads)
			for name, dims := range map[string][]uint64{
				"blk.1.attn_q.weight":      {64, q},
				"blk.1.attn_k.weight":      {64, uint64(tt.headDim * shape.KVHeads)},
				"blk.1.attn_output.weight": {q, 64},
			} {
				ti, ok := f.Tensor(name)
				require.True(t, ok, name)
				assert.Equal(t, dims, ti.Dims, name)
			}
			for _, name := range []string{"blk.0.attn_q_norm.weight", "blk.0.attn_k_norm.weight"} {
				ti, ok := f.Tensor(name)
				assert.Equal(t, tt.qkNorms, ok, name)
				if ok {
					assert.Equal(t, []uint64{uint64(tt.headDim)}, ti.Dims, name)
				}
			}
			_, bias := f.Tensor("blk.0.attn_q.bias")
			assert.False(t, bias)

			data, err := modelgen.Build(tt.spec)
			require.NoError(t, err)
			m, err := engine.Load(data, engine.LoadOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.wantArch, m.Architecture())
			assert.Equal(t, tt.headDim, m.Config().HeadDim())
			assert.Equal(t, tt.headDim, m.Info().HeadDim)
		})
	}
}

func withHeadDim(s modelgen.Shape, d int) modelgen.Shape {
	s.HeadDim = d
	return s
}

// TestQwen3_0_6B: the benchmark's Qwen3-0.6B shape has Qwen3-0.6B's
// parameters, 596,049,920 (its Hugging Face checkpoint's count, the output
// tied to the embedding), read from the header alone; its bench models
// are qwen3 files in Q8_0, Q4_0 and Q4_K.
func TestQwen3_0_6B(t *testing.T) {
	sh, err := modelgen.ShapeByName("qwen3-0.6b")
	require.NoError(t, err)
	assert.Equal(t, modelgen.Qwen3_0_6B(), sh)
	h, size := benchHeader(t, "qwen3", sh)
	c := h.Config()
	assert.Equal(t, []int{1024, 2048, 1024, 128}, []int{c.Dim, c.QDim(), c.KVDim(), c.HeadDim()})
	assert.EqualValues(t, 596_049_920, h.Info(size).Parameters)
	requireBenchModels(t, "qwen3-0.6b", "qwen3", "qwen3-0.6b-Q8_0", "qwen3-0.6b-Q4_0", "qwen3-0.6b-Q4_K")
	assert.Equal(t, "llama", modelgen.ArchOf("tinyllama"))
}

// benchHeader is the header of shape sh as an arch file in Q8_0, read by
// the engine, and the file's size.
func benchHeader(t *testing.T, arch string, sh modelgen.Shape) (*engine.Header, int) {
	t.Helper()
	l, err := modelgen.Header(modelgen.Spec{Arch: arch, Shape: sh, Type: tensor.Q8_0})
	require.NoError(t, err)
	f, err := gguf.ParseHeader(l.Header, int64(l.Size))
	require.NoError(t, err)
	h, err := engine.ReadHeader(f)
	require.NoError(t, err)
	return h, l.Size
}

// requireBenchModels checks that the benchmark writes shape as the models
// names, arch files with the output tied as in the real model.
func requireBenchModels(t *testing.T, shape, arch string, names ...string) {
	t.Helper()
	ms, err := modelgen.BenchModels(shape)
	require.NoError(t, err)
	var got []string
	for _, m := range ms {
		got = append(got, m.Name)
		assert.Equal(t, arch, m.Spec.Arch)
		assert.False(t, m.Spec.SeparateOutput, "tied, as in the real model")
	}
	assert.Equal(t, names, got)
	assert.Equal(t, cmp.Or(arch, modelgen.DefaultArch), modelgen.ArchOf(shape))
}

// TestOutputStd: the output matrix is drawn with OutputStd, the layers'
// matrices with Std.
func TestOutputStd(t *testing.T) {
	sp := modelgen.Spec{Shape: modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 1, Heads: 4, KVHeads: 2, VocabSize: 2000, ContextLength: 32},
		Seed: 2, Std: 0.05, OutputStd: 0.5, SeparateOutput: true}
	f := parse(t, sp)
	for name, want := range map[string]float64{"output.weight": 0.5, "token_embd.weight": 0.05, "blk.0.ffn_up.weight": 0.05} {
		ti, ok := f.Tensor(name)
		require.True(t, ok, name)
		var sum float64
		vals := tensor.Float32s(ti.Data)
		for _, v := range vals {
			sum += float64(v) * float64(v)
		}
		assert.InDelta(t, want, math.Sqrt(sum/float64(len(vals))), want*0.05, name)
	}
}

// TestBigVocab: the grammar benchmark's shape is stories15M's body with
// Qwen's vocabulary, tied, in Q4_0.
func TestBigVocab(t *testing.T) {
	sh, err := modelgen.ShapeByName("bigvocab")
	require.NoError(t, err)
	want := modelgen.Stories15M()
	want.VocabSize = 151936
	assert.Equal(t, want, sh)
	assert.Equal(t, modelgen.DefaultArch, modelgen.ArchOf("bigvocab"))
	requireBenchModels(t, "bigvocab", "", "bigvocab-Q4_0") // Spec.Arch "": the default, llama
}
