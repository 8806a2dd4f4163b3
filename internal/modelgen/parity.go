package modelgen

import (
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// The parity models: one small random-weight model per architecture, each
// exercising what its family computes beyond the llama family's layer
// (sliding windows, soft-caps, partial rotation, multipliers, several
// layers of each kind), in F32 and in the quantized type the family is
// tested in. `wasmlm bench -gen DIR -shapes parity` writes them, as
// <architecture>.gguf and <architecture>-<type>.gguf (a second model of an
// architecture, its variant: gemma4-moe.gguf and gemma4-moe-Q8_0.gguf,
// Gemma 4's mixture of experts), so that anyone can
// run a family against llama.cpp or another runtime without a download.

// ParityShape is the name BenchModels knows the parity models by.
const ParityShape = "parity"

// paritySeed seeds every parity model.
const paritySeed = 14

// parityVocab is the parity models' vocabulary: a real model's size, so a
// file exercises the classifier's width as a real one does.
const parityVocab = 32000

// parityArch is one architecture's parity model: its spec (in F32) and the
// quantized type it is also written in; variant, for a second model of an
// architecture, names it <architecture>-<variant> (gemma4-moe).
type parityArch struct {
	spec    Spec
	quant   tensor.Type
	variant string
}

// name is the model's name: its architecture, and its variant.
func (a parityArch) name() string {
	if a.variant != "" {
		return a.spec.Arch + "-" + a.variant
	}
	return a.spec.Arch
}

// parityArchs are the parity models, one per architecture modelgen writes.
func parityArchs() []parityArch {
	// A context of 2048: a chat with tools fits, its template's text
	// being mostly bytes of the synthetic vocabulary.
	base := Shape{Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: parityVocab, ContextLength: 2048}
	wide := base // qwen3's and gemma3's heads are wider than dim/heads
	wide.HeadDim = 32
	four := base // smollm3's every 4th layer has no rotation
	four.Layers = 4
	gemma2 := base
	gemma2.Layers = 3
	gemma3 := wide
	gemma3.Layers = 7 // 5 sliding layers, then a full one, then a sliding one
	hybrid := base    // lfm2: short convolutions at 0, 2 and 3, attention at 1 and 4
	hybrid.Layers = 5
	qwen35 := wide
	qwen35.Layers = 8 // 6 Gated DeltaNet layers, attention at 3 and 7
	gptOSS := wide
	gptOSS.Layers = 4
	qwen35moe := wide
	qwen35moe.Layers = 4 // Gated DeltaNet layers, attention at 3, experts in each
	encoder := Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, ContextLength: 128}
	decoder := func(arch string, sh Shape, f Family) Spec {
		return Spec{Arch: arch, Shape: sh, Family: f, Std: 0.1, OutputStd: 0.5, SeparateOutput: true, MuteSpecial: true}
	}
	lfm2moe := decoder("lfm2moe", hybrid, Family{AttentionLayers: []int{1, 4}, DenseLayers: 2}) // experts after two dense layers
	lfm2moe.MoE = MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 64}
	granite := decoder("granite", base, Family{EmbeddingScale: 12, AttentionScale: 0.0625, ResidualScale: 0.22, LogitScale: 8})
	granite.OutputStd = 4        // its logits are divided by 8
	tied := func(sp Spec) Spec { // the gemmas' output is their token embedding
		sp.SeparateOutput, sp.OutputStd = false, sp.Std
		return sp
	}
	// gemma4: Gemma-4-E2B's parts in 5 layers: sliding at 0, 1 and 3 (heads
	// of 16, two key/value heads), full at 2 and 4 (heads of 32, one); 3
	// and 4 sharing the caches of 1 and 2 with feed-forwards twice as wide;
	// per-layer embeddings of 32; output scales.
	gemma4 := wide
	gemma4.Layers, gemma4.HiddenDim = 5, 128
	gemma4Spec := tied(decoder("gemma4", gemma4, Family{SlidingWindow: 16, FinalSoftCap: 30}))
	gemma4Spec.Gemma4 = &Gemma4{Sliding: []bool{true, true, false, true, false}, SlidingHeadDim: 16, FullKVHeads: 1,
		SharedKVLayers: 2, DoubleWide: true, PerLayerDim: 32, OutputScale: true}
	// gemma4-moe: Gemma-4-26B-A4B's parts in 5 layers: sliding at 0, 1
	// and 3, full at 2 and 4 (their values their keys), output scales; 2
	// of 8 experts beside the dense GeGLU in every layer but 1.
	gemma4MoE := gemma4
	gemma4MoE.HiddenDim = 64
	gemma4MoESpec := withMoE(tied(decoder("gemma4", gemma4MoE, Family{SlidingWindow: 16, FinalSoftCap: 30})),
		MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32})
	gemma4MoESpec.Gemma4 = &Gemma4{Sliding: []bool{true, true, false, true, false}, SlidingHeadDim: 16, FullKVHeads: 1,
		FullKeysAsValues: true, OutputScale: true, DenseLayers: []int{1}}
	// gemma3n: 22 layers, so that the last two read layer 18's cache (the
	// first shared layer is llama.cpp's fixed 20th), the first 10 with the
	// sparse gate; AltUp, LAuReL and per-layer embeddings in every layer.
	// Its per-layer embeddings are 256 values a layer whatever the model's
	// width (llama.cpp fixes them), a row of 22·256 for each token: a
	// vocabulary of 1024, not parityVocab, keeps the file at 24 MB in F32.
	// Its output is its own, unlike the other gemmas': MuteSpecial would
	// zero a tied BOS embedding, whose streams AltUp scales to its
	// magnitude (0: a division by 0, in llama.cpp as here).
	gemma3n := wide
	gemma3n.Layers, gemma3n.HiddenDim, gemma3n.VocabSize = 22, 128, 1024
	gemma3nSpec := decoder("gemma3n", gemma3n, Family{SlidingWindow: 16, FinalSoftCap: 30})
	graniteHybrid := granite // Granite 4: Mamba-2 layers but 2 and 5, which attend unrotated
	graniteHybrid.Arch, graniteHybrid.Layers = "granitehybrid", 6
	graniteHybrid.Hybrid = &GraniteHybrid{Attention: []int{2, 5}, ConvKernel: 4, StateSize: 32, Groups: 2, Heads: 8}

	return []parityArch{
		{decoder("llama", base, Family{}), tensor.Q8_0, ""},
		{decoder("qwen2", base, Family{}), tensor.Q8_0, ""},
		{decoder("qwen3", wide, Family{}), tensor.Q8_0, ""},
		{decoder("phi3", base, Family{RopeDims: 12, RopeOriginalContext: 64, RopeAttnFactor: 1.1832, SlidingWindow: 2047,
			RopeFactorsLong:  []float32{1, 1.5, 2.5, 4, 7, 12},
			RopeFactorsShort: []float32{1, 1.02, 1.05, 1.1, 1.2, 1.4}}), tensor.Q8_0, ""},
		{decoder("smollm3", four, Family{}), tensor.Q8_0, ""},
		{decoder("olmo2", base, Family{}), tensor.Q8_0, ""},
		{granite, tensor.Q8_0, ""},
		{graniteHybrid, tensor.Q8_0, ""},
		{tied(decoder("gemma2", gemma2, Family{SlidingWindow: 16})), tensor.Q8_0, ""},
		{tied(decoder("gemma3", gemma3, Family{SlidingWindow: 16})), tensor.Q8_0, ""},
		{gemma4Spec, tensor.Q8_0, ""},
		{gemma4MoESpec, tensor.Q8_0, "moe"},
		{gemma3nSpec, tensor.Q8_0, ""},
		{decoder("lfm2", hybrid, Family{AttentionLayers: []int{1, 4}}), tensor.Q8_0, ""},
		{decoder("qwen35", qwen35, Family{}), tensor.Q8_0, ""},
		{lfm2moe, tensor.Q8_0, ""},
		{Spec{Arch: "bert", Shape: encoder}, tensor.Q8_0, ""},
		{Spec{Arch: "nomic-bert", Shape: encoder}, tensor.Q8_0, ""},
		{withMoE(decoder("qwen3moe", wide, Family{}), MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 64}), tensor.Q8_0, ""},
		{withMoE(decoder("qwen2moe", base, Family{}), MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32, SharedHiddenDim: 96}), tensor.Q8_0, ""},
		// two sliding and two full layers, YaRN, MXFP4 experts beside Q8_0 matrices
		{withMoE(decoder("gpt-oss", gptOSS, Family{SlidingWindow: 16, RopeYaRNFactor: 4, RopeOriginalContext: 64}),
			MoE{Experts: 4, ExpertsUsed: 2, ExpertHiddenDim: 64}), tensor.MXFP4, ""},
		{withMoE(decoder("qwen35moe", qwen35moe, Family{}), MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32, SharedHiddenDim: 64}), tensor.Q8_0, ""},
	}
}

// withMoE is sp with the mixture of experts m.
func withMoE(sp Spec, m MoE) Spec {
	sp.MoE = m
	return sp
}

// ParityModels returns the parity models: for each architecture
// (ParityArchitectures) the model named after it, in F32, and the model
// named <architecture>-<type> in its quantized test type (a second model
// of an architecture: <architecture>-<variant> and
// <architecture>-<variant>-<type>), all with one seed, each decoder with
// its family's chat template (parityTemplates).
func ParityModels() []Model {
	var out []Model
	for _, a := range parityArchs() {
		for _, t := range []tensor.Type{tensor.F32, a.quant} {
			name := a.name()
			if t != tensor.F32 {
				name = fmt.Sprintf("%s-%v", a.name(), t)
			}
			sp := a.spec
			sp.Name, sp.Type, sp.Seed = name, t, paritySeed
			sp.ChatTemplate = parityTemplates[sp.Arch]
			out = append(out, Model{Name: name, Shape: ParityShape, Spec: sp})
		}
	}
	return out
}

// ParityArchitectures are the architectures ParityModels writes, sorted,
// each once.
func ParityArchitectures() []string {
	var out []string
	for _, a := range parityArchs() {
		out = append(out, a.spec.Arch)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
