// Package modelgen writes random-weight GGUF models of any shape of the
// families the engine runs — llama, qwen2, qwen3, phi3, smollm3, olmo2,
// granite, gemma2, gemma3, gemma4, gemma3n, the hybrids lfm2, qwen35 and
// granitehybrid, the mixtures of experts qwen3moe, qwen2moe, qwen35moe,
// lfm2moe and gpt-oss — and embedding models of the bert and nomic-bert families, for tests and
// benchmarks: a model with the shape and tensor types of a real one
// runs exactly as fast as the real one, and a few lines of Go make it, so
// nothing big is committed or downloaded.
//
// Weights are drawn from a normal distribution with a seeded PCG generator,
// so a Spec always gives the same bytes; matrices are stored in the Spec's
// type through engine/tensor's quantizers (the bytes llama-quantize writes),
// norms and biases as F32. The vocabulary is synthetic SentencePiece (see
// Build), or for the BERT family BERT's real WordPiece one (see bert.go).
package modelgen

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Version identifies what Build writes. It is stored in every file and in
// the benchmark's manifest; bump it whenever the bytes Build produces for a
// Spec change, so cached benchmark models are regenerated.
const Version = 1

// Defaults for the zero values of a Spec's fields.
const (
	DefaultArch      = "llama"
	DefaultRopeTheta = 10000
	DefaultNormEps   = 1e-5
	DefaultStd       = 0.02
)

// kQuantBlock is the row-length multiple the K-quant types need (ggml's QK_K).
const kQuantBlock = 256

// maxElements bounds one tensor (2^31 values, 8 GiB as float32): more than
// any model the engine can hold in 32-bit WebAssembly, and far from overflow.
const maxElements = 1 << 31

// Shape is a transformer's hyper-parameters, named as GGUF names them.
type Shape struct {
	Dim           int `json:"dim"`            // embedding length
	HiddenDim     int `json:"hidden_dim"`     // feed-forward length
	Layers        int `json:"layers"`         // block count
	Heads         int `json:"heads"`          // attention heads
	KVHeads       int `json:"kv_heads"`       // key/value heads (grouped-query attention when < Heads)
	VocabSize     int `json:"vocab_size"`     // tokens; at least MinVocabSize
	ContextLength int `json:"context_length"` // positions the model was "trained" for
	// HeadDim is the width of one attention head, written as
	// attention.key_length and value_length; 0 means Dim/Heads (and, but
	// for qwen3, no such keys). Qwen3's heads are wider than that: its
	// queries are then wider than the residual stream.
	HeadDim int `json:"head_dim,omitempty"`
}

// HeadSize is the width of one attention head: HeadDim, or Dim/Heads.
func (s Shape) HeadSize() int {
	if s.HeadDim > 0 {
		return s.HeadDim
	}
	return s.Dim / s.Heads
}

// QDim is the width of the queries of one position: all heads.
func (s Shape) QDim() int { return s.HeadSize() * s.Heads }

// KVDim is the width of the keys (and values) of one position.
func (s Shape) KVDim() int { return s.HeadSize() * s.KVHeads }

// Spec describes one random-weight model. The zero value of each optional
// field means its Default.
type Spec struct {
	// Name is written as general.name (optional).
	Name string `json:"name,omitempty"`
	// Arch is "llama" (the default), "qwen2" (adds q/k/v biases; NeoX-style
	// rope) or "qwen3" (no biases, an RMSNorm of each head of the queries
	// and keys, NeoX-style rope, attention.key_length and value_length
	// always written, as llama.cpp's converter writes them), or one of the
	// families of family.go ("phi3", "smollm3", "olmo2", "granite"),
	// granitehybrid.go ("granitehybrid"), gemma.go ("gemma2", "gemma3")
	// gemma4.go ("gemma4") and gemma3n.go ("gemma3n"), or a mixture of experts of moe.go
	// ("qwen3moe", "qwen2moe"), the hybrids of lfm2.go ("lfm2", "lfm2moe"),
	// or an embedding model of bert.go ("bert", "nomic-bert").
	Arch string `json:"arch,omitempty"`
	Shape
	// Family holds what phi3, granite and the gemmas' files say beyond the
	// llama family's keys (see family.go); zero for the others.
	Family
	// SSM is the shape of a hybrid's recurrent layers (qwen35.go); zero
	// for the others, and its zero fields the architecture's defaults.
	SSM SSM `json:"ssm,omitzero"`
	// Gemma4 holds what a gemma4 file says beyond gemma3's (see
	// gemma4.go); nil for the others, and for a gemma4 the zero Gemma4.
	Gemma4 *Gemma4 `json:"gemma4,omitempty"`
	// Hybrid is a granitehybrid model's Mamba-2 shape and its attention
	// layers (see granitehybrid.go); nil for the others.
	Hybrid *GraniteHybrid `json:"hybrid,omitempty"`
	// MoE is a mixture of experts' shape (moe.go: qwen3moe); zero for the
	// others.
	MoE
	// Pooling is an embedding model's pooling_type (bert and nomic-bert
	// only): "mean" (the default), "cls", "last", or "rank" (a bert
	// reranker, with its classifier head).
	Pooling string `json:"pooling,omitempty"`
	// RopeTheta is rope.freq_base (DefaultRopeTheta when 0;
	// DefaultNomicRopeTheta for nomic-bert, unused by bert).
	RopeTheta float32 `json:"rope_theta,omitempty"`
	// NormEps is attention.layer_norm_rms_epsilon (DefaultNormEps when 0),
	// or the BERT family's attention.layer_norm_epsilon
	// (DefaultBertNormEps when 0).
	NormEps float32 `json:"norm_eps,omitempty"`
	// Type is the storage type of the matrices (F32 is the zero value):
	// any type tensor.Quantize writes, MXFP4 included. A K-quant type falls
	// back as llama-quantize does for matrices whose rows are not a
	// multiple of 256 long: see MatrixType.
	Type tensor.Type `json:"type"`
	// SeparateOutput writes output.weight; otherwise the output is tied to
	// the token embedding (as llama2.c's stories models are).
	SeparateOutput bool `json:"separate_output,omitempty"`
	// RopeFreqFactors is written as rope_freqs.weight when not nil.
	RopeFreqFactors []float32 `json:"rope_freq_factors,omitempty"`
	// RopeLinearScale, when > 0, writes linear rope scaling with this factor.
	RopeLinearScale float32 `json:"rope_linear_scale,omitempty"`
	// MuteSpecial makes the output rows of BOS and EOS zero, so their logit
	// is always 0: below the largest logit of a random model, so greedy
	// decoding never ends early (what a benchmark needs). With a tied output
	// this zeroes their embedding rows too.
	MuteSpecial bool `json:"mute_special,omitempty"`
	// Seed seeds the weights: the same Spec gives the same bytes.
	Seed uint64 `json:"seed"`
	// Std is the weights' standard deviation (DefaultStd when 0; BertStd
	// for the BERT family, see bert.go). Norm weights are 1 + noise,
	// biases noise.
	Std float64 `json:"std,omitempty"`
	// OutputStd is the standard deviation of the output classifier
	// (output.weight, or the token embedding when the output is tied to
	// it); Std when 0. Larger, it makes the next-token distribution
	// peaked as a trained model's is, while the layers keep Std: greedy
	// decoding then rarely meets a near tie, which parity tests need.
	OutputStd float64 `json:"output_std,omitempty"`
	// Fast draws Q4_0 and Q8_0 matrices' quants as uniform random bits
	// under one scale (giving about Std) instead of quantizing normal
	// draws: twenty times faster, for the multi-gigabyte models of tests
	// that need a real size, not a real distribution. Other types ignore it.
	Fast bool `json:"fast,omitempty"`
	// ChatTemplate names one of ChatTemplates (a real model's Jinja
	// template, templates/<name>.jinja), written as tokenizer.chat_template,
	// its markers as the vocabulary's last tokens (see templateTokens);
	// "" writes none.
	ChatTemplate string `json:"chat_template,omitempty"`
}

// withDefaults returns s with its zero-valued optional fields filled in.
func (s Spec) withDefaults() Spec {
	if s.Arch == "" {
		s.Arch = DefaultArch
	}
	s = s.gemmaDefaults()
	s = s.bertDefaults()
	if (s.Arch == "lfm2" || s.Arch == "lfm2moe") && s.ShortConvKernel == 0 {
		s.ShortConvKernel = lfm2Kernel
	}
	s = s.qwen35Defaults()
	if s.RopeTheta == 0 {
		s.RopeTheta = DefaultRopeTheta
	}
	if s.NormEps == 0 {
		s.NormEps = DefaultNormEps
	}
	if s.Std == 0 {
		s.Std = DefaultStd
	}
	if s.OutputStd == 0 {
		s.OutputStd = s.Std
	}
	return s
}

// MatrixType is the type a matrix with rows of cols values is stored in: the
// Spec's type, except that a K-quant type, whose blocks are 256 values, falls
// back where cols is not a multiple of 256 as llama-quantize does: Q4_K to
// Q5_0, Q5_K to Q5_1, Q6_K to Q8_0. (Q2_K and Q3_K fall back to IQ4_NL
// there, which this engine does not run: an error.)
func (s Spec) MatrixType(cols int) (tensor.Type, error) {
	t := s.Type
	if cols%kQuantBlock != 0 {
		switch t {
		case tensor.Q4_K:
			t = tensor.Q5_0
		case tensor.Q5_K:
			t = tensor.Q5_1
		case tensor.Q6_K:
			t = tensor.Q8_0
		case tensor.Q2_K, tensor.Q3_K:
			return 0, fmt.Errorf("%w: %v rows of %d values fall back to IQ4_NL, which has no kernels here", ErrSpec, t, cols)
		}
	}
	if !tensor.Supported(t) {
		return 0, fmt.Errorf("%w: no quantizer for %v", ErrSpec, t)
	}
	if _, err := tensor.RowBytes(t, cols); err != nil {
		return 0, fmt.Errorf("%w: %v rows of %d values: %w", ErrSpec, t, cols, err)
	}
	return t, nil
}

// validate checks that s (with defaults) describes a model Build can write.
func (s Spec) validate() error {
	switch s.Arch {
	case "llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "smollm3", "olmo2", "granite", "granitehybrid", "bert", "nomic-bert", "lfm2", "qwen35", "gemma4", "qwen3moe", "qwen2moe", "gpt-oss", "qwen35moe", "lfm2moe", "gemma3n":
	default:
		return fmt.Errorf("%w: architecture %q is not llama, qwen2, qwen3, phi3, smollm3, olmo2, granite, granitehybrid, gemma2, gemma3, bert, nomic-bert, lfm2, qwen35, gemma4, qwen3moe, qwen2moe, gpt-oss, qwen35moe, lfm2moe or gemma3n", ErrSpec, s.Arch)
	}
	if err := s.validateGraniteHybrid(); err != nil {
		return err
	}
	if err := s.validateQwen35(); err != nil {
		return err
	}
	if err := s.validateLFM2(); err != nil {
		return err
	}
	if err := s.validateMoE(); err != nil {
		return err
	}
	if err := s.validateGptOSS(); err != nil {
		return err
	}
	if err := s.validateGemma(); err != nil {
		return err
	}
	if err := s.validateGemma4(); err != nil {
		return err
	}
	if err := s.validateGemma3n(); err != nil {
		return err
	}
	if err := s.validateBert(); err != nil {
		return err
	}
	if err := s.validateChatTemplate(); err != nil {
		return err
	}
	sh := s.Shape
	for _, f := range []struct {
		name string
		v    int
	}{{"Dim", sh.Dim}, {"HiddenDim", sh.HiddenDim}, {"Layers", sh.Layers}, {"Heads", sh.Heads},
		{"KVHeads", sh.KVHeads}, {"ContextLength", sh.ContextLength}} {
		if f.v <= 0 || f.v > maxElements {
			return fmt.Errorf("%w: %s is %d, want 1..%d", ErrSpec, f.name, f.v, maxElements)
		}
	}
	if sh.HeadDim < 0 || sh.HeadDim > maxElements {
		return fmt.Errorf("%w: HeadDim is %d, want 0..%d", ErrSpec, sh.HeadDim, maxElements)
	}
	if sh.VocabSize < MinVocabSize || sh.VocabSize > maxElements {
		return fmt.Errorf("%w: VocabSize is %d, want %d..%d (the synthetic vocabulary's control and byte tokens)", ErrSpec, sh.VocabSize, MinVocabSize, maxElements)
	}
	if sh.HeadDim == 0 && sh.Dim%sh.Heads != 0 {
		return fmt.Errorf("%w: Dim %d is not a multiple of Heads %d (and HeadDim is 0)", ErrSpec, sh.Dim, sh.Heads)
	}
	if sh.HeadSize()%2 != 0 {
		return fmt.Errorf("%w: the head size %d is odd; rotary embeddings need pairs", ErrSpec, sh.HeadSize())
	}
	if sh.Heads%sh.KVHeads != 0 {
		return fmt.Errorf("%w: Heads %d is not a multiple of KVHeads %d", ErrSpec, sh.Heads, sh.KVHeads)
	}
	for _, m := range [][2]int{{sh.VocabSize, sh.Dim}, {sh.QDim(), sh.Dim}, {sh.Dim, sh.QDim()}, {sh.HiddenDim, sh.Dim}, {sh.Dim, sh.HiddenDim}} {
		if hi, n := bits.Mul64(uint64(m[0]), uint64(m[1])); hi != 0 || n > maxElements {
			return fmt.Errorf("%w: a %d×%d matrix has more than %d values", ErrSpec, m[0], m[1], maxElements)
		}
		if _, err := s.MatrixType(m[1]); err != nil {
			return err
		}
	}
	if !(s.Std > 0) || math.IsInf(s.Std, 0) || !(s.OutputStd > 0) || math.IsInf(s.OutputStd, 0) || !(s.RopeLinearScale >= 0) {
		return fmt.Errorf("%w: Std %v, OutputStd %v and RopeLinearScale %v must be finite and positive (0: none)", ErrSpec, s.Std, s.OutputStd, s.RopeLinearScale)
	}
	return s.validateFamily()
}

// Build writes the model sp describes as a GGUF file. Its metadata carries
// the hyper-parameters, a synthetic SentencePiece vocabulary of VocabSize
// tokens (<unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then
// "▁t<i>" pieces; with no merges to build those pieces from, any text
// tokenizes to its UTF-8 bytes; the BERT family's is BERT's WordPiece
// vocabulary) and, as wasmlm.modelgen.version, Version. Tensors are
// written in llama.cpp's order and names.
func Build(sp Spec) ([]byte, error) {
	b, err := build(sp)
	if err != nil {
		return nil, err
	}
	return b.Bytes()
}

// BuildSplit writes the model sp describes as parts of a split model, the
// files llama-gguf-split --split-max-tensors ⌈tensors/parts⌉ writes from
// Build's file: part i is to be named gguf.SplitPath(prefix, i+1, parts).
// It is an ErrSpec error when that limit does not cut the model's tensors
// into exactly parts parts (9 tensors cannot be 4 parts of at most 3), or
// when parts is below 1. A model in 1 part is one file with the split keys.
func BuildSplit(sp Spec, parts int) ([][]byte, error) {
	b, err := build(sp)
	if err != nil {
		return nil, err
	}
	return splitBuilder(b, parts)
}

// Split writes the GGUF file data as parts as BuildSplit does: the files
// llama-gguf-split --split-max-tensors ⌈tensors/parts⌉ writes from it.
func Split(data []byte, parts int) ([][]byte, error) {
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, err
	}
	return splitBuilder(gguf.BuilderOf(f), parts)
}

// splitBuilder writes b's file as parts parts (see BuildSplit).
func splitBuilder(b *gguf.Builder, parts int) ([][]byte, error) {
	n := b.TensorCount()
	if parts < 1 || parts > n {
		return nil, fmt.Errorf("%w: %d parts of a model of %d tensors", ErrSpec, parts, n)
	}
	out, err := b.SplitBytes(gguf.SplitOptions{MaxTensors: (n + parts - 1) / parts})
	if err != nil {
		return nil, err
	}
	if len(out) != parts {
		return nil, fmt.Errorf("%w: at most %d tensors a part cut %d tensors into %d parts, not %d", ErrSpec, (n+parts-1)/parts, n, len(out), parts)
	}
	return out, nil
}

// build fills a Builder with the model sp describes.
func build(sp Spec) (*gguf.Builder, error) {
	sp = sp.withDefaults()
	if err := sp.validate(); err != nil {
		return nil, err
	}
	g := newGenerator(sp)
	g.emit = g.b.AddTensor
	g.metadata()
	g.tensors()
	if g.err != nil {
		return nil, g.err
	}
	return g.b, nil
}

func newGenerator(sp Spec) *generator {
	return &generator{sp: sp, rng: rand.New(rand.NewPCG(sp.Seed, 1)), b: gguf.NewBuilder()}
}

// generator holds the state of one Build.
type generator struct {
	sp  Spec
	rng *rand.Rand
	b   *gguf.Builder
	err error // the first quantization error
	// emit takes each tensor as it is drawn; with headerOnly none is drawn
	// and data is nil.
	emit       func(name string, t tensor.Type, dims []uint64, data []byte)
	headerOnly bool
}

func (g *generator) metadata() {
	sp, b := g.sp, g.b
	key := func(k string) string { return sp.Arch + "." + k }
	b.Set("general.architecture", gguf.ValueOf(sp.Arch))
	if sp.Name != "" {
		b.Set("general.name", gguf.ValueOf(sp.Name))
	}
	b.Set(key("context_length"), gguf.ValueOf(uint32(sp.ContextLength)))
	b.Set(key("embedding_length"), gguf.ValueOf(uint32(sp.Dim)))
	b.Set(key("feed_forward_length"), gguf.ValueOf(uint32(sp.HiddenDim)))
	b.Set(key("block_count"), gguf.ValueOf(uint32(sp.Layers)))
	b.Set(key("attention.head_count"), gguf.ValueOf(uint32(sp.Heads)))
	if isBert(sp.Arch) {
		g.bertMetadata()
		return
	}
	b.Set(key("attention.head_count_kv"), gguf.ValueOf(uint32(sp.KVHeads)))
	if sp.Arch != "gemma2" || sp.RopeTheta != DefaultRopeTheta { // gemma2's converter writes none
		b.Set(key("rope.freq_base"), gguf.ValueOf(sp.RopeTheta))
	}
	b.Set(key("attention.layer_norm_rms_epsilon"), gguf.ValueOf(sp.NormEps))
	if sp.HeadDim > 0 || sp.Arch != "llama" && sp.Arch != "qwen2" && sp.Arch != "qwen2moe" { // the converter writes them from config.json's head_dim
		b.Set(key("attention.key_length"), gguf.ValueOf(uint32(sp.HeadSize())))
		b.Set(key("attention.value_length"), gguf.ValueOf(uint32(sp.HeadSize())))
	}
	if sp.RopeLinearScale > 0 {
		b.Set(key("rope.scaling.type"), gguf.ValueOf("linear"))
		b.Set(key("rope.scaling.factor"), gguf.ValueOf(sp.RopeLinearScale))
	}
	if sp.RopeYaRNFactor > 0 {
		b.Set(key("rope.scaling.type"), gguf.ValueOf("yarn"))
		b.Set(key("rope.scaling.factor"), gguf.ValueOf(sp.RopeYaRNFactor))
		b.Set(key("rope.scaling.original_context_length"), gguf.ValueOf(uint32(cmp.Or(sp.RopeOriginalContext, sp.ContextLength))))
	}
	g.familyMetadata()
	g.gemmaMetadata()
	g.lfm2Metadata()
	if qwen35Archs[sp.Arch] {
		g.qwen35Metadata()
	}
	g.gemma4Metadata()
	g.gemma3nMetadata()
	if sp.Arch == "granitehybrid" {
		g.graniteHybridMetadata()
	}
	g.moeMetadata()
	g.gptOSSMetadata()
	spmVocab(b, sp.VocabSize, templateTokens[sp.ChatTemplate])
	if sp.ChatTemplate != "" {
		b.Set("tokenizer.chat_template", gguf.ValueOf(chatTemplate(sp.ChatTemplate)))
	}
	b.Set("wasmlm.modelgen.version", gguf.ValueOf(uint32(Version)))
}

// tensors draws and adds every tensor, in llama.cpp's order.
func (g *generator) tensors() {
	sp := g.sp
	if sp.Arch == "phi3" || sp.Arch == "olmo2" {
		g.familyTensors()
		return
	}
	if sp.Arch == "gemma4" {
		g.gemma4Tensors()
		return
	}
	if sp.Arch == "gemma3n" {
		g.gemma3nTensors()
		return
	}
	if isBert(sp.Arch) {
		g.bertTensors()
		return
	}
	if sp.Arch == gptOSSArch {
		g.gptOSSTensors()
		return
	}
	if sp.Arch == "lfm2" || sp.Arch == "lfm2moe" {
		g.lfm2Tensors()
		return
	}
	if qwen35Archs[sp.Arch] {
		g.qwen35Tensors()
		return
	}
	if sp.Arch == "granitehybrid" {
		g.graniteHybridTensors()
		return
	}
	q, kv := sp.QDim(), sp.KVDim()
	layer := func(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }
	gemma := sp.Arch == "gemma2" || sp.Arch == "gemma3" // post-norms; the norm weights are 1 + w, as the converter writes them
	g.matrix("token_embd.weight", sp.VocabSize, sp.Dim, !sp.SeparateOutput)
	for i := range sp.Layers {
		g.vector(layer(i, "attn_norm.weight"), sp.Dim, 1)
		g.matrix(layer(i, "attn_q.weight"), q, sp.Dim, false)
		g.matrix(layer(i, "attn_k.weight"), kv, sp.Dim, false)
		g.matrix(layer(i, "attn_v.weight"), kv, sp.Dim, false)
		g.matrix(layer(i, "attn_output.weight"), sp.Dim, q, false)
		switch sp.Arch {
		case "qwen2", "qwen2moe":
			g.vector(layer(i, "attn_q.bias"), q, 0)
			g.vector(layer(i, "attn_k.bias"), kv, 0)
			g.vector(layer(i, "attn_v.bias"), kv, 0)
		case "qwen3", "gemma3", "qwen3moe": // one norm for every head
			g.vector(layer(i, "attn_q_norm.weight"), sp.HeadSize(), 1)
			g.vector(layer(i, "attn_k_norm.weight"), sp.HeadSize(), 1)
		}
		if gemma {
			g.vector(layer(i, "post_attention_norm.weight"), sp.Dim, 1)
		}
		g.vector(layer(i, "ffn_norm.weight"), sp.Dim, 1)
		if moeArchs[sp.Arch] {
			g.moeFFN(i)
		} else {
			g.matrix(layer(i, "ffn_gate.weight"), sp.HiddenDim, sp.Dim, false)
			g.matrix(layer(i, "ffn_down.weight"), sp.Dim, sp.HiddenDim, false)
			g.matrix(layer(i, "ffn_up.weight"), sp.HiddenDim, sp.Dim, false)
		}
		if gemma {
			g.vector(layer(i, "post_ffw_norm.weight"), sp.Dim, 1)
		}
	}
	g.vector("output_norm.weight", sp.Dim, 1)
	if sp.SeparateOutput {
		g.matrix("output.weight", sp.VocabSize, sp.Dim, true)
	}
	if sp.RopeFreqFactors != nil {
		g.emit("rope_freqs.weight", tensor.F32, []uint64{uint64(len(sp.RopeFreqFactors))}, f32Bytes(sp.RopeFreqFactors))
	}
}

// SetKV is the GGUF file data with the metadata key set to v (added, or
// replaced), its tensors and their data as they were: how tests give a
// model another chat template, say.
func SetKV(data []byte, key string, v gguf.Value) ([]byte, error) {
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, err
	}
	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	b.Set(key, v)
	for _, ti := range f.Tensors() {
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
	}
	return b.Bytes()
}
