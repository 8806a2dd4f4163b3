package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Info describes a model for display (wasmlm info, the JS lm.info, the HTTP
// model list). Field names in JSON are snake_case.
type Info struct {
	Format        Format  `json:"format"`
	Architecture  string  `json:"architecture"`
	VocabSize     int     `json:"vocab_size"`
	ContextLength int     `json:"context_length"`
	Dim           int     `json:"embedding_length"`
	HiddenDim     int     `json:"feed_forward_length"`
	Layers        int     `json:"block_count"`
	Heads         int     `json:"head_count"`
	KVHeads       int     `json:"head_count_kv"`
	HeadDim       int     `json:"key_length"` // the width of one head (Qwen3's is not embedding_length/head_count)
	RopeTheta     float32 `json:"rope_freq_base"`
	NormEps       float32 `json:"rms_norm_eps"`
	// SlidingWindow is the positions a sliding-window layer attends to
	// (gemma2, gemma3: see AttentionSpec.Window); 0 when none slides.
	SlidingWindow int            `json:"sliding_window,omitempty"`
	SharedOutput  bool           `json:"shared_output"`
	Parameters    int64          `json:"parameters"`
	TensorTypes   map[string]int `json:"tensor_types"`
	// TensorBytes is the bytes the tensors of each type hold (vectors as
	// the float32 they are held as): a file's weight type is the one that
	// holds the most, where TensorTypes' counts favour the F32 biases and
	// norms (a BERT layer has more of them than matrices).
	TensorBytes     map[string]int64 `json:"tensor_bytes"`
	FileSize        int              `json:"file_size"`
	BOS             int              `json:"bos_token_id"`
	EOS             int              `json:"eos_token_id"`
	Metadata        map[string]any   `json:"metadata,omitempty"`
	TokenizerFamily string           `json:"tokenizer"` // "llama" (SentencePiece) or "gpt2" (byte-level BPE): GGUF's tokenizer.ggml.model

	// LayerSpecs is each layer's recipe (see LayerSpec).
	LayerSpecs []LayerSpec `json:"layers"`

	// What some families' files say beyond the llama family's keys (see
	// Config), and a summary of their layers' recipes; zero, and left out
	// of JSON, where a model says none of it.
	RopeDims            int     `json:"rope_dimension_count,omitempty"`         // the rotated dimensions of a head, when fewer than key_length (phi3's partial rotary)
	RopeFactors         string  `json:"rope_factors,omitempty"`                 // "long/short" (LongRoPE: rope_factors_long/short) or "freqs" (rope_freqs)
	RopeAttnFactor      float32 `json:"rope_attn_factor,omitempty"`             // rope.scaling.attn_factor
	RopeOriginalContext int     `json:"rope_original_context_length,omitempty"` // above it a session rotates by the long factors
	NoRopeInterval      int     `json:"no_rope_interval,omitempty"`             // every n-th layer has no rotary embeddings (smollm3: 4; 1: none has)
	EmbeddingScale      float32 `json:"embedding_scale,omitempty"`              // granite's multipliers (the first also gemma's √dim)
	AttentionScale      float32 `json:"attention_scale,omitempty"`
	ResidualScale       float32 `json:"residual_scale,omitempty"`
	LogitScale          float32 `json:"logit_scale,omitempty"`
	SlidingLayers       int     `json:"sliding_layers,omitempty"`         // how many layers attend to SlidingWindow positions (Gemma-3-1B: 22 of 26)
	SlidingPattern      int     `json:"sliding_window_pattern,omitempty"` // of every n layers the last attends to all positions, the others slide (gemma2: 2, gemma3: 6)
	RopeFreqBaseSWA     float32 `json:"rope_freq_base_swa,omitempty"`     // the sliding layers' rope base, where it is not rope_freq_base (gemma3: 10000)
	QKNorm              string  `json:"qk_norm,omitempty"`                // "heads": each query and key head is RMS-normalised (qwen3, gemma3); "all": all the queries and the whole key at once (olmo2)
	QueryScale          float32 `json:"query_scale,omitempty"`            // gemma: the queries' scale (1/√query_pre_attn_scalar, as llama.cpp derives it)
	AttnSoftCap         float32 `json:"attn_softcap,omitempty"`           // gemma2: attention scores soft-capped at this
	FinalSoftCap        float32 `json:"final_softcap,omitempty"`          // gemma2 (gemma3 when its file says): logits soft-capped at this
	RopeScaling         string  `json:"rope_scaling,omitempty"`           // "linear" or "yarn" (rope.scaling.type; yarn.go), "" for none
	RopeScalingFactor   float32 `json:"rope_scaling_factor,omitempty"`    // rope.scaling.factor: linear's position divisor, YaRN's factor
	// A hybrid model's recurrent layers (recurrent.go): the positions its
	// short convolutions span (lfm2's shortconv.l_cache), and the bytes of
	// a session's recurrent state (Config.RecurrentStateBytes).
	ShortConvKernel     int   `json:"short_conv_kernel,omitempty"`
	RecurrentStateBytes int64 `json:"recurrent_state_bytes,omitempty"`
	// SSM is the shape of the recurrent layers the ssm.* keys describe
	// (qwen35's Gated DeltaNet layers).
	SSM SSMShape `json:"ssm,omitzero"`

	// A mixture of experts' (moe.go): how many experts each layer has,
	// how many a token takes, one expert's and the shared expert's widths.
	Experts         int `json:"expert_count,omitempty"`
	ExpertsUsed     int `json:"expert_used_count,omitempty"`
	ExpertHiddenDim int `json:"expert_feed_forward_length,omitempty"`
	SharedHiddenDim int `json:"expert_shared_feed_forward_length,omitempty"`
	// What the model does besides generating: Embed's pooling (mean,
	// cls, last, rank), and for an encoder (which does not generate) its
	// token types and its classification head's outputs (a reranker's).
	Pooling    string `json:"pooling"`
	Generates  bool   `json:"generates"`
	Reranks    bool   `json:"reranks,omitempty"`
	TokenTypes int    `json:"token_types,omitempty"`
	Classes    int    `json:"classes,omitempty"`
	// SplitError says why the model cannot be split across workers (its
	// family's layers need every head at once: olmo2), "" when it can.
	SplitError string `json:"split_error,omitempty"`
}

// familyInfo fills in what the model's family a adds: rope factors says
// which frequency factors it has ("" for none).
func (info *Info) familyInfo(a *architecture, c Config, ropeFactors string) {
	info.SplitError = a.noSplit
	info.Experts, info.ExpertsUsed, info.ExpertHiddenDim, info.SharedHiddenDim = c.Experts, c.ExpertsUsed, c.ExpertHiddenDim, c.SharedHiddenDim
	info.RopeDims = c.RopeDims
	info.RopeFactors, info.RopeAttnFactor, info.RopeOriginalContext = ropeFactors, c.RopeAttnFactor, c.RopeOriginalContext
	info.EmbeddingScale, info.LogitScale, info.FinalSoftCap = c.EmbeddingScale, c.LogitScale, c.FinalSoftCap
	switch {
	case c.RopeYaRN:
		info.RopeScaling, info.RopeScalingFactor = "yarn", c.RopeScale
	case c.RopeScale != 1 && c.RopeScale != 0:
		info.RopeScaling, info.RopeScalingFactor = "linear", c.RopeScale
	}
	info.ShortConvKernel, info.RecurrentStateBytes, info.SSM = c.ShortConvKernel, c.RecurrentStateBytes(), c.SSM
	info.LayerSpecs = make([]LayerSpec, c.Layers)
	for l := range info.LayerSpecs {
		info.LayerSpecs[l] = c.Layer(l)
	}
	info.layerSummary(c)
}

// layerSummary sets the fields that say in a number what the layers'
// recipes say layer by layer (the first layer's values, the others'
// being the same in every family): the scales and soft-cap of the
// attention, the q/k norm, the layers without rotations and the sliding
// ones.
func (info *Info) layerSummary(c Config) {
	first := c.Layer(0)
	a := first.Attention
	if a.ScaleQueries {
		info.QueryScale = a.Scale
	} else {
		info.AttentionScale = a.Scale
	}
	info.AttnSoftCap, info.ResidualScale, info.QKNorm = a.SoftCap, first.ResidualScale, first.QKNorm.String()
	// no_rope_interval: n where layers n-1, 2n-1, … alone are unrotated.
	for l := range c.Layers {
		if c.Layer(l).Attention.NoPE {
			info.NoRopeInterval = l + 1
			break
		}
	}
	full := -1 // the first layer that attends to every position
	for l := range c.Layers {
		s := c.Layer(l).Attention
		switch {
		case s.Window == 0 && full < 0:
			full = l
		case s.Window > 0:
			info.SlidingLayers++
			if s.RopeTheta != 0 {
				info.RopeFreqBaseSWA = s.RopeTheta
			}
		}
	}
	if info.SlidingLayers > 0 {
		// of every pattern layers the last attends to all, the others slide
		info.SlidingPattern = full + 1
	}
}

// ropeFactorsName names the frequency factors a model has (see
// Info.RopeFactors).
func ropeFactorsName(freqs, longShort bool) string {
	switch {
	case longShort:
		return "long/short"
	case freqs:
		return "freqs"
	}
	return ""
}

// Info summarises the model. For a part of a split model it counts the
// parameters and tensors the part holds.
func (m *Model) Info() Info {
	c, w := m.config, m.weights
	sp := m.tokenizer.Special()
	info := Info{
		Format: m.format, Architecture: m.arch.name,
		VocabSize: c.VocabSize, ContextLength: c.ContextLength, Dim: c.Dim, HiddenDim: c.HiddenDim,
		Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim(), RopeTheta: c.RopeTheta, NormEps: c.NormEps,
		SlidingWindow: c.slidingWindow(), SharedOutput: w.Output == w.TokenEmbedding, TensorTypes: map[string]int{}, TensorBytes: map[string]int64{},
		FileSize: m.fileSize, BOS: sp.BOS, EOS: sp.EOS, Metadata: m.metadata, TokenizerFamily: m.tokenizerFamily,
	}
	info.whatItDoes(m.arch, c, w.ClsOut != nil)
	info.familyInfo(m.arch, c, ropeFactorsName(w.RopeFreqFactors != nil, w.RopeFactorsLong != nil))
	m.arch.walk(c.Layers, func(t tensorRef) {
		switch {
		case t.isMatrix() && t.name == nameOutput && info.SharedOutput:
			// the embedding, counted once
		case t.isMatrix() && *t.matrixIn(w) != nil:
			mat := *t.matrixIn(w)
			if t.spec.piece == 0 { // a fused tensor is one tensor, its pieces' rows its parameters
				info.TensorTypes[mat.Type.String()]++
			}
			info.Parameters += int64(mat.Rows) * int64(mat.Cols)
			if rowBytes, err := tensor.RowBytes(mat.Type, mat.Cols); err == nil { // a loaded matrix's type is known
				info.TensorBytes[mat.Type.String()] += int64(mat.Rows) * int64(rowBytes)
			}
		case !t.isMatrix() && *t.vectorIn(w) != nil:
			info.TensorTypes["F32"]++ // vectors are held as float32
			info.Parameters += int64(len(*t.vectorIn(w)))
			info.TensorBytes["F32"] += 4 * int64(len(*t.vectorIn(w)))
		}
	})
	return info
}

// wholeParameters is the parameter count of the whole model, as Info
// counts it for a whole model: for a part of a split model, the tensors it
// holds only some rows of are counted whole.
func (m *Model) wholeParameters() int64 {
	if m.part == nil {
		return m.Info().Parameters
	}
	c, w := m.config, m.weights
	var n int64
	m.arch.walk(c.Layers, func(t tensorRef) {
		rows := func(held int) int64 {
			if t.spec.split {
				return int64(c.size(t.spec.rows))
			}
			return int64(held)
		}
		switch {
		case t.isMatrix() && t.name == nameOutput && w.Output == w.TokenEmbedding:
		case t.isMatrix() && *t.matrixIn(w) != nil:
			mat := *t.matrixIn(w)
			n += rows(mat.Rows) * int64(mat.Cols)
		case !t.isMatrix() && *t.vectorIn(w) != nil:
			n += rows(len(*t.vectorIn(w)))
		}
	})
	return n
}

// Fingerprint identifies the model's weights cheaply: FNV-1a over its
// hyper-parameters, every vector, and the first, middle and last row of
// every matrix, in table order. engine/shard stamps each part with its whole
// model's, so that parts cut from different models (or the same file split
// differently) refuse to work together rather than compute nonsense.
func (m *Model) Fingerprint() uint64 {
	h := fnv.New64a()
	m.digest(h)
	return h.Sum64()
}

// Identity names the model a saved session state belongs to
// (Session.SaveState): SHA-256 over the file's size and what Fingerprint
// reads — the hyper-parameters, every layer's recipe, every vector, and
// every matrix's type, shape and first, middle and last rows. It reads
// those few rows, not the whole file (microseconds to a few milliseconds,
// where hashing a 1.1B model's 640 MB would take a second natively and
// several in WebAssembly), and it is the same before and after the first
// session packs the weights in place (Model.WeightsPacked), when the bytes
// are no longer the file's. Two files get the same identity only if they
// have the same size and agree on all of that: a fine-tune, a merged
// adapter or another quantization changes the sampled rows; a file edited
// only in rows it does not read would not be told apart.
func (m *Model) Identity() [32]byte {
	h := sha256.New()
	var size [8]byte
	binary.LittleEndian.PutUint64(size[:], uint64(m.fileSize))
	h.Write([]byte("wasmlm model identity\x00"))
	h.Write(size[:])
	m.digest(h)
	var id [32]byte
	h.Sum(id[:0])
	return id
}

// digest writes what identifies the model's weights to h, in table order:
// the hyper-parameters, every layer's recipe, every vector, and each
// matrix's type, shape and first, middle and last row.
func (m *Model) digest(h io.Writer) {
	c, w := m.config, m.weights
	var b [8]byte
	num := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	for _, v := range [...]int{c.Dim, c.HiddenDim, c.Layers, c.Heads, c.KVHeads, c.VocabSize, c.ContextLength, int(c.RopeStyle), c.HeadDim()} {
		num(uint64(v))
	}
	for _, v := range [...]float32{c.RopeTheta, c.RopeScale, c.NormEps} {
		num(uint64(math.Float32bits(v)))
	}
	// What some families add, when they do (so that the llama family's
	// fingerprints stay as they were): the model's values, then each
	// layer's recipe that is not the llama family's.
	for i, v := range [...]float32{float32(c.RopeDims), c.RopeAttnFactor, float32(c.RopeOriginalContext),
		c.EmbeddingScale, c.LogitScale, c.FinalSoftCap} {
		if v != 0 {
			num(uint64(i)<<32 | uint64(math.Float32bits(v)))
		}
	}
	for l, s := range c.LayerSpecs {
		if s != (LayerSpec{}) {
			fmt.Fprintf(h, "layer %d %+v;", l, s) // every field, each float32 in its shortest exact form
		}
	}
	m.arch.walk(c.Layers, func(t tensorRef) {
		switch {
		case t.isMatrix() && t.name == nameOutput && w.Output == w.TokenEmbedding:
		case t.isMatrix() && *t.matrixIn(w) == nil: // a layer of a kind without it
		case t.isMatrix():
			mat := *t.matrixIn(w)
			num(uint64(mat.Type))
			num(uint64(mat.Rows))
			num(uint64(mat.Cols))
			for _, r := range [...]int{0, mat.Rows / 2, mat.Rows - 1} {
				h.Write(mat.RowData(r))
			}
		default:
			v := *t.vectorIn(w)
			num(uint64(len(v)))
			for _, x := range v {
				binary.LittleEndian.PutUint32(b[:4], math.Float32bits(x))
				h.Write(b[:4])
			}
		}
	})
}
