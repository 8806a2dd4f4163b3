package engine

import (
	"fmt"
	"math"
)

// A model's layers as values. Each layer has a recipe, a LayerSpec: how it
// mixes positions (its kind), where it normalises, its attention's
// variant, its feed-forward and its scales. The forward pass asks the
// recipe of the layer it computes; it never asks the family. A family's
// table (arch.go) gives the recipe its layers share, and what the file's
// keys say of each layer (a sliding window on some, no rotation on
// others, the multipliers) is set layer by layer when the file is read
// (layerSpecs). The zero LayerSpec is the llama family's layer.

// LayerKind is how a layer mixes the positions of a sequence: attention
// over the KV cache, or a recurrent mixer that keeps a fixed-size state
// per session instead (recurrent.go). Every kind is followed by the
// layer's feed-forward network.
type LayerKind uint8

const (
	// LayerAttention is softmax attention over the layer's cached keys
	// and values (AttentionSpec), then a feed-forward network (FFN).
	LayerAttention LayerKind = iota
	// LayerShortConv is LFM2's gated short convolution (shortconv.go):
	// in_proj to b, c and x; b⊙x through a depthwise causal convolution
	// over the latest positions; c⊙ that; out_proj. Its state is the
	// convolution's last inputs.
	LayerShortConv
	// LayerDeltaNet is Qwen3.5's Gated DeltaNet, a linear attention whose
	// state is a matrix per head, after a short causal convolution.
	LayerDeltaNet
	// LayerMamba2 is Granite 4's Mamba-2 selective state-space layer: a
	// causal convolution, then the SSM scan over a matrix state per head.
	LayerMamba2
)

// Recurrent reports whether a layer of kind k keeps a fixed-size state
// per session (recurrent.go) rather than keys and values in the KV cache.
func (k LayerKind) Recurrent() bool { return k != LayerAttention }

// Norms says where a layer normalises the residual stream x around each
// of its sub-layers f (attention, then the feed-forward).
type Norms uint8

const (
	// NormsPre is x + f(RMSNorm(x)): the llama family.
	NormsPre Norms = iota
	// NormsPost is x + RMSNorm(f(x)): olmo2, whose sub-layers read the
	// residual stream as it is (ggml's RMSNorm arithmetic).
	NormsPost
	// NormsPreAndPost is x + RMSNorm(f(RMSNorm(x))): gemma.
	NormsPreAndPost
	// NormsResidual is LayerNorm(x + f(x)), with the norm's bias: the
	// encoders (encoder.go).
	NormsResidual
)

// pre reports whether a sub-layer's input is normalised.
func (n Norms) pre() bool { return n == NormsPre || n == NormsPreAndPost }

// post reports whether a sub-layer's output is normalised before it is
// added to the residual stream.
func (n Norms) post() bool { return n == NormsPost || n == NormsPreAndPost }

// QKNorm says whether a layer normalises its queries and keys (RMSNorm,
// ggml's arithmetic) before it rotates them.
type QKNorm uint8

const (
	QKNormNone  QKNorm = iota // not normalised
	QKNormHeads               // each query and key head with the same weights (qwen3, gemma3)
	QKNormAll                 // all the queries at once, and the whole key (olmo2)
)

// FFN is a layer's feed-forward network.
type FFN uint8

const (
	// FFNSwiGLU is down(silu(gate) ⊙ up): the llama family.
	FFNSwiGLU FFN = iota
	// FFNGeGLU is down(gelu(gate) ⊙ up), GELU's tanh approximation as
	// ggml computes it (gelu.go): gemma.
	FFNGeGLU
	// FFNGELU is down(gelu(up + bias)), without a gate: bert.
	FFNGELU
	// FFNMoE is a mixture of experts (moe.go): a router picks each
	// token's MoESpec.Used experts of MoESpec.Experts, each a gated
	// feed-forward of its own, and sums their outputs weighted as the
	// router says, beside a shared expert where MoESpec.Shared says.
	FFNMoE
	// FFNSwiGLUOAI is gpt-oss's experts' gated unit, a clamped SwiGLU
	// (swiglu_oai.go): an activation of a mixture of experts
	// (MoESpec.Activation), not a layer's feed-forward.
	FFNSwiGLUOAI
)

// AttentionSpec is a layer's attention. The zero value attends to every
// earlier position, rotates q and k by the model's rotary embeddings and
// scales the scores by 1/√headDim.
type AttentionSpec struct {
	// Window is how many positions a query attends to, its own included:
	// pos-Window+1..pos (llama.cpp's n_swa); the layer's KV cache holds
	// only those. 0: every position.
	Window int `json:"window,omitempty"`
	// NoPE says that q and k are not rotated (no positional embedding):
	// smollm3's every 4th layer, every layer of a Granite file whose
	// rope.scaling.finetuned is false, bert's (its positions are learned).
	NoPE bool `json:"nope,omitempty"`
	// RopeTheta and RopeScale are the layer's rotary base and linear
	// position scaling where they are not the model's (Config.RopeTheta,
	// Config.RopeScale): gemma3's sliding layers rotate with a base of
	// 10000, unscaled. 0: the model's.
	RopeTheta float32 `json:"rope_freq_base,omitempty"`
	RopeScale float32 `json:"rope_scale,omitempty"`
	// Scale multiplies the scores q·k (granite's attention.scale) or, with
	// ScaleQueries, the rotated queries, which leaves the scores unscaled
	// (gemma: 1/√query_pre_attn_scalar). 0: 1/√headDim on the scores.
	Scale        float32 `json:"scale,omitempty"`
	ScaleQueries bool    `json:"scale_queries,omitempty"`
	// SoftCap caps the scores, cap·tanh(score/cap), before the softmax
	// (gemma2). 0: not capped.
	SoftCap float32 `json:"softcap,omitempty"`
	// Sinks says that each head has an attention sink (gpt-oss): a learned
	// logit (blk.N.attn_sinks.weight, one per head) that joins the
	// softmax's denominator as a position no value belongs to, so a head
	// may give its positions less than all of its weight (sinks.go).
	Sinks bool `json:"sinks,omitempty"`
	// Gated says that the query projection gives each head's queries
	// followed by its output gate (2·headDim rows a head), and that the
	// heads' output is multiplied by σ(gate) before Wo (Qwen3.5).
	Gated bool `json:"gated,omitempty"`
	// NoRopeFactors says that the layer rotates without the file's
	// rope_freqs factors, which only the model's other layers use
	// (gemma4's sliding layers).
	NoRopeFactors bool `json:"no_rope_factors,omitempty"`
	// ValueNorm normalises each value head (RMSNorm without weights,
	// ggml's arithmetic) before it is cached (gemma4).
	ValueNorm bool `json:"value_norm,omitempty"`
	// SharedKV says that the layer computes no keys or values of its own
	// and keeps no cache: it attends over layer KVLayer's, an earlier
	// layer of the same window and head shape (gemma4's last layers).
	SharedKV bool `json:"shared_kv,omitempty"`
	KVLayer  int  `json:"kv_layer,omitempty"`
}

// LayerSpec is one layer's recipe. The zero value is the llama family's
// layer: pre-norms, attention over every position with rotary
// embeddings, SwiGLU.
type LayerSpec struct {
	Kind      LayerKind     `json:"kind"`
	Norms     Norms         `json:"norms"`
	QKNorm    QKNorm        `json:"qk_norm,omitempty"`
	Attention AttentionSpec `json:"attention"`
	FFN       FFN           `json:"ffn"`
	// ResidualScale multiplies each sub-layer's output before it is added
	// to the residual stream (granite). 0: none.
	ResidualScale float32 `json:"residual_scale,omitempty"`
	// HeadDim, KVHeads and HiddenDim are the layer's head width, key/value
	// heads and feed-forward width where they are not the model's
	// (Config.HeadDim, KVHeads, HiddenDim): gemma4's sliding layers have
	// narrower heads than its full ones, and its layers that share a
	// cache may have a wider feed-forward. 0: the model's.
	HeadDim   int `json:"head_dim,omitempty"`
	KVHeads   int `json:"kv_heads,omitempty"`
	HiddenDim int `json:"hidden_dim,omitempty"`
	// PerLayerInput adds the layer's slice of the per-layer embeddings
	// to the residual stream after the feed-forward (gemma4:
	// per_layer.go), then scales the stream by the layer's output scale
	// where the file has one.
	PerLayerInput bool `json:"per_layer_input,omitempty"`
	// AltUp says that the residual stream is Config.AltUp streams
	// (gemma3n: altup.go): the layer predicts them before attention,
	// which, beside a LAuReL branch, and the feed-forward compute on the
	// active one, and corrects them after, adding its per-layer
	// embedding to the others.
	AltUp bool `json:"altup,omitempty"`
	// GateSparsity, when not 0, keeps only what of each token's
	// feed-forward gate exceeds its mean by GateSparsity standard
	// deviations before GELU (gemma3n's first layers: a Gaussian top-k).
	GateSparsity float32 `json:"gate_sparsity,omitempty"`
	// MoE is the mixture of experts of a layer whose FFN is FFNMoE; zero
	// otherwise.
	MoE MoESpec `json:"moe,omitzero"`
}

// Layer is layer l's recipe: LayerSpecs[l], or the llama family's layer
// when the config lists none (a llama2.c checkpoint).
func (c Config) Layer(l int) LayerSpec {
	if l < len(c.LayerSpecs) {
		return c.LayerSpecs[l]
	}
	return LayerSpec{}
}

// scoreScale is what attention multiplies layer a's scores by: its Scale,
// 1/√headDim, or 1 when its queries were scaled instead.
func (c Config) scoreScale(a AttentionSpec) float32 {
	switch {
	case a.ScaleQueries:
		return 1
	case a.Scale != 0:
		return a.Scale
	}
	return float32(1 / math.Sqrt(float64(c.HeadDim())))
}

// rotation is the rotary base and linear scaling layer a rotates by.
func (c Config) rotation(a AttentionSpec) (theta, scale float32) {
	theta, scale = c.RopeTheta, c.RopeScale
	if a.RopeTheta != 0 {
		theta = a.RopeTheta
	}
	if a.RopeScale != 0 {
		scale = a.RopeScale
	}
	return theta, scale
}

// layerKeys are what a family's file says of its layers beyond its
// family's recipe, from which each layer's is made (layerSpecs).
type layerKeys struct {
	// window and windowPeriod are llama.cpp's sliding window and pattern:
	// of every windowPeriod layers the last attends to every position and
	// the others to the latest window (gemma2: 2, gemma3: 6; 0: every
	// layer slides); window 0: none slides. The sliding layers rotate with
	// windowTheta and windowScale (gemma3's: 10000, unscaled).
	window, windowPeriod     int
	windowTheta, windowScale float32
	// noRopeInterval, when > 0, leaves layer l unrotated where (l+1) is a
	// multiple of it (smollm3: 4; 1: no layer rotates).
	noRopeInterval int
	// attnScale, residualScale and softCap are every layer's attention
	// scale, residual scale and score soft-cap (AttentionSpec, LayerSpec).
	attnScale, residualScale, softCap float32
	// kinds, when set, is each layer's kind as the file says (a hybrid's
	// recurrent layers beside its attention layers); nil: the family's.
	kinds []LayerKind
	// each, when set, finishes layer l's recipe with what the family's
	// file says of each layer beyond the keys above (gemma4: which
	// layers slide, their head shapes, the shared caches).
	each func(l int, s *LayerSpec)
	// denseLead, when > 0, is how many first layers have a dense
	// feed-forward (SwiGLU) where the family's layers have a mixture of
	// experts (lfm2moe's leading_dense_block_count).
	denseLead int
}

// validate checks the sliding layers' rotations, which a layer's recipe
// holds only where they are not the model's.
func (k layerKeys) validate() error {
	if k.window > 0 && !(validRope(k.windowTheta) && validRope(k.windowScale)) {
		return fmt.Errorf("%w: the sliding layers' rope base %v and scale %v must be positive and finite", ErrFormat, k.windowTheta, k.windowScale)
	}
	return nil
}

// validRope reports whether v can be a rotary base or scale.
func validRope(v float32) bool { return v > 0 && !math.IsInf(float64(v), 0) }

// layerSpecs makes each layer's recipe: the family's, with what the file
// says of the layer (k).
func (a *architecture) layerSpecs(c Config, k layerKeys) []LayerSpec {
	specs := make([]LayerSpec, c.Layers)
	for l := range specs {
		s := a.layer
		if l < len(k.kinds) {
			s.Kind = k.kinds[l]
		}
		s.ResidualScale = k.residualScale
		s.Attention.Scale, s.Attention.SoftCap = k.attnScale, k.softCap
		if k.noRopeInterval > 0 && (l+1)%k.noRopeInterval == 0 {
			s.Attention.NoPE = true
		}
		if k.window > 0 && (k.windowPeriod == 0 || l%k.windowPeriod < k.windowPeriod-1) {
			s.Attention.Window = k.window
			if k.windowTheta != c.RopeTheta {
				s.Attention.RopeTheta = k.windowTheta
			}
			if k.windowScale != c.RopeScale {
				s.Attention.RopeScale = k.windowScale
			}
		}
		if k.each != nil {
			k.each(l, &s)
		}
		if l < k.denseLead {
			s.FFN, s.MoE = FFNSwiGLU, MoESpec{}
		}
		c.moeLayer(&s)
		specs[l] = s
	}
	return specs
}

// validateLayers checks each layer's recipe.
func (c Config) validateLayers() error {
	if c.LayerSpecs != nil && len(c.LayerSpecs) != c.Layers {
		return fmt.Errorf("%w: %d layer recipes for %d layers", ErrFormat, len(c.LayerSpecs), c.Layers)
	}
	for l, s := range c.LayerSpecs {
		a := s.Attention
		switch {
		case !s.Kind.computed():
			return fmt.Errorf("%w: layer %d: kind %s, which this engine does not compute", ErrUnsupported, l, s.Kind)
		case c.validateRecurrent(l) != nil:
			return c.validateRecurrent(l)
		case s.Norms > NormsResidual || s.QKNorm > QKNormAll || s.FFN > FFNMoE:
			return fmt.Errorf("%w: layer %d: norms %d, q/k norm %d or feed-forward %d unknown", ErrUnsupported, l, s.Norms, s.QKNorm, s.FFN)
		case a.Window < 0 || a.Window > maxDimension:
			return fmt.Errorf("%w: layer %d: sliding window %d is out of range (0..%d)", ErrFormat, l, a.Window, maxDimension)
		case !(a.RopeTheta >= 0) || math.IsInf(float64(a.RopeTheta), 0) || !(a.RopeScale >= 0) || math.IsInf(float64(a.RopeScale), 0):
			return fmt.Errorf("%w: layer %d: rope base %v and scale %v must be positive and finite (0: the model's)", ErrFormat, l, a.RopeTheta, a.RopeScale)
		case a.ScaleQueries && !(a.Scale > 0):
			return fmt.Errorf("%w: layer %d: query scale %v must be positive", ErrFormat, l, a.Scale)
		}
		if err := c.validateMoE(l, s); err != nil {
			return err
		}
		for _, f := range []struct {
			name string
			v    float32
		}{{"attention scale", a.Scale}, {"attention soft-cap", a.SoftCap}, {"residual scale", s.ResidualScale}} {
			if !(f.v >= 0) || math.IsInf(float64(f.v), 0) {
				return fmt.Errorf("%w: layer %d: %s %v must be finite and not negative (0: none)", ErrFormat, l, f.name, f.v)
			}
		}
		if err := c.validateLayerShape(l, s); err != nil {
			return err
		}
	}
	return nil
}

// The names of the values, as Info's JSON says them.

var (
	layerKindNames = [...]string{LayerAttention: "attention", LayerShortConv: "shortconv", LayerDeltaNet: "deltanet", LayerMamba2: "mamba2"}
	normsNames     = [...]string{NormsPre: "pre", NormsPost: "post", NormsPreAndPost: "pre+post", NormsResidual: "residual"}
	qkNormNames    = [...]string{QKNormNone: "", QKNormHeads: "heads", QKNormAll: "all"}
	ffnNames       = [...]string{FFNSwiGLU: "swiglu", FFNGeGLU: "geglu", FFNGELU: "gelu", FFNMoE: "moe", FFNSwiGLUOAI: "swiglu_oai"}
)

// name is names[i], or the number where names has none.
func name[T ~uint8](names []string, i T) string {
	if int(i) < len(names) {
		return names[i]
	}
	return fmt.Sprint(uint8(i))
}

// String names the kind: "attention", "shortconv", "deltanet" or "mamba2".
func (k LayerKind) String() string { return name(layerKindNames[:], k) }

// String names the norms: "pre", "post", "pre+post" or "residual".
func (n Norms) String() string { return name(normsNames[:], n) }

// String names the q/k norm: "", "heads" or "all".
func (q QKNorm) String() string { return name(qkNormNames[:], q) }

// String names the feed-forward: "swiglu", "geglu", "gelu" or "moe".
func (f FFN) String() string { return name(ffnNames[:], f) }

// MarshalText is the kind's name.
func (k LayerKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// MarshalText is the norms' name.
func (n Norms) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

// MarshalText is the q/k norm's name.
func (q QKNorm) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// MarshalText is the feed-forward's name.
func (f FFN) MarshalText() ([]byte, error) { return []byte(f.String()), nil }
