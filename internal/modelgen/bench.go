package modelgen

import (
	"flag"
	"fmt"
	"strings"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Stories15M is the shape of llama2.c's stories15M.
func Stories15M() Shape {
	return Shape{Dim: 288, HiddenDim: 768, Layers: 6, Heads: 6, KVHeads: 6, VocabSize: 32000, ContextLength: 256}
}

// Stories110M is the shape of llama2.c's stories110M.
func Stories110M() Shape {
	return Shape{Dim: 768, HiddenDim: 2048, Layers: 12, Heads: 12, KVHeads: 12, VocabSize: 32000, ContextLength: 1024}
}

// TinyLlama is the shape of TinyLlama-1.1B: a real chat model's size, with
// grouped-query attention (4 key/value heads for 32) and a separate output.
func TinyLlama() Shape {
	return Shape{Dim: 2048, HiddenDim: 5632, Layers: 22, Heads: 32, KVHeads: 4, VocabSize: 32000, ContextLength: 2048}
}

// Llama3B is a 3B-parameter Llama shape (dim 3072, as Llama-3.2-3B, with a
// 32000-token vocabulary): 1.7 GB in Q4_0, for the memory benchmark.
func Llama3B() Shape {
	return Shape{Dim: 3072, HiddenDim: 8192, Layers: 28, Heads: 24, KVHeads: 8, VocabSize: 32000, ContextLength: 4096}
}

// Llama8B is Llama-3-8B's shape with a 32000-token vocabulary: 4.4 GB in
// Q4_0, more than one 32-bit WebAssembly memory holds, for the tests and
// benchmark of a model split across workers.
func Llama8B() Shape {
	return Shape{Dim: 4096, HiddenDim: 14336, Layers: 32, Heads: 32, KVHeads: 8, VocabSize: 32000, ContextLength: 8192}
}

// Qwen3_0_6B is the shape of Qwen3-0.6B (architecture qwen3): heads of
// 128 values, wider than dim/heads = 64, so the queries (2048) are twice
// as wide as the residual stream; a 151936-token vocabulary, the output
// tied to the embedding as in the real model.
func Qwen3_0_6B() Shape {
	return Shape{Dim: 1024, HiddenDim: 3072, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, VocabSize: 151936, ContextLength: 40960}
}

// Gemma3_1B is the shape of Gemma-3-1B (architecture gemma3): 4 heads of
// 256 values over a 1152-wide stream (narrower than dim/heads = 288: the
// queries are 1024 wide), one kv head, a 262144-token vocabulary and
// the output tied to the embedding, as in the real model; its 22 sliding
// layers of 26 attend to 512 positions (modelgen's default window for
// gemma3, the real model's) and rotate with base 10000, the others with
// 1e6 (modelgen's default for gemma3).
func Gemma3_1B() Shape {
	return Shape{Dim: 1152, HiddenDim: 6912, Layers: 26, Heads: 4, KVHeads: 1, HeadDim: 256, VocabSize: 262144, ContextLength: 32768}
}

// LFM2_1_2B is the shape of LFM2-1.2B (architecture lfm2; LFM2_1_2BFamily
// places its layers): 16 layers over a 2048-wide stream, 10 of them gated
// short convolutions over 3 positions and 6 attention layers of 32 heads
// of 64 (8 kv heads), a feed-forward of 8192 and a 65536-token vocabulary,
// the output tied to the embedding, as in the real model.
func LFM2_1_2B() Shape {
	return Shape{Dim: 2048, HiddenDim: 8192, Layers: 16, Heads: 32, KVHeads: 8, VocabSize: 65536, ContextLength: 128000}
}

// LFM2_1_2BFamily is LFM2-1.2B's layer plan: attention at layers 2, 5, 8,
// 10, 12 and 14, short convolutions elsewhere.
func LFM2_1_2BFamily() Family {
	return Family{AttentionLayers: []int{2, 5, 8, 10, 12, 14}}
}

// Qwen35_0_8B is the shape of Qwen3.5-0.8B (architecture qwen35;
// Qwen35_0_8BSSM is its Gated DeltaNet layers'): 24 layers over a
// 1024-wide stream, every 4th gated attention of 8 heads of 256 (2 kv
// heads, a quarter of each head rotated), the others Gated DeltaNet
// layers of 16 heads of 128, a feed-forward of 3584 and a 248320-token
// vocabulary, the output tied to the embedding, as in the real model.
func Qwen35_0_8B() Shape {
	return Shape{Dim: 1024, HiddenDim: 3584, Layers: 24, Heads: 8, KVHeads: 2, HeadDim: 256, VocabSize: 248320, ContextLength: 262144}
}

// Qwen35_0_8BSSM is Qwen3.5-0.8B's Gated DeltaNet layers: a convolution
// over 4 positions, 16 query/key heads and 16 value heads of 128, full
// attention every 4th layer.
func Qwen35_0_8BSSM() SSM {
	return SSM{ConvKernel: 4, StateSize: 128, GroupCount: 16, TimeStepRank: 16, InnerSize: 2048, FullAttentionInterval: 4}
}

// BigVocab is stories15M's body with Qwen's 151936-token vocabulary (the
// output tied to the embedding): a small model whose every token samples,
// and grammar-masks, as many ids as Qwen's, for the grammar benchmark.
func BigVocab() Shape {
	s := Stories15M()
	s.VocabSize = 151936
	return s
}

// MiniLML6 is the shape of all-MiniLM-L6-v2 (architecture bert): the
// smallest common sentence-embedding model.
func MiniLML6() Shape {
	return Shape{Dim: 384, HiddenDim: 1536, Layers: 6, Heads: 12, KVHeads: 12, VocabSize: BertVocabSize, ContextLength: 512}
}

// BGEBase is the shape of bge-base-en-v1.5 (architecture bert).
func BGEBase() Shape {
	return Shape{Dim: 768, HiddenDim: 3072, Layers: 12, Heads: 12, KVHeads: 12, VocabSize: BertVocabSize, ContextLength: 512}
}

// NomicEmbedV15 is the shape of nomic-embed-text-v1.5 (architecture
// nomic-bert): its embedding has 30528 rows, BERT's 30522 tokens padded
// as the converter pads them, and it was trained for 2048 positions.
func NomicEmbedV15() Shape {
	return Shape{Dim: 768, HiddenDim: 3072, Layers: 12, Heads: 12, KVHeads: 12, VocabSize: 30528, ContextLength: 2048}
}

// ShapeNames are the named shapes, smallest first.
func ShapeNames() []string { return []string{"stories15M", "stories110M"} }

// ShapeByName returns a named shape: "stories15M", "stories110M", or
// "tinyllama" (TinyLlama-1.1B's, 0.6–4.4 GB depending on the type: not among
// ShapeNames, which the default benchmark generates), "llama3b", "llama8b",
// "qwen3-0.6b", "gemma3-1b", "lfm2-1.2b" and "qwen35-0.8b" (of
// architecture ArchOf: qwen3, gemma3, lfm2, qwen35), "bigvocab" (BigVocab), the embedding models "minilm-l6", "bge-base"
// (bert) and "nomic-embed-v1.5" (nomic-bert), and the reranker
// "minilm-l6-rerank" (MiniLM-L6's body with a classification head, as
// ms-marco-MiniLM-L-6-v2: bert, Pooling rank).
func ShapeByName(name string) (Shape, error) {
	switch name {
	case "stories15M":
		return Stories15M(), nil
	case "stories110M":
		return Stories110M(), nil
	case "tinyllama":
		return TinyLlama(), nil
	case "llama3b":
		return Llama3B(), nil
	case "llama8b":
		return Llama8B(), nil
	case "qwen3-0.6b":
		return Qwen3_0_6B(), nil
	case "gemma3-1b":
		return Gemma3_1B(), nil
	case "lfm2-1.2b":
		return LFM2_1_2B(), nil
	case "qwen35-0.8b":
		return Qwen35_0_8B(), nil
	case "bigvocab":
		return BigVocab(), nil
	case "minilm-l6", "minilm-l6-rerank":
		return MiniLML6(), nil
	case "bge-base":
		return BGEBase(), nil
	case "nomic-embed-v1.5":
		return NomicEmbedV15(), nil
	}
	return Shape{}, fmt.Errorf("%w: no shape named %q (known: %s, tinyllama, llama3b, llama8b, qwen3-0.6b, gemma3-1b, bigvocab, minilm-l6, bge-base, nomic-embed-v1.5, minilm-l6-rerank, lfm2-1.2b, qwen35-0.8b, parity)",
		ErrSpec, name, strings.Join(ShapeNames(), ", "))
}

// ArchOf is the architecture of a named shape: qwen3 for "qwen3-0.6b",
// gemma3 for "gemma3-1b", lfm2 for "lfm2-1.2b", qwen35 for "qwen35-0.8b", bert for "minilm-l6", "bge-base" and
// "minilm-l6-rerank",
// nomic-bert for "nomic-embed-v1.5", llama for the others.
func ArchOf(shape string) string {
	switch shape {
	case "qwen3-0.6b":
		return "qwen3"
	case "gemma3-1b":
		return "gemma3"
	case "lfm2-1.2b":
		return "lfm2"
	case "qwen35-0.8b":
		return "qwen35"
	case "minilm-l6", "bge-base", "minilm-l6-rerank":
		return "bert"
	case "nomic-embed-v1.5":
		return "nomic-bert"
	}
	return DefaultArch
}

// BenchTypes are the tensor types the benchmark writes each shape in.
func BenchTypes() []tensor.Type {
	return []tensor.Type{tensor.F32, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K}
}

// benchTypesOf are the types the benchmark writes shape in: BenchTypes,
// less F32 for TinyLlama (4.4 GB: more than 32-bit WebAssembly can hold, and
// no one runs a 1.1B model unquantized in a page); Q4_0 only for the 3B and
// 8B shapes (the memory benchmark's); Q8_0 and Q4_K for Qwen3-0.6B,
// Gemma-3-1B, LFM2-1.2B and Qwen3.5-0.8B (Gemma's 1152-wide rows are not whole K-quant blocks, so its
// Q4_K holds them in Q5_0, as llama-quantize's), and Q4_0 for Qwen3-0.6B
// too (the WebGPU benchmark's, beside TinyLlama's);
// Q4_0 for bigvocab (the grammar benchmark's, beside stories15M and
// TinyLlama in Q4_0); F32, F16 and Q8_0 for the embedding models (the
// types their GGUF files are published in).
func benchTypesOf(shape string) []tensor.Type {
	switch shape {
	case "minilm-l6", "bge-base", "nomic-embed-v1.5", "minilm-l6-rerank":
		return []tensor.Type{tensor.F32, tensor.F16, tensor.Q8_0}
	case "qwen3-0.6b":
		return []tensor.Type{tensor.Q8_0, tensor.Q4_0, tensor.Q4_K}
	case "gemma3-1b", "lfm2-1.2b", "qwen35-0.8b":
		return []tensor.Type{tensor.Q8_0, tensor.Q4_K}
	case "tinyllama":
		return BenchTypes()[1:]
	case "llama3b", "llama8b", "bigvocab":
		return []tensor.Type{tensor.Q4_0}
	}
	return BenchTypes()
}

// benchSeed seeds every benchmark model: one seed for all, so the models of
// a shape differ only in how their (identical) weights are stored.
const benchSeed = 1

// Model is a named Spec.
type Model struct {
	Name  string // "<shape>-<type>", e.g. "stories15M-Q4_K"; the file is Name + ".gguf"
	Shape string // the shape's name
	Spec  Spec
}

// BenchModels returns the random-weight models the benchmark runs (and,
// for the shape ParityShape, the parity models, ParityModels): each
// named shape in its types (benchTypesOf), of its architecture (ArchOf),
// BOS and EOS muted (so greedy decoding generates exactly as many tokens as
// asked; the embedding models, which generate nothing, have no output to
// mute and pool by the mean), all with the same seed. The output is tied to the embedding as in
// llama2.c's stories models, in Qwen3-0.6B and in Gemma-3-1B; the larger
// llama shapes' is its own matrix as in the real models (TinyLlama: a 2048×32000 product
// per token that a tied output would hide).
func BenchModels(shapes ...string) ([]Model, error) {
	var out []Model
	for _, name := range shapes {
		if name == ParityShape {
			out = append(out, ParityModels()...)
			continue
		}
		sh, err := ShapeByName(name)
		if err != nil {
			return nil, err
		}
		for _, t := range benchTypesOf(name) {
			m := Model{Name: name + "-" + t.String(), Shape: name}
			separate := name != "stories15M" && name != "stories110M" && name != "qwen3-0.6b" && name != "gemma3-1b" && name != "lfm2-1.2b" && name != "qwen35-0.8b" && name != "bigvocab"
			m.Spec = Spec{Name: m.Name, Shape: sh, Type: t, SeparateOutput: separate, MuteSpecial: true, Seed: benchSeed}
			if arch := ArchOf(name); arch != DefaultArch {
				m.Spec.Arch = arch
			}
			switch name {
			case "lfm2-1.2b":
				m.Spec.Family = LFM2_1_2BFamily()
			case "qwen35-0.8b":
				m.Spec.SSM, m.Spec.RopeTheta = Qwen35_0_8BSSM(), 1e7
			}
			if isBert(m.Spec.Arch) {
				m.Spec.SeparateOutput, m.Spec.MuteSpecial = false, false
			}
			if name == "minilm-l6-rerank" {
				m.Spec.Pooling = "rank"
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// PromptBenchFlags defines, on the command line's flags, the flags of the
// prompt benchmark named bench (engine's BenchmarkPromptBlock, engine/shard's
// BenchmarkShardedPrompt) — -prompt-shape, -prompt-type, -prompt-tokens —
// and returns the function that gives the model and prompt they say
// (PromptBench). A test package calls it once, in a package variable.
func PromptBenchFlags(bench string) func() (Spec, []int, error) {
	shape := flag.String("prompt-shape", "stories15M", bench+": the shape of its random-weight model (stories15M, stories110M, tinyllama)")
	typ := flag.String("prompt-type", "Q4_0", bench+": the model's tensor type")
	n := flag.Int("prompt-tokens", 128, bench+": the prompt's length")
	return func() (Spec, []int, error) { return PromptBench(*shape, *typ, *n) }
}

// PromptBench is the model and prompt of the prompt benchmarks: random
// weights of the shape named shape in the tensor type named typ, with a
// separate output and muted special tokens, and a prompt of n token ids
// past the first three (none of them BOS or EOS).
func PromptBench(shape, typ string, n int) (Spec, []int, error) {
	sh, err := ShapeByName(shape)
	if err != nil {
		return Spec{}, nil, err
	}
	t := tensor.F32
	for t.String() != typ {
		if t++; t >= 64 {
			return Spec{}, nil, fmt.Errorf("%w: no tensor type %q", ErrSpec, typ)
		}
	}
	prompt := make([]int, n)
	for i := range prompt {
		prompt[i] = 3 + i*7919%(sh.VocabSize-3)
	}
	return Spec{Shape: sh, Type: t, SeparateOutput: true, MuteSpecial: true, Seed: 1}, prompt, nil
}
