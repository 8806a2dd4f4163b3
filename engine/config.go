package engine

import (
	"fmt"
	"math"
)

// RopeStyle says which pairs of a head's dimensions rotary embeddings rotate.
type RopeStyle int

const (
	// RopeInterleaved rotates adjacent pairs (2i, 2i+1): llama2.c and
	// llama.cpp's "normal" mode for the llama architecture.
	RopeInterleaved RopeStyle = iota
	// RopeHalves rotates (i, i+headDim/2): GPT-NeoX style, used by qwen2.
	RopeHalves
)

// Config holds a transformer's hyper-parameters.
type Config struct {
	Dim           int       // width of the residual stream (embedding size)
	HiddenDim     int       // inner width of the feed-forward network
	Layers        int       // number of transformer blocks
	Heads         int       // query heads
	KVHeads       int       // key/value heads; Heads is a multiple (grouped-query attention)
	VocabSize     int       // number of token ids
	ContextLength int       // positions the model was trained for (llama2.c's seq_len)
	RopeTheta     float32   // rotary base frequency (10000 for llama2.c)
	RopeScale     float32   // linear position scaling: positions are divided by it (1 = none)
	RopeStyle     RopeStyle // which dimensions rotate together
	NormEps       float32   // epsilon inside RMSNorm's square root
	// KeyLength is the width of one attention head when the file says
	// (GGUF's attention.key_length), 0 otherwise: then it is Dim/Heads.
	// Qwen3's heads are wider than that (Qwen3-0.6B: dim 1024, 16 heads of
	// 128), so its queries are wider than the residual stream.
	KeyLength int

	// What some families add to the llama family's hyper-parameters (see
	// the architectures' files, arch_*.go); the zero value of each is the
	// llama family's behaviour.

	// RopeDims is how many of a head's dimensions rotary embeddings turn
	// (GGUF's rope.dimension_count; Phi-4-mini turns 96 of 128), 0 meaning
	// all of them: the first RopeDims, paired as RopeStyle says, at
	// frequencies theta^(-2i/RopeDims); the others pass unchanged.
	RopeDims int
	// RopeAttnFactor multiplies the cosines and sines of every rotation
	// (rope.scaling.attn_factor: LongRoPE's attention factor), 0 meaning 1.
	RopeAttnFactor float32
	// RopeOriginalContext is the context the model was first trained for
	// (rope.scaling.original_context_length; 0: ContextLength). A session
	// whose context exceeds it rotates by a LongRoPE model's long factors,
	// else by its short ones (see ropeFactors).
	RopeOriginalContext int
	// RopeYaRN says that the rotations scale as YaRN does
	// (rope.scaling.type yarn; see yarn.go): RopeScale is then YaRN's
	// factor, and RopeOriginalContext the context its correction
	// dimensions are computed for.
	RopeYaRN bool
	// EmbeddingScale multiplies the token embedding (granite's
	// embedding_scale; gemma's √dim), and the logits are divided by
	// LogitScale (granite) and soft-capped at FinalSoftCap,
	// cap·tanh(logit/cap) (gemma2); 0 meaning none.
	EmbeddingScale, LogitScale, FinalSoftCap float32

	// LayerSpecs is each layer's recipe (layer.go): its norms, its
	// attention's variant, its feed-forward, its scales. nil: every layer
	// is the llama family's (a llama2.c checkpoint).
	LayerSpecs []LayerSpec

	// SSM is the shape of a hybrid's recurrent layers (ssm.go; the ssm.*
	// keys): Qwen3.5's Gated DeltaNet layers. Zero without such layers.
	SSM SSMShape

	// What embedding models add (embed.go; arch_bert.go for the encoders).
	// Encoder says the model is one (bert, nomic-bert): it keeps no KV
	// cache and does not generate.
	Encoder   bool
	Pooling   Pooling // how the tokens' final states become one vector (pooling_type)
	NonCausal bool    // every token attends to every other (attention.causal = false: the encoders)
	// TokenTypes is how many rows the token-type embedding has
	// (tokenizer.ggml.token_type_count; bert), 0 for none; Classes how
	// many scores a classification head gives (the length of
	// classifier.output_labels; 1 without).
	TokenTypes, Classes int

	// ShortConvKernel is how many positions the causal convolution of a
	// short-convolution layer (LayerShortConv) spans, its own included
	// (LFM2's shortconv.l_cache); 0 for a model without such layers.
	ShortConvKernel int
	// PerLayerDim is the width of each layer's slice of the per-layer
	// embeddings (gemma4's embedding_length_per_layer_input; per_layer.go),
	// 0 for none.
	PerLayerDim int
	// AltUp is how many streams the residual stream is made of (gemma3n's
	// altup_num_inputs, 4: altup.go), 0 for one; LaurelRank is the rank
	// of the low-rank residual branch (LAuReL) beside each layer's
	// attention, 0 for none.
	AltUp, LaurelRank int

	// What mixtures of experts add (moe.go; 0 for a model without
	// experts): Experts is how many experts a layer's router chooses
	// among (expert_count), ExpertsUsed how many it picks for each token
	// (expert_used_count), ExpertHiddenDim the inner width of one expert
	// (expert_feed_forward_length) and SharedHiddenDim the shared
	// expert's (expert_shared_feed_forward_length), where the layers
	// have one.
	Experts, ExpertsUsed, ExpertHiddenDim, SharedHiddenDim int

	// exactGELU evaluates GELU for each value in float32 rather than as
	// llama.cpp does, through an F16 table (gelu.go): for the float64
	// reference tests, whose inputs differ from the engine's in their last
	// bits, which the table's F16 roundings would turn into F16 steps.
	exactGELU bool
}

// RotaryDims is how many of a head's dimensions rotate: RopeDims, or all.
func (c Config) RotaryDims() int {
	if c.RopeDims > 0 {
		return c.RopeDims
	}
	return c.HeadDim()
}

// HeadDim is the width of one attention head: KeyLength, or Dim/Heads.
func (c Config) HeadDim() int {
	if c.KeyLength > 0 {
		return c.KeyLength
	}
	return c.Dim / c.Heads
}

// QDim is the width of the queries of one position, and of the attention
// output that Wo projects back to Dim: all query heads.
func (c Config) QDim() int { return c.HeadDim() * c.Heads }

// KVDim is the width of the keys (and values) of one position: all kv heads.
func (c Config) KVDim() int { return c.HeadDim() * c.KVHeads }

// GroupSize is how many query heads share one key/value head.
func (c Config) GroupSize() int { return c.Heads / c.KVHeads }

// maxDimension bounds every hyper-parameter so that size arithmetic cannot
// overflow and a corrupt header cannot ask for absurd memory.
const maxDimension = 1 << 24

// validate checks that the hyper-parameters describe a computable model.
func (c Config) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"dim", c.Dim}, {"hidden_dim", c.HiddenDim}, {"n_layers", c.Layers},
		{"n_heads", c.Heads}, {"n_kv_heads", c.KVHeads}, {"vocab_size", c.VocabSize},
		{"context_length", c.ContextLength},
	} {
		if f.v <= 0 || f.v > maxDimension {
			return fmt.Errorf("%w: %s = %d is out of range (1..%d)", ErrFormat, f.name, f.v, maxDimension)
		}
	}
	if err := c.validateExperts(); err != nil {
		return err
	}
	if c.KeyLength < 0 || c.KeyLength > maxDimension {
		return fmt.Errorf("%w: key_length = %d is out of range (1..%d)", ErrFormat, c.KeyLength, maxDimension)
	}
	if c.KeyLength == 0 && c.Dim%c.Heads != 0 {
		return fmt.Errorf("%w: dim %d is not a multiple of n_heads %d", ErrFormat, c.Dim, c.Heads)
	}
	if int64(c.QDim()) > maxDimension {
		return fmt.Errorf("%w: %d heads of %d values are more than %d", ErrFormat, c.Heads, c.HeadDim(), maxDimension)
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("%w: n_heads %d is not a multiple of n_kv_heads %d", ErrFormat, c.Heads, c.KVHeads)
	}
	if c.HeadDim()%2 != 0 {
		return fmt.Errorf("%w: head dimension %d is odd; rotary embeddings need pairs", ErrFormat, c.HeadDim())
	}
	if c.RopeDims < 0 || c.RopeDims > c.HeadDim() || c.RopeDims%2 != 0 {
		return fmt.Errorf("%w: rotary embeddings over %d of %d head dimensions (want an even count, at most all)", ErrFormat, c.RopeDims, c.HeadDim())
	}
	if c.RopeOriginalContext < 0 || c.RopeOriginalContext > maxDimension {
		return fmt.Errorf("%w: rope original context %d out of range", ErrFormat, c.RopeOriginalContext)
	}
	for _, f := range []struct {
		name string
		v    float32
	}{{"rope attention factor", c.RopeAttnFactor}, {"embedding scale", c.EmbeddingScale},
		{"logit scale", c.LogitScale}, {"final soft-cap", c.FinalSoftCap}} {
		if math.IsNaN(float64(f.v)) || math.IsInf(float64(f.v), 0) || f.v < 0 {
			return fmt.Errorf("%w: %s %v must be finite and not negative (0: none)", ErrFormat, f.name, f.v)
		}
	}
	if !(c.RopeTheta > 0) || math.IsInf(float64(c.RopeTheta), 0) {
		return fmt.Errorf("%w: rope theta %v must be positive and finite", ErrFormat, c.RopeTheta)
	}
	if !(c.RopeScale > 0) || math.IsInf(float64(c.RopeScale), 0) {
		return fmt.Errorf("%w: rope scale %v must be positive and finite", ErrFormat, c.RopeScale)
	}
	if !(c.NormEps > 0) || c.NormEps > 1 {
		return fmt.Errorf("%w: norm epsilon %v must be in (0, 1]", ErrFormat, c.NormEps)
	}
	return c.validateLayers()
}
