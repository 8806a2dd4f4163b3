package modelgen_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// tiny is a small shape whose feed-forward rows (96 values) are not a
// multiple of 256 long while its other rows (256 values) are, so a K-quant
// spec exercises llama-quantize's fallback.
var tiny = modelgen.Shape{Dim: 256, HiddenDim: 96, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 32}

// wantType is the type llama-quantize stores a matrix of rows cols long in
// when asked for t: a K-quant falls back where cols is not a multiple of
// QK_K = 256 (llama.cpp's llama_tensor_get_type: Q4_K → Q5_0, Q5_K → Q5_1,
// Q6_K → Q8_0).
func wantType(t tensor.Type, cols uint64) tensor.Type {
	fallback, ok := map[tensor.Type]tensor.Type{tensor.Q4_K: tensor.Q5_0, tensor.Q5_K: tensor.Q5_1, tensor.Q6_K: tensor.Q8_0}[t]
	if !ok || cols%256 == 0 {
		return t
	}
	return fallback
}

// TestBuildLoads: a built model of every benchmark type and of each
// architecture loads in the engine with the spec's hyper-parameters, its
// matrices in the spec's type (with the K-quant fallback), and the
// synthetic vocabulary's special tokens.
func TestBuildLoads(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		for _, typ := range []tensor.Type{tensor.F32, tensor.F16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
			t.Run(arch+"/"+typ.String(), func(t *testing.T) {
				sp := modelgen.Spec{Name: "tiny", Arch: arch, Shape: tiny, Type: typ, Seed: 3, SeparateOutput: arch == "qwen2"}
				data, err := modelgen.Build(sp)
				require.NoError(t, err)
				m, err := engine.Load(data, engine.LoadOptions{})
				require.NoError(t, err)
				c := m.Config()
				assert.Equal(t, arch, m.Architecture())
				assert.Equal(t, []int{tiny.Dim, tiny.HiddenDim, tiny.Layers, tiny.Heads, tiny.KVHeads, tiny.VocabSize, tiny.ContextLength},
					[]int{c.Dim, c.HiddenDim, c.Layers, c.Heads, c.KVHeads, c.VocabSize, c.ContextLength})
				assert.Equal(t, float32(modelgen.DefaultRopeTheta), c.RopeTheta)
				assert.Equal(t, float32(modelgen.DefaultNormEps), c.NormEps)
				assert.Equal(t, sp.SeparateOutput, !m.Info().SharedOutput)
				sp2 := m.Tokenizer().Special()
				assert.Equal(t, []int{1, 2}, []int{sp2.BOS, sp2.EOS})

				f, err := gguf.Parse(data)
				require.NoError(t, err)
				name, err := f.String("general.name")
				require.NoError(t, err)
				assert.Equal(t, "tiny", name)
				version, err := f.Uint32("wasmlm.modelgen.version")
				require.NoError(t, err)
				assert.EqualValues(t, modelgen.Version, version)
				matrices := 0
				for _, ti := range f.Tensors() {
					if len(ti.Dims) == 1 {
						assert.Equal(t, tensor.F32, ti.Type, ti.Name)
						continue
					}
					matrices++
					assert.Equal(t, wantType(typ, ti.Dims[0]), ti.Type, ti.Name)
				}
				want := 1 + 7*tiny.Layers // embedding, 7 per layer
				if sp.SeparateOutput {
					want++
				}
				assert.Equal(t, want, matrices)
			})
		}
	}
}

// TestBuildIsDeterministic: a spec gives the same bytes every time; another
// seed gives other weights.
func TestBuildIsDeterministic(t *testing.T) {
	sp := modelgen.Spec{Shape: tiny, Type: tensor.Q4_K, Seed: 11}
	a, err := modelgen.Build(sp)
	require.NoError(t, err)
	b, err := modelgen.Build(sp)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(a, b), "same spec, same bytes")
	sp.Seed = 12
	c, err := modelgen.Build(sp)
	require.NoError(t, err)
	assert.Equal(t, len(a), len(c))
	assert.False(t, bytes.Equal(a, c), "another seed, other weights")
}

// TestTypesShareWeights: the models of one seed hold the same weights, only
// stored differently: each quantized matrix is exactly what tensor.Quantize
// makes of the F32 model's matrix, so benchmark rows of one shape compare
// storage types, not weights.
func TestTypesShareWeights(t *testing.T) {
	sp := modelgen.Spec{Shape: tiny, Seed: 5}
	ref := parse(t, sp)
	for _, typ := range []tensor.Type{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.MXFP4} {
		sp.Type = typ
		f := parse(t, sp)
		for _, ti := range f.Tensors() {
			r, ok := ref.Tensor(ti.Name)
			require.True(t, ok, ti.Name)
			if len(ti.Dims) == 1 {
				assert.Equal(t, r.Data, ti.Data, ti.Name)
				continue
			}
			if typ == tensor.MXFP4 { // blocks of 32: no fallback
				assert.Equal(t, typ, ti.Type, ti.Name)
			}
			want := make([]byte, len(ti.Data))
			require.NoError(t, tensor.Quantize(ti.Type, want, tensor.Float32s(r.Data)))
			assert.True(t, bytes.Equal(want, ti.Data), "%v %s", typ, ti.Name)
		}
	}
}

func parse(t *testing.T, sp modelgen.Spec) *gguf.File {
	t.Helper()
	data, err := modelgen.Build(sp)
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	return f
}

// TestWeightStatistics: weights are N(0, Std²) and norm weights 1 + noise,
// as the spec says (the sample mean and standard deviation of ~80k values
// are within a few standard errors of the parameters).
func TestWeightStatistics(t *testing.T) {
	f := parse(t, modelgen.Spec{Shape: tiny, Seed: 9, Std: 0.1})
	stats := func(name string) (mean, std float64) {
		ti, ok := f.Tensor(name)
		require.True(t, ok)
		v := tensor.Float32s(ti.Data)
		for _, x := range v {
			mean += float64(x)
		}
		mean /= float64(len(v))
		for _, x := range v {
			std += (float64(x) - mean) * (float64(x) - mean)
		}
		return mean, math.Sqrt(std / float64(len(v)))
	}
	mean, std := stats("token_embd.weight") // 76800 values: standard error of the mean 3.6e-4
	assert.InDelta(t, 0, mean, 2e-3)
	assert.InDelta(t, 0.1, std, 2e-3)
	mean, _ = stats("blk.0.attn_norm.weight") // 256 values: standard error 6e-3
	assert.InDelta(t, 1, mean, 0.03)
}

// TestMuteSpecial: with MuteSpecial the output rows of BOS and EOS are zero
// (so their logits are 0 and a random model's largest logit is above them),
// and greedy decoding generates exactly the tokens asked for.
func TestMuteSpecial(t *testing.T) {
	for _, separate := range []bool{false, true} {
		sp := modelgen.Spec{Shape: tiny, Type: tensor.Q4_K, Seed: 2, MuteSpecial: true, SeparateOutput: separate}
		data, err := modelgen.Build(sp)
		require.NoError(t, err)
		m, err := engine.Load(data, engine.LoadOptions{})
		require.NoError(t, err)
		f, err := gguf.Parse(data)
		require.NoError(t, err)
		name := "token_embd.weight" // tied
		if separate {
			name = "output.weight"
		}
		ti, ok := f.Tensor(name)
		require.True(t, ok)
		output, err := tensor.NewMatrix(ti.Type, int(ti.Dims[1]), int(ti.Dims[0]), ti.Data)
		require.NoError(t, err)
		row := make([]float32, tiny.Dim)
		for id := range 4 {
			output.Row(row, id)
			zero := true
			for _, v := range row {
				zero = zero && v == 0
			}
			assert.Equal(t, id == 1 || id == 2, zero, "output row %d (separate output: %v)", id, separate)
		}
		s, err := m.NewSession(engine.SessionOptions{})
		require.NoError(t, err)
		res, err := s.GenerateTokens(t.Context(), []int{1, 100, 200}, engine.GenerateOptions{MaxTokens: 20}, nil)
		require.NoError(t, err)
		assert.Equal(t, engine.FinishLength, res.FinishReason)
		assert.Len(t, res.Tokens, 20)
	}
}

// TestSyntheticVocabulary: with no pieces to merge into, a text tokenizes
// as SentencePiece escapes it (a space prefix, spaces as U+2581 "▁") and
// then falls back to bytes: BOS, then one byte token (ids 3..258) per UTF-8
// byte of the escaped text.
func TestSyntheticVocabulary(t *testing.T) {
	data, err := modelgen.Build(modelgen.Spec{Shape: tiny, Seed: 1})
	require.NoError(t, err)
	m, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	for _, text := range []string{"Once upon a time", "é ☃ t300", ""} {
		ids, err := m.Tokenizer().Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
		require.NoError(t, err)
		escaped := ""
		if text != "" {
			escaped = strings.ReplaceAll(" "+text, " ", "\u2581")
		}
		want := []int{1}
		for _, b := range []byte(escaped) {
			want = append(want, 3+int(b))
		}
		assert.Equal(t, want, ids, "%q", text)
		back, err := tokenizer.Decode(m.Tokenizer(), ids[1:])
		require.NoError(t, err)
		assert.Equal(t, escaped, back, "byte tokens decode to their bytes")
	}
}

// TestBuildErrors: a spec Build cannot write is an ErrSpec naming why.
func TestBuildErrors(t *testing.T) {
	with := func(edit func(*modelgen.Spec)) modelgen.Spec {
		sp := modelgen.Spec{Shape: tiny, Seed: 1}
		edit(&sp)
		return sp
	}
	tests := []struct {
		name string
		sp   modelgen.Spec
		want string
	}{
		{"unknown architecture", with(func(s *modelgen.Spec) { s.Arch = "mamba" }), `"mamba"`},
		{"zero layers", with(func(s *modelgen.Spec) { s.Layers = 0 }), "Layers is 0"},
		{"negative dim", with(func(s *modelgen.Spec) { s.Dim = -256 }), "Dim is -256"},
		{"heads do not divide dim", with(func(s *modelgen.Spec) { s.Heads = 3 }), "Heads 3"},
		{"odd head size", with(func(s *modelgen.Spec) { s.Heads, s.KVHeads = 256, 256 }), "head size 1 is odd"},
		{"kv heads do not divide heads", with(func(s *modelgen.Spec) { s.KVHeads = 3 }), "KVHeads 3"},
		{"vocabulary without byte tokens", with(func(s *modelgen.Spec) { s.VocabSize = 258 }), "VocabSize is 258"},
		{"row not a whole number of blocks", with(func(s *modelgen.Spec) { s.Type, s.HiddenDim = tensor.Q8_0, 100 }), "Q8_0 rows of 100 values"},
		{"K-quant without fallback", with(func(s *modelgen.Spec) { s.Type = tensor.Q2_K }), "IQ4_NL"},
		{"type without quantizer", with(func(s *modelgen.Spec) { s.Type = 16 }), "no quantizer for IQ2_XXS"},
		{"matrix too large", with(func(s *modelgen.Spec) { s.VocabSize = 1 << 30 }), "more than"},
		{"negative std", with(func(s *modelgen.Spec) { s.Std = -1 }), "Std"},
		{"NaN std", with(func(s *modelgen.Spec) { s.Std = math.NaN() }), "Std"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := modelgen.Build(tt.sp)
			require.ErrorIs(t, err, modelgen.ErrSpec)
			assert.Contains(t, err.Error(), tt.want)
			assert.Nil(t, data)
		})
	}
}

// TestBenchModels: the benchmark's shapes are llama2.c's stories15M and
// stories110M, each in F32, Q8_0, Q4_0 and Q4_K; stories15M's Q4_K falls
// back to Q5_0 for its 288-value rows.
func TestBenchModels(t *testing.T) {
	ms, err := modelgen.BenchModels(modelgen.ShapeNames()...)
	require.NoError(t, err)
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
		assert.True(t, m.Spec.MuteSpecial, m.Name)
		assert.False(t, m.Spec.SeparateOutput, m.Name)
	}
	assert.Equal(t, []string{
		"stories15M-F32", "stories15M-Q8_0", "stories15M-Q4_0", "stories15M-Q4_K",
		"stories110M-F32", "stories110M-Q8_0", "stories110M-Q4_0", "stories110M-Q4_K",
	}, names)
	assert.Equal(t, modelgen.Shape{Dim: 288, HiddenDim: 768, Layers: 6, Heads: 6, KVHeads: 6, VocabSize: 32000, ContextLength: 256}, ms[0].Spec.Shape)
	assert.Equal(t, modelgen.Shape{Dim: 768, HiddenDim: 2048, Layers: 12, Heads: 12, KVHeads: 12, VocabSize: 32000, ContextLength: 1024}, ms[4].Spec.Shape)
	for cols, want := range map[int]tensor.Type{288: tensor.Q5_0, 768: tensor.Q4_K, 2048: tensor.Q4_K} {
		got, err := ms[3].Spec.MatrixType(cols)
		require.NoError(t, err)
		assert.Equal(t, want, got, "Q4_K rows of %d", cols)
	}
	_, err = modelgen.BenchModels("stories42M")
	require.ErrorIs(t, err, modelgen.ErrSpec)

	// TinyLlama's shape, not among ShapeNames: quantized only, its own output.
	ms, err = modelgen.BenchModels("tinyllama")
	require.NoError(t, err)
	names = nil
	for _, m := range ms {
		names = append(names, m.Name)
		assert.True(t, m.Spec.SeparateOutput, m.Name)
		assert.Equal(t, modelgen.TinyLlama(), m.Spec.Shape)
	}
	assert.Equal(t, []string{"tinyllama-Q8_0", "tinyllama-Q4_0", "tinyllama-Q4_K"}, names)
}

// Build a random llama model of stories15M's shape with 4-bit K-quant
// weights; its 288-value rows fall back to Q5_0 as llama-quantize's do.
func ExampleBuild() {
	data, err := modelgen.Build(modelgen.Spec{Shape: modelgen.Stories15M(), Type: tensor.Q4_K, Seed: 1})
	if err != nil {
		panic(err)
	}
	m, err := engine.Load(data, engine.LoadOptions{})
	if err != nil {
		panic(err)
	}
	info := m.Info()
	fmt.Println(info.Parameters, info.TensorTypes)
	// Output: 15191712 map[F32:13 Q4_K:6 Q5_0:37]
}

func TestWriteIsBuild(t *testing.T) {
	for name, sp := range map[string]modelgen.Spec{
		"F32":        {Shape: modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 32}, Seed: 1},
		"Q4_K split": {Shape: modelgen.Shape{Dim: 256, HiddenDim: 512, Layers: 1, Heads: 4, KVHeads: 4, VocabSize: 320, ContextLength: 32}, Seed: 2, Type: tensor.Q4_K, SeparateOutput: true, MuteSpecial: true},
		"qwen2 Q8_0": {Arch: "qwen2", Shape: modelgen.Shape{Dim: 64, HiddenDim: 64, Layers: 1, Heads: 2, KVHeads: 1, VocabSize: 300, ContextLength: 32}, Seed: 3, Type: tensor.Q8_0},
		"qwen3 Q8_0": {Arch: "qwen3", Shape: modelgen.Shape{Dim: 64, HiddenDim: 64, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 64, VocabSize: 300, ContextLength: 32}, Seed: 4, Type: tensor.Q8_0, OutputStd: 0.3},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := modelgen.Build(sp)
			require.NoError(t, err)
			var buf bytes.Buffer
			n, err := modelgen.Write(&buf, sp)
			require.NoError(t, err)
			assert.Equal(t, int64(len(want)), n)
			assert.Equal(t, want, buf.Bytes())
			l, err := modelgen.Header(sp)
			require.NoError(t, err)
			assert.Equal(t, len(want), l.Size)
			assert.Equal(t, want[:len(l.Header)], l.Header)
		})
	}
}

// TestFastModelsLoadAndRun: Spec.Fast's random quants load, run and stay
// finite, about as spread as asked, BOS and EOS muted.
func TestFastModelsLoadAndRun(t *testing.T) {
	for _, typ := range []tensor.Type{tensor.Q4_0, tensor.Q8_0} {
		t.Run(typ.String(), func(t *testing.T) {
			sp := modelgen.Spec{Shape: modelgen.Shape{Dim: 128, HiddenDim: 256, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 512, ContextLength: 64},
				Type: typ, Fast: true, Seed: 9, MuteSpecial: true, SeparateOutput: true}
			data, err := modelgen.Build(sp)
			require.NoError(t, err)
			var buf bytes.Buffer
			_, err = modelgen.Write(&buf, sp)
			require.NoError(t, err)
			assert.Equal(t, data, buf.Bytes(), "Write is Build")
			m, err := engine.LoadGGUF(data)
			require.NoError(t, err)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			ti, _ := f.Tensor("blk.0.ffn_up.weight")
			mat, err := tensor.NewMatrix(typ, 256, 128, ti.Data)
			require.NoError(t, err)
			row := make([]float32, 128)
			var sum float64
			for r := range 256 {
				mat.Row(row, r)
				for _, v := range row {
					sum += float64(v) * float64(v)
				}
			}
			assert.InDelta(t, modelgen.DefaultStd, math.Sqrt(sum/(256*128)), modelgen.DefaultStd*0.1)
			s, err := m.NewSession(engine.SessionOptions{})
			require.NoError(t, err)
			r, err := s.Generate(context.Background(), "Once", engine.GenerateOptions{MaxTokens: 8}, nil)
			require.NoError(t, err)
			assert.Len(t, r.Tokens, 8, "BOS and EOS are muted: greedy never stops early")
		})
	}
}
