package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// ggufSpec describes a random-weight model for the GGUF writer.
type ggufSpec struct {
	arch        string      // "llama" or "qwen2"
	c           Config      // hyper-parameters (RopeStyle is implied by arch)
	weightType  tensor.Type // storage type of the matrices
	separateOut bool        // write output.weight (else tied to the embedding)
	ropeFactors []float32   // rope_freqs.weight, or nil
	ropeLinear  float32     // rope.scaling.factor with type linear, or 0
	seed        uint64
	std         float64 // weight standard deviation
}

// spmVocab writes a SentencePiece vocabulary of n tokens: <unk>, <s>, </s>,
// the 256 byte tokens, then "▁t<i>" pieces.
func spmVocab(b *gguf.Builder, n int) {
	tokens := make([]string, n)
	scores := make([]float32, n)
	types := make([]int32, n)
	for i := range n {
		switch {
		case i == 0:
			tokens[i], types[i] = "<unk>", 2
		case i <= 2:
			tokens[i], types[i] = []string{"", "<s>", "</s>"}[i], 3
		case i < 259:
			tokens[i], types[i] = fmt.Sprintf("<0x%02X>", i-3), 6
		default:
			tokens[i], types[i] = fmt.Sprintf("▁t%d", i), 1
		}
		scores[i] = -float32(i)
	}
	b.Set("tokenizer.ggml.model", gguf.ValueOf("llama"))
	b.Set("tokenizer.ggml.tokens", gguf.ArrayOf(tokens))
	b.Set("tokenizer.ggml.scores", gguf.ArrayOf(scores))
	b.Set("tokenizer.ggml.token_type", gguf.ArrayOf(types))
	b.Set("tokenizer.ggml.bos_token_id", gguf.ValueOf(uint32(1)))
	b.Set("tokenizer.ggml.eos_token_id", gguf.ValueOf(uint32(2)))
}

// buildGGUF writes sp as a GGUF file. Norm weights are 1 + noise, biases noise.
func buildGGUF(t testing.TB, sp ggufSpec) []byte {
	t.Helper()
	c := sp.c
	rng := rand.New(rand.NewPCG(sp.seed, 1))
	b := gguf.NewBuilder()
	key := func(k string) string { return sp.arch + "." + k }
	b.Set("general.architecture", gguf.ValueOf(sp.arch))
	b.Set(key("context_length"), gguf.ValueOf(uint32(c.ContextLength)))
	b.Set(key("embedding_length"), gguf.ValueOf(uint32(c.Dim)))
	b.Set(key("feed_forward_length"), gguf.ValueOf(uint32(c.HiddenDim)))
	b.Set(key("block_count"), gguf.ValueOf(uint32(c.Layers)))
	b.Set(key("attention.head_count"), gguf.ValueOf(uint32(c.Heads)))
	b.Set(key("attention.head_count_kv"), gguf.ValueOf(uint32(c.KVHeads)))
	b.Set(key("rope.freq_base"), gguf.ValueOf(c.RopeTheta))
	b.Set(key("attention.layer_norm_rms_epsilon"), gguf.ValueOf(c.NormEps))
	if sp.ropeLinear > 0 {
		b.Set(key("rope.scaling.type"), gguf.ValueOf("linear"))
		b.Set(key("rope.scaling.factor"), gguf.ValueOf(sp.ropeLinear))
	}
	spmVocab(b, c.VocabSize)

	f32 := func(vals []float32) []byte {
		out := make([]byte, 0, 4*len(vals))
		for _, v := range vals {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
		return out
	}
	random := func(n int, mean float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(mean + rng.NormFloat64()*sp.std)
		}
		return v
	}
	matrix := func(name string, rows, cols int) {
		vals := random(rows*cols, 0)
		data := f32(vals)
		if sp.weightType != tensor.F32 {
			rb, err := tensor.RowBytes(sp.weightType, cols)
			require.NoError(t, err)
			data = make([]byte, rows*rb)
			require.NoError(t, tensor.Quantize(sp.weightType, data, vals))
		}
		b.AddTensor(name, sp.weightType, []uint64{uint64(cols), uint64(rows)}, data)
	}
	vector := func(name string, n int, mean float64) {
		b.AddTensor(name, tensor.F32, []uint64{uint64(n)}, f32(random(n, mean)))
	}
	kv := c.KVDim()
	matrix(nameTokenEmbd, c.VocabSize, c.Dim)
	for i := range c.Layers {
		vector(layerTensor(i, "attn_norm.weight"), c.Dim, 1)
		matrix(layerTensor(i, "attn_q.weight"), c.Dim, c.Dim)
		matrix(layerTensor(i, "attn_k.weight"), kv, c.Dim)
		matrix(layerTensor(i, "attn_v.weight"), kv, c.Dim)
		matrix(layerTensor(i, "attn_output.weight"), c.Dim, c.Dim)
		if sp.arch == "qwen2" {
			vector(layerTensor(i, "attn_q.bias"), c.Dim, 0)
			vector(layerTensor(i, "attn_k.bias"), kv, 0)
			vector(layerTensor(i, "attn_v.bias"), kv, 0)
		}
		vector(layerTensor(i, "ffn_norm.weight"), c.Dim, 1)
		matrix(layerTensor(i, "ffn_gate.weight"), c.HiddenDim, c.Dim)
		matrix(layerTensor(i, "ffn_down.weight"), c.Dim, c.HiddenDim)
		matrix(layerTensor(i, "ffn_up.weight"), c.HiddenDim, c.Dim)
	}
	vector(nameOutputNorm, c.Dim, 1)
	if sp.separateOut {
		matrix(nameOutput, c.VocabSize, c.Dim)
	}
	if sp.ropeFactors != nil {
		b.AddTensor(nameRopeFreqs, tensor.F32, []uint64{uint64(len(sp.ropeFactors))}, f32(sp.ropeFactors))
	}
	data, err := b.Bytes()
	require.NoError(t, err)
	return data
}
