package modelgen_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// tinyBert is a small BERT-family shape (the vocabulary is BERT's).
var tinyBert = modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, ContextLength: 64}

// bertTensors is every tensor of a bert (or nomic-bert) file of shape sh,
// with its ggml dims, as llama.cpp's llama_model_bert::load_arch_tensors
// creates them; rank adds the classifier head.
func bertTensors(arch string, sh modelgen.Shape, vocab int, rank bool) map[string][]uint64 {
	d, ff := uint64(sh.Dim), uint64(sh.HiddenDim)
	want := map[string][]uint64{
		"token_embd.weight":      {d, uint64(vocab)},
		"token_types.weight":     {d, 2},
		"token_embd_norm.weight": {d},
		"token_embd_norm.bias":   {d},
	}
	if arch == "bert" {
		want["position_embd.weight"] = []uint64{d, uint64(sh.ContextLength)}
	}
	for i := range sh.Layers {
		add := func(name string, dims ...uint64) { want[fmt.Sprintf("blk.%d.%s", i, name)] = dims }
		if arch == "bert" {
			for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
				add(n+".weight", d, d)
				add(n+".bias", d)
			}
			add("ffn_up.bias", ff)
			add("ffn_down.bias", d)
		} else {
			add("attn_qkv.weight", d, 3*d)
			add("attn_output.weight", d, d)
			add("ffn_gate.weight", d, ff)
		}
		add("ffn_up.weight", d, ff)
		add("ffn_down.weight", ff, d)
		for _, n := range []string{"attn_output_norm", "layer_output_norm"} {
			add(n+".weight", d)
			add(n+".bias", d)
		}
	}
	if rank {
		want["cls.weight"] = []uint64{d, d}
		want["cls.bias"] = []uint64{d}
		want["cls.output.weight"] = []uint64{d, 1}
		want["cls.output.bias"] = []uint64{1}
	}
	return want
}

// TestBertFiles: bert and nomic-bert files hold llama.cpp's tensors of
// their shapes, in the types the converter and llama-quantize give them,
// and the keys real converted files carry; BERT's vocabulary, padded past
// its 30522 tokens as the converter pads it.
func TestBertFiles(t *testing.T) {
	for _, c := range []struct {
		arch, pooling string
		typ           tensor.Type
		vocab         int
	}{
		{"bert", "", tensor.F32, 0}, {"bert", "cls", tensor.F16, 0}, {"bert", "last", tensor.Q8_0, 0},
		{"bert", "rank", tensor.Q8_0, 0}, {"bert", "rank", tensor.F32, 0},
		{"nomic-bert", "", tensor.Q8_0, 30528}, {"nomic-bert", "cls", tensor.F16, 0},
	} {
		t.Run(fmt.Sprintf("%s/%s/%v", c.arch, c.pooling, c.typ), func(t *testing.T) {
			sh := tinyBert
			sh.VocabSize = c.vocab
			f := parse(t, modelgen.Spec{Arch: c.arch, Shape: sh, Pooling: c.pooling, Type: c.typ, Seed: 5})
			vocab := max(c.vocab, modelgen.BertVocabSize)
			rank := c.pooling == "rank"
			want := bertTensors(c.arch, sh, vocab, rank)
			got := map[string][]uint64{}
			for _, ti := range f.Tensors() {
				got[ti.Name] = ti.Dims
				switch {
				case ti.Name == "position_embd.weight" || ti.Name == "token_types.weight" || len(ti.Dims) == 1:
					assert.Equal(t, tensor.F32, ti.Type, ti.Name)
				case ti.Name == "cls.output.weight" && c.typ != tensor.F32:
					assert.Equal(t, tensor.F16, ti.Type, ti.Name)
				default:
					assert.Equal(t, c.typ, ti.Type, ti.Name)
				}
			}
			assert.Equal(t, want, got)

			k := func(key string) string { return c.arch + "." + key }
			for key, v := range map[string]uint32{k("block_count"): 2, k("context_length"): 64, k("embedding_length"): 64,
				k("feed_forward_length"): 128, k("attention.head_count"): 4, "tokenizer.ggml.token_type_count": 2,
				k("pooling_type"):             map[string]uint32{"": 1, "cls": 2, "last": 3, "rank": 4}[c.pooling],
				"tokenizer.ggml.cls_token_id": 101, "tokenizer.ggml.seperator_token_id": 102, "tokenizer.ggml.unknown_token_id": 100} {
				got, err := f.Uint32(key)
				require.NoError(t, err, key)
				assert.Equal(t, v, got, key)
			}
			_, ok := f.Lookup(k("attention.head_count_kv"))
			assert.False(t, ok, "BERT's config has no key/value head count")
			eps, err := f.Float32(k("attention.layer_norm_epsilon"))
			require.NoError(t, err)
			assert.Equal(t, float32(1e-12), eps)
			causal, err := f.Bool(k("attention.causal"))
			require.NoError(t, err)
			assert.False(t, causal)
			base, err := f.Float32(k("rope.freq_base"))
			if c.arch == "nomic-bert" {
				require.NoError(t, err)
				assert.Equal(t, float32(1000), base)
			} else {
				assert.Error(t, err, "bert's positions are learned")
			}
			labels, err := f.Strings(k("classifier.output_labels"))
			assert.Equal(t, rank, err == nil)
			if rank {
				assert.Equal(t, []string{"LABEL_0"}, labels)
			}
			model, err := f.String("tokenizer.ggml.model")
			require.NoError(t, err)
			assert.Equal(t, "bert", model)
			words, err := f.Strings("tokenizer.ggml.tokens")
			require.NoError(t, err)
			types, err := f.Int32s("tokenizer.ggml.token_type")
			require.NoError(t, err)
			require.Len(t, words, vocab)
			require.Len(t, types, vocab)
			assert.Equal(t, []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}, []string{words[0], words[100], words[101], words[102], words[103]})
			if vocab > modelgen.BertVocabSize {
				assert.Equal(t, "[PAD30527]", words[vocab-1])
				assert.Equal(t, int32(5), types[vocab-1], "unused")
			}
		})
	}
}

// TestBertStd: a BERT-family spec's weights are drawn with BertStd by
// default, but the position and token-type embeddings (shared by every
// text) with a quarter of it; norm weights around 1.
func TestBertStd(t *testing.T) {
	sh := modelgen.MiniLML6()
	sh.Layers = 1
	std := modelgen.BertStd(modelgen.MiniLML6())
	assert.InDelta(t, 1/math.Sqrt(384), std, 1e-12)
	assert.InDelta(t, 0.025, modelgen.BertStd(modelgen.BGEBase()), 0.001)
	f := parse(t, modelgen.Spec{Arch: "bert", Shape: sh, Seed: 1, Std: std})
	for name, want := range map[string][2]float64{"blk.0.ffn_up.weight": {0, std}, "token_embd.weight": {0, std},
		"position_embd.weight": {0, std / 4}, "token_types.weight": {0, std / 4}, "blk.0.layer_output_norm.weight": {1, std}} {
		ti, ok := f.Tensor(name)
		require.True(t, ok, name)
		var sum, sq float64
		vals := tensor.Float32s(ti.Data)
		for _, v := range vals {
			sum += float64(v)
		}
		mean := sum / float64(len(vals))
		for _, v := range vals {
			sq += (float64(v) - mean) * (float64(v) - mean)
		}
		assert.InDelta(t, want[0], mean, want[1]/4, name)
		assert.InDelta(t, want[1], math.Sqrt(sq/float64(len(vals))), want[1]*0.2, name)
	}
}

// TestBertDeterministic: a BERT-family spec gives the same bytes every
// time, and Write and Header the ones Build gives.
func TestBertDeterministic(t *testing.T) {
	for _, sp := range []modelgen.Spec{
		{Arch: "bert", Shape: tinyBert, Type: tensor.Q8_0, Pooling: "rank", Seed: 7},
		{Arch: "nomic-bert", Shape: tinyBert, Type: tensor.F16, Seed: 7},
	} {
		a, err := modelgen.Build(sp)
		require.NoError(t, err)
		b, err := modelgen.Build(sp)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, b), "%s: same spec, same bytes", sp.Arch)
		var buf bytes.Buffer
		_, err = modelgen.Write(&buf, sp)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, buf.Bytes()), "%s: Write is Build", sp.Arch)
	}
}

// TestBertSpecErrors: what a BERT-family file cannot hold, and pooling
// asked of a decoder, are ErrSpec errors.
func TestBertSpecErrors(t *testing.T) {
	small := tinyBert
	small.VocabSize = 1000
	gqa := tinyBert
	gqa.KVHeads = 2
	for name, sp := range map[string]modelgen.Spec{
		"decoder pooling": {Shape: tiny, Pooling: "mean"},
		"unknown pooling": {Arch: "bert", Shape: tinyBert, Pooling: "max"},
		"none pooling":    {Arch: "bert", Shape: tinyBert, Pooling: "none"},
		"nomic reranker":  {Arch: "nomic-bert", Shape: tinyBert, Pooling: "rank"},
		"small vocab":     {Arch: "bert", Shape: small},
		"gqa":             {Arch: "bert", Shape: gqa},
		"output":          {Arch: "bert", Shape: tinyBert, SeparateOutput: true},
		"mute":            {Arch: "nomic-bert", Shape: tinyBert, MuteSpecial: true},
		"rope base":       {Arch: "bert", Shape: tinyBert, RopeTheta: 1000},
	} {
		_, err := modelgen.Build(sp)
		assert.ErrorIs(t, err, modelgen.ErrSpec, name)
	}
}

// TestEmbeddingShapes: the benchmark's embedding shapes are those of
// all-MiniLM-L6-v2, bge-base-en-v1.5 and nomic-embed-text-v1.5, their
// parameters those of the real GGUF files (the Hugging Face checkpoints'
// less the pooler, plus nomic's six padding rows), written in F32, F16
// and Q8_0.
func TestEmbeddingShapes(t *testing.T) {
	for _, c := range []struct {
		name, arch string
		shape      modelgen.Shape
		params     int64
	}{
		{"minilm-l6", "bert", modelgen.MiniLML6(), 22_565_376},
		{"bge-base", "bert", modelgen.BGEBase(), 108_891_648},
		{"nomic-embed-v1.5", "nomic-bert", modelgen.NomicEmbedV15(), 136_731_648},
	} {
		sh, err := modelgen.ShapeByName(c.name)
		require.NoError(t, err)
		assert.Equal(t, c.shape, sh)
		assert.Equal(t, c.params, parameters(t, modelgen.Spec{Arch: c.arch, Shape: sh, Type: tensor.F16}), c.name)
		requireBenchModels(t, c.name, c.arch, c.name+"-F32", c.name+"-F16", c.name+"-Q8_0")
	}
}

// parameters counts the elements of the tensors spec's file holds.
func parameters(t *testing.T, spec modelgen.Spec) int64 {
	t.Helper()
	l, err := modelgen.Header(spec)
	require.NoError(t, err)
	f, err := gguf.ParseHeader(l.Header, int64(l.Size))
	require.NoError(t, err)
	var n int64
	for _, ti := range f.Tensors() {
		n += ti.Elements()
	}
	return n
}

// TestRerankerShape: the benchmark's reranker is ms-marco-MiniLM-L-6-v2's
// shape, its parameters those of its GGUF file (MiniLM-L6's, plus the
// pooler's dense layer and the one-label classifier, 148,225 more), a bert
// that ranks, in F32, F16 and Q8_0.
func TestRerankerShape(t *testing.T) {
	const name = "minilm-l6-rerank"
	sh, err := modelgen.ShapeByName(name)
	require.NoError(t, err)
	assert.Equal(t, modelgen.MiniLML6(), sh)
	assert.Equal(t, int64(22_565_376+384*384+384+384+1), parameters(t, modelgen.Spec{Arch: "bert", Shape: sh, Type: tensor.F16, Pooling: "rank"}))
	requireBenchModels(t, name, "bert", name+"-F32", name+"-F16", name+"-Q8_0")
	ms, err := modelgen.BenchModels(name)
	require.NoError(t, err)
	for _, m := range ms {
		assert.Equal(t, "rank", m.Spec.Pooling, m.Name)
	}
}
