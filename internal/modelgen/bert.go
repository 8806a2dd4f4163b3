package modelgen

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// The BERT family of embedding models, written as llama.cpp's converter
// (convert_hf_to_gguf.py: BertModel, NomicBertModel) and llama-quantize
// write them:
//
//   - bert (all-MiniLM-L6-v2, bge-*): learned position embeddings
//     (position_embd, ContextLength rows), token_types (2 rows: BERT's
//     type_vocab_size), token_embd_norm; per layer attn_q, attn_k, attn_v
//     and attn_output, each with its bias, attn_output_norm, ffn_up and
//     ffn_down with biases (GELU), layer_output_norm; every norm a
//     LayerNorm with a weight and a bias. A reranker (Pooling "rank", as
//     bge-reranker files) adds the classifier head: cls.weight (Dim×Dim)
//     and cls.bias, cls.output.weight (one row) and cls.output.bias, and
//     the key classifier.output_labels (one label, so llama.cpp's
//     n_cls_out is 1).
//   - nomic-bert (nomic-embed-text-v1.5): no position embeddings but
//     rotary ones (NeoX, base rope.freq_base, 1000 by default as the real
//     model's rotary_emb_base), q, k and v fused in attn_qkv (rows: q, k,
//     v), SwiGLU with ffn_up, ffn_gate and ffn_down, and no bias but the
//     LayerNorms'.
//
// Both write attention.layer_norm_epsilon (1e-12 by default, BERT's),
// attention.causal false and pooling_type, no head_count_kv (BERT has
// none). position_embd and token_types stay F32 whatever the type, as
// the converter and llama-quantize keep them; so does every vector; a
// one-row matrix (cls.output.weight) is F16 unless the type is F32, as
// llama-quantize leaves a converted F16 file's (it quantizes only 2-D
// tensors, and ggml counts a 1×Dim tensor as 1-D).
//
// The vocabulary is BERT's WordPiece one (bert-base-uncased, 30522
// tokens: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103), the
// tokenizer.* keys of llama.cpp's models/ggml-vocab-bert-bge.gguf,
// embedded gzipped; a VocabSize above 30522 appends "[PAD<i>]" tokens of
// type unused, as the converter pads a vocabulary to config.json's
// vocab_size (nomic-embed-text's embedding has 30528 rows).

// bertVocabGz is llama.cpp's models/ggml-vocab-bert-bge.gguf, gzipped: a
// vocabulary-only GGUF file whose tokenizer.* keys Build copies.
//
//go:embed ggml-vocab-bert-bge.gguf.gz
var bertVocabGz []byte

// BertVocabSize is the number of tokens of BERT's WordPiece vocabulary, the
// smallest VocabSize of a bert or nomic-bert Spec.
const BertVocabSize = 30522

// Defaults of the BERT family.
const (
	// DefaultBertNormEps is BERT's LayerNorm epsilon (layer_norm_eps in
	// the models' config.json).
	DefaultBertNormEps = 1e-12
	// DefaultNomicRopeTheta is nomic-embed-text's rotary_emb_base.
	DefaultNomicRopeTheta = 1000
)

// The pooling types of llama.cpp's LLAMA_POOLING_TYPE, as pooling_type
// stores them.
var poolingTypes = map[string]uint32{"none": 0, "mean": 1, "cls": 2, "last": 3, "rank": 4}

// tokenTypeCount is BERT's type_vocab_size: the rows of token_types.
const tokenTypeCount = 2

// rankLabels are a reranker's classifier.output_labels: bge-reranker's one
// label, so n_cls_out is 1.
var rankLabels = []string{"LABEL_0"}

// typeUnused is the token type of the converter's "[PAD<i>]" tokens.
const typeUnused = 5

// BertStd is the weights' standard deviation of a BERT-family model of
// shape sh when its Spec says none: √(6/(Dim·Layers)), 0.051 (1/√384) for
// MiniLM-L6, 0.025 for BGE-base and nomic-embed-text. Each layer adds
// about Std²·Dim of its input's variance to the residual stream, so the
// sum over the layers is what is held constant. Smaller, as the decoders'
// 0.02, the layers add little to the LayerNorm'd embeddings and attention
// barely mixes positions: every text's [CLS] state is nearly the same
// (llama.cpp's cls-pooled cosines of unrelated sentences 0.99–1.0 for a
// MiniLM-L6 shape); at √(2/(Dim·Layers)) they are still 0.89–0.98. With it,
// llama.cpp's cosines of unrelated sentences are 0.62–0.88 for bert (its
// GELU's mean is a vector every position shares), 0.2–0.52 for a
// nomic-bert of nomic-embed-text's shape, and of sentences one word apart
// 0.9–0.98. Larger, the nomic layers turn chaotic (one changed word, an
// unrelated vector); at MiniLM-L6's size they are near it already (0.76).
func BertStd(sh Shape) float64 { return math.Sqrt(6 / float64(sh.Dim*sh.Layers)) }

// isBert says whether arch is one of the BERT family.
func isBert(arch string) bool { return arch == "bert" || arch == "nomic-bert" }

// bertDefaults fills in a BERT-family spec's zero fields: mean pooling,
// BERT's LayerNorm epsilon, nomic's rope base, key/value heads = heads,
// BERT's vocabulary, and BertStd.
func (s Spec) bertDefaults() Spec {
	if !isBert(s.Arch) {
		return s
	}
	if s.Pooling == "" {
		s.Pooling = "mean"
	}
	if s.NormEps == 0 {
		s.NormEps = DefaultBertNormEps
	}
	if s.RopeTheta == 0 && s.Arch == "nomic-bert" {
		s.RopeTheta = DefaultNomicRopeTheta
	}
	if s.KVHeads == 0 {
		s.KVHeads = s.Heads
	}
	if s.VocabSize == 0 {
		s.VocabSize = BertVocabSize
	}
	if s.Std == 0 && s.Dim > 0 && s.Layers > 0 {
		s.Std = BertStd(s.Shape)
	}
	return s
}

// validateBert checks what only the BERT family has, and that a BERT-family
// spec asks for nothing of the decoders'.
func (s Spec) validateBert() error {
	if !isBert(s.Arch) {
		if s.Pooling != "" {
			return fmt.Errorf("%w: Pooling is the bert and nomic-bert families' (an embedding model's)", ErrSpec)
		}
		return nil
	}
	if _, ok := poolingTypes[s.Pooling]; !ok || s.Pooling == "none" {
		return fmt.Errorf("%w: Pooling %q is not mean, cls, last or rank", ErrSpec, s.Pooling)
	}
	switch {
	case s.Pooling == "rank" && s.Arch != "bert":
		return fmt.Errorf("%w: a reranker (Pooling rank) is bert: llama.cpp reads no classifier head for %s", ErrSpec, s.Arch)
	case s.KVHeads != s.Heads || s.HeadDim != 0:
		return fmt.Errorf("%w: %s attends with Dim/Heads-wide heads, one key/value head per head (KVHeads %d, Heads %d, HeadDim %d)",
			ErrSpec, s.Arch, s.KVHeads, s.Heads, s.HeadDim)
	case s.VocabSize < BertVocabSize:
		return fmt.Errorf("%w: VocabSize is %d, below BERT's vocabulary (%d tokens)", ErrSpec, s.VocabSize, BertVocabSize)
	case s.SeparateOutput || s.MuteSpecial || s.RopeFreqFactors != nil || s.RopeLinearScale != 0 || s.Fast:
		return fmt.Errorf("%w: %s has no output matrix, special rows to mute, rope factors or scaling, or fast quants", ErrSpec, s.Arch)
	case s.Arch == "bert" && s.RopeTheta != 0 && s.RopeTheta != DefaultRopeTheta:
		return fmt.Errorf("%w: bert's positions are learned: it has no rope base", ErrSpec)
	}
	for _, m := range [][2]int{{s.ContextLength, s.Dim}, {3 * s.Dim, s.Dim}} {
		if m[0] > maxElements/m[1] {
			return fmt.Errorf("%w: a %d×%d matrix has more than %d values", ErrSpec, m[0], m[1], maxElements)
		}
	}
	return nil
}

// bertMetadata writes a BERT-family file's keys past those every family
// has (metadata wrote them), and its vocabulary.
func (g *generator) bertMetadata() {
	sp, b := g.sp, g.b
	key := func(k string) string { return sp.Arch + "." + k }
	if sp.Arch == "nomic-bert" {
		b.Set(key("rope.freq_base"), gguf.ValueOf(sp.RopeTheta))
	}
	b.Set(key("attention.layer_norm_epsilon"), gguf.ValueOf(sp.NormEps))
	b.Set(key("attention.causal"), gguf.ValueOf(false))
	b.Set(key("pooling_type"), gguf.ValueOf(poolingTypes[sp.Pooling]))
	if sp.Pooling == "rank" {
		b.Set(key("classifier.output_labels"), gguf.ArrayOf(rankLabels))
	}
	if err := bertVocab(b, sp.VocabSize); err != nil {
		g.err = err
	}
	b.Set("wasmlm.modelgen.version", gguf.ValueOf(uint32(Version)))
}

// bertVocabFile is the embedded BERT vocabulary's GGUF file.
func bertVocabFile() (*gguf.File, error) {
	zr, err := gzip.NewReader(bytes.NewReader(bertVocabGz))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	return gguf.Parse(data)
}

// bertVocab writes the tokenizer.* keys of the embedded BERT vocabulary,
// padded to n tokens.
func bertVocab(b *gguf.Builder, n int) error {
	f, err := bertVocabFile()
	if err != nil {
		return err
	}
	for _, kv := range f.KVs() {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		v := kv.Value
		switch kv.Key {
		case "tokenizer.ggml.tokens":
			tokens, _ := v.Any().([]string)
			if len(tokens) != BertVocabSize {
				return fmt.Errorf("%w: the embedded BERT vocabulary has %d tokens, not %d", ErrSpec, len(tokens), BertVocabSize)
			}
			padded := append([]string(nil), tokens...)
			for i := len(tokens); i < n; i++ {
				padded = append(padded, fmt.Sprintf("[PAD%d]", i))
			}
			v = gguf.ArrayOf(padded)
		case "tokenizer.ggml.token_type":
			types, _ := v.Any().([]int32)
			padded := append([]int32(nil), types...)
			for len(padded) < n {
				padded = append(padded, typeUnused)
			}
			v = gguf.ArrayOf(padded)
		}
		b.Set(kv.Key, v)
	}
	return nil
}

// bertTensors draws and adds a BERT-family model's tensors, in the
// converter's order.
func (g *generator) bertTensors() {
	sp := g.sp
	d := sp.Dim
	layer := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	nomic := sp.Arch == "nomic-bert"
	g.matrix("token_embd.weight", sp.VocabSize, d, false)
	if !nomic {
		g.f32Matrix("position_embd.weight", sp.ContextLength, d)
	}
	g.f32Matrix("token_types.weight", tokenTypeCount, d)
	g.layerNorm("token_embd_norm", d)
	for i := range sp.Layers {
		if nomic {
			g.matrix(layer(i, "attn_qkv.weight"), 3*d, d, false)
			g.matrix(layer(i, "attn_output.weight"), d, d, false)
		} else {
			for _, name := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
				g.matrix(layer(i, name+".weight"), d, d, false)
				g.vector(layer(i, name+".bias"), d, 0)
			}
		}
		g.layerNorm(layer(i, "attn_output_norm"), d)
		g.matrix(layer(i, "ffn_up.weight"), sp.HiddenDim, d, false)
		if nomic {
			g.matrix(layer(i, "ffn_gate.weight"), sp.HiddenDim, d, false)
		} else {
			g.vector(layer(i, "ffn_up.bias"), sp.HiddenDim, 0)
		}
		g.matrix(layer(i, "ffn_down.weight"), d, sp.HiddenDim, false)
		if !nomic {
			g.vector(layer(i, "ffn_down.bias"), d, 0)
		}
		g.layerNorm(layer(i, "layer_output_norm"), d)
	}
	if sp.Pooling == "rank" {
		g.matrix("cls.weight", d, d, false)
		g.vector("cls.bias", d, 0)
		g.rowMatrix("cls.output.weight", len(rankLabels), d)
		g.vector("cls.output.bias", len(rankLabels), 0)
	}
}

// layerNorm adds a LayerNorm's weight (around 1) and bias (around 0).
func (g *generator) layerNorm(name string, n int) {
	g.vector(name+".weight", n, 1)
	g.vector(name+".bias", n, 0)
}

// sharedEmbeddingScale scales Std for the position and token-type
// embeddings. Every text has the same ones (token_types' row 0 is added at
// every position): at the full Std they are as large as the word
// embeddings, and a mean-pooled vector is mostly theirs, so all texts
// embed alike.
const sharedEmbeddingScale = 0.25

// f32Matrix adds a rows×cols matrix stored as F32 whatever the Spec's type
// (position embeddings and token types, which llama-quantize keeps), drawn
// with Std·sharedEmbeddingScale.
func (g *generator) f32Matrix(name string, rows, cols int) {
	g.storedMatrix(name, rows, cols, tensor.F32, g.sp.Std*sharedEmbeddingScale)
}

// rowMatrix adds a matrix of so few rows that ggml counts it as 1-D when
// it has one (the classifier's output), which llama-quantize leaves as the
// converter wrote it: F32 in an F32 model, F16 otherwise.
func (g *generator) rowMatrix(name string, rows, cols int) {
	t := tensor.F16
	if g.sp.Type == tensor.F32 {
		t = tensor.F32
	}
	g.storedMatrix(name, rows, cols, t, g.sp.Std)
}

// storedMatrix adds a rows×cols matrix of N(0, std²) values stored as t.
func (g *generator) storedMatrix(name string, rows, cols int, t tensor.Type, std float64) {
	dims := []uint64{uint64(cols), uint64(rows)}
	if g.headerOnly {
		g.emit(name, t, dims, nil)
		return
	}
	data, err := encode(t, rows, cols, g.random(rows*cols, 0, std))
	if err != nil {
		g.err = fmt.Errorf("%s: %w", name, err)
		return
	}
	g.emit(name, t, dims, data)
}
