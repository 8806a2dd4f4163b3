package engine

import (
	"fmt"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// An architecture is one model family as GGUF files describe it, declared
// once: the prefix of its hyper-parameter keys, the keys themselves, the
// recipe of its layers, and every tensor with its shape and where it goes
// in modelWeights. Loading, shape checks, cutting a model into parts
// (Model.Cut), Fingerprint and Info all walk this table; the forward pass
// computes each layer as its recipe (LayerSpec) says. A new family is an
// entry in architectures, and a new kind of step a value of the recipe.
type architecture struct {
	name      string       // general.architecture, and the prefix of the family's keys
	ropeStyle RopeStyle    // which dimensions of a head rotate together
	keys      []configKey  // hyper-parameters, read in order
	tensors   []tensorSpec // global tensors and (name "blk.%d.…") each layer's
	// layer is the recipe the family's layers share, before what the
	// file says of each (layerKeys: a sliding window, no rotation, the
	// multipliers); its norms are those the tensors above hold.
	layer LayerSpec

	// partialRope says that the family may rotate fewer dimensions of a
	// head than it has (rope.dimension_count below the head width), as
	// llama.cpp lets phi3 do; for the others llama.cpp refuses such a
	// file, and so does the engine.
	partialRope bool
	// noRopeInterval is layerKeys.noRopeInterval for a family that fixes
	// it (smollm3: llama.cpp's 4, which the files do not say).
	noRopeInterval int
	// configure reads what a family's file says beyond keys, derives what
	// the family computes from the keys read (gemma's scales), or refuses
	// what the engine does not compute; nil for none. It runs once every
	// key has been read.
	configure func(f *gguf.File, p *hyperParams) error
	// unsupported are tensors ("blk.%d.…": each layer's) that llama.cpp
	// would compute with in this family and the engine does not: a file
	// that has one is refused, naming it, rather than run without it.
	unsupported []string
	// noSplit says why a model of the family cannot be split across
	// workers; "" when it can.
	noSplit string
	// encoder says that the family is an encoder (arch_bert.go): its
	// layers normalise after each sub-layer (LayerNorm with biases), its
	// tokens attend to every other, and it embeds or ranks text rather
	// than generating it (encoder.go).
	encoder bool
}

// architectures maps general.architecture to its table.
var architectures = map[string]*architecture{
	"llama": {name: "llama", ropeStyle: RopeInterleaved, keys: llamaKeys, tensors: llamaTensors(biasOptional, false)},
	"qwen2": {name: "qwen2", ropeStyle: RopeHalves, keys: llamaKeys, tensors: llamaTensors(biasRequired, false)},
	// qwen3 is qwen2 without biases and with an RMSNorm of each query and
	// key head before the rotation; its files say key_length, as its heads
	// are wider than dim/heads.
	"qwen3": {name: "qwen3", ropeStyle: RopeHalves, keys: llamaKeys, tensors: llamaTensors(biasNone, true),
		layer: LayerSpec{QKNorm: QKNormHeads}},
	// The families whose steps differ more have their own files:
	// arch_phi3.go, arch_smollm3.go, arch_olmo2.go, arch_granite.go,
	// arch_gemma.go (gemma2 and gemma3).
	"phi3":    phi3,
	"smollm3": smollm3,
	"olmo2":   olmo2,
	"granite": granite,
	"gemma2":  gemma2,
	"gemma3":  gemma3,
	"gemma4":  gemma4,  // arch_gemma4.go
	"gemma3n": gemma3n, // arch_gemma3n.go: AltUp and LAuReL (altup.go)
	// The hybrids, recurrent layers beside attention (recurrent.go):
	// arch_lfm2.go, arch_lfm2moe.go, arch_qwen35.go, arch_qwen35moe.go.
	"lfm2":      lfm2,
	"lfm2moe":   lfm2moe,
	"qwen35":    qwen35,
	"qwen35moe": qwen35moe,
	// Granite 4's hybrids: Mamba-2 layers beside attention (arch_granitehybrid.go).
	"granitehybrid": granitehybrid,
	// Mixtures of experts (moe.go): arch_qwen3moe.go.
	"qwen3moe": qwen3moe,
	"qwen2moe": qwen2moe, // arch_qwen2moe.go: with a shared expert
	// gpt-oss (arch_gptoss.go): sinks, alternating windows, YaRN, experts.
	"gpt-oss": gptOSS,
	// The encoders, embedding and reranking models (arch_bert.go).
	"bert":       bert,
	"nomic-bert": nomicBert,
}

// The llama family's hyper-parameters: "<arch>.<key>", as llama.cpp's
// converter writes them.
var llamaKeys = []configKey{
	{key: "context_length", int: func(p *hyperParams) *int { return &p.ContextLength }},
	{key: "embedding_length", int: func(p *hyperParams) *int { return &p.Dim }},
	{key: "feed_forward_length", int: func(p *hyperParams) *int { return &p.HiddenDim }},
	{key: "block_count", int: func(p *hyperParams) *int { return &p.Layers }},
	{key: "attention.head_count", int: func(p *hyperParams) *int { return &p.Heads }},
	{key: "attention.head_count_kv", int: func(p *hyperParams) *int { return &p.KVHeads },
		defaultInt: func(c Config) int { return c.Heads }},
	{key: "rope.freq_base", float: func(p *hyperParams) *float32 { return &p.RopeTheta },
		defaultFloat: func(Config) float32 { return 10000 }},
	{key: "attention.layer_norm_rms_epsilon", float: func(p *hyperParams) *float32 { return &p.NormEps },
		defaultFloat: func(Config) float32 { return 1e-5 }},
	{key: "attention.key_length", int: func(p *hyperParams) *int { return &p.KeyLength }, // absent: dim/heads
		defaultInt: func(Config) int { return 0 }},
}

// biasPolicy says whether a member of the llama family has q/k/v biases.
type biasPolicy int

const (
	biasOptional biasPolicy = iota // llama: a file may carry them or not
	biasRequired                   // qwen2
	biasNone                       // qwen3: llama.cpp loads none
)

// llamaTensors is the llama family's tensor table (llama.cpp's
// LLM_TENSOR_NAMES): the q/k/v biases as bias says, and with qkNorm the
// per-head norms of the queries and keys (qwen3).
func llamaTensors(bias biasPolicy, qkNorm bool) []tensorSpec {
	optionalBias := bias == biasOptional
	t := []tensorSpec{
		{name: "token_embd.weight", rows: dimVocab, cols: dimModel, split: true, at: slotTokenEmbedding},
		{name: "output_norm.weight", rows: dimModel, at: slotOutputNorm},
		{name: nameOutput, rows: dimVocab, cols: dimModel, split: true, optional: true, at: slotOutput}, // absent: tied to token_embd
		{name: "rope_freqs.weight", rows: dimRopePairs, optional: true, at: slotRopeFreqFactors},

		{name: "blk.%d.attn_norm.weight", rows: dimModel, at: slotAttnNorm},
		{name: "blk.%d.attn_q.weight", rows: dimQ, cols: dimModel, split: true, at: slotWq},
		{name: "blk.%d.attn_k.weight", rows: dimKV, cols: dimModel, split: true, at: slotWk},
		{name: "blk.%d.attn_v.weight", rows: dimKV, cols: dimModel, split: true, at: slotWv},
	}
	if bias != biasNone {
		t = append(t,
			tensorSpec{name: "blk.%d.attn_q.bias", rows: dimQ, split: true, optional: optionalBias, together: "qkv bias", at: slotBq},
			tensorSpec{name: "blk.%d.attn_k.bias", rows: dimKV, split: true, optional: optionalBias, together: "qkv bias", at: slotBk},
			tensorSpec{name: "blk.%d.attn_v.bias", rows: dimKV, split: true, optional: optionalBias, together: "qkv bias", at: slotBv})
	}
	if qkNorm {
		// One norm serves every head, so each part of a split model holds it whole.
		t = append(t,
			tensorSpec{name: "blk.%d.attn_q_norm.weight", rows: dimHead, at: slotQNorm},
			tensorSpec{name: "blk.%d.attn_k_norm.weight", rows: dimHead, at: slotKNorm})
	}
	return append(t, []tensorSpec{
		// Every part of a split model holds all of Wo (see engine/shard).
		{name: "blk.%d.attn_output.weight", rows: dimModel, cols: dimQ, at: slotWo},
		{name: "blk.%d.ffn_norm.weight", rows: dimModel, at: slotFFNNorm},
		{name: "blk.%d.ffn_gate.weight", rows: dimHidden, cols: dimModel, split: true, at: slotWGate},
		{name: "blk.%d.ffn_up.weight", rows: dimHidden, cols: dimModel, split: true, at: slotWUp},
		{name: "blk.%d.ffn_down.weight", rows: dimModel, cols: dimHidden, split: true, at: slotWDown},
	}...)
}

// nameOutput is the output classifier; a file without it ties the output to
// the token embedding.
const nameOutput = "output.weight"

// configKey is one hyper-parameter: an unsigned integer (int set) or a float
// (float set), held in the Config or in the keys of the layers' recipes.
// Without a default it is required.
type configKey struct {
	key          string // after the architecture's prefix
	int          func(*hyperParams) *int
	float        func(*hyperParams) *float32
	defaultInt   func(Config) int     // the value when absent, from the keys read before
	defaultFloat func(Config) float32 // the value when absent
}

// tensorSpec is one tensor of an architecture: a matrix (rows × cols; in
// GGUF dims [cols, rows]) or a vector (rows elements).
type tensorSpec struct {
	name     string    // GGUF name; "blk.%d." names are one per layer
	rows     dimension // a matrix's rows (its outputs) or a vector's length
	cols     dimension // a matrix's columns (inputs); 0 for a vector, or for a vector the file stores as a matrix (ggml's [cols, rows]) its columns: rows·cols values
	split    bool      // a part of a split model keeps only some of its rows (Axis of rows)
	optional bool
	together string // optional tensors of one layer with the same name here are all present or all absent
	at       slot   // the field of the weights it goes in, a matrix's or a vector's

	// fused, for a matrix that files store fused with others in one
	// tensor (phi3's attn_qkv holds q, k and v; its ffn_up the gate, then
	// up), lists the rows of every piece of that tensor in order, and
	// piece says which this one is: its rows follow the earlier pieces'.
	// Each piece is a view of its rows of the tensor.
	fused []dimension
	piece int

	// kinds, for a layer's tensor, are the kinds of layer that have it
	// (a hybrid's attention layers have q, k and v, its recurrent layers
	// their mixer's tensors); nil: every layer. A layer of another kind
	// must not have it.
	kinds []LayerKind

	// needed, when set, says in which layers of a model of config c the
	// tensor is required; it is optional in the others (gemma4's keys of
	// a layer that shares another's cache, its per-layer embeddings).
	needed func(c Config, l int) bool

	// experts says the tensor is a stack of Experts matrices of rows ×
	// cols each (GGUF dims [cols, rows, experts]: blk.N.ffn_gate_exps),
	// held as one matrix of Experts·rows rows, a view of the file's
	// bytes; each expert's rows are a view of it (moe.go).
	experts bool

	// ffns, for a layer's tensor, are the feed-forwards of the layers
	// that have it (lfm2moe's leading dense layers have ffn_gate, ffn_up
	// and ffn_down, its others a mixture of experts); nil: every layer.
	ffns []FFN

	// stacked says the tensor is a stack of matrices (GGUF dims [cols,
	// rows, n]: gemma3n's altup_proj), held as one matrix of n·rows rows
	// whose rows dimension is the whole stack's.
	stacked bool
}

// inLayer reports whether a layer of recipe s has the tensor.
func (t *tensorSpec) inLayer(s LayerSpec) bool {
	return (t.kinds == nil || slices.Contains(t.kinds, s.Kind)) && (t.ffns == nil || slices.Contains(t.ffns, s.FFN))
}

// perLayer reports whether the spec names one tensor per layer.
func (t *tensorSpec) perLayer() bool { return len(t.name) > 4 && t.name[:4] == "blk." }

// fullName is the GGUF name of the spec's tensor in layer l.
func (t *tensorSpec) fullName(l int) string {
	if t.perLayer() {
		return fmt.Sprintf(t.name, l)
	}
	return t.name
}

// dimension names a size in terms of the hyper-parameters.
type dimension int

// The sizes tensors have. The first five are also the axes along which a
// model splits (see Axis).
const (
	dimNone            dimension = iota
	dimVocab                     // VocabSize
	dimQ                         // Heads · HeadDim (QDim; Dim unless the file says key_length)
	dimKV                        // KVHeads · HeadDim
	dimHidden                    // HiddenDim
	dimModel                     // Dim, the residual stream
	dimRopePairs                 // RotaryDims / 2
	dimHead                      // HeadDim
	dimContext                   // ContextLength: bert's learned positions
	dimTokenTypes                // TokenTypes
	dimClasses                   // Classes: a classification head's outputs
	dimShortConvKernel           // ShortConvKernel: a short convolution's positions
	dimShortConvIn               // 3·Dim: a short convolution's b, c and x
	dimHeads                     // Heads: one value per query head (attention sinks)
	dimQGate                     // 2 · QDim: gated attention's queries and output gates (qwen35)
	dimSSMConv                   // a Gated DeltaNet layer's convolution channels: q, k and v (deltanet.go)
	dimSSMInner                  // SSM.InnerSize: its values' width
	dimSSMHeads                  // SSM.TimeStepRank: its value heads
	dimSSMState                  // SSM.StateSize: a head's width
	dimSSMKernel                 // SSM.ConvKernel: its convolution's positions
	dimPerLayer                  // PerLayerDim: one layer's slice of the per-layer embeddings
	dimPerLayers                 // PerLayerDim · Layers: every layer's
	dimScalar                    // 1: a layer's output scale
	// A Mamba-2 layer's sizes beside the ssm.* keys' (mamba2.go).
	dimMamba2InProj     // its input projection's outputs: z, x, B, C and dt
	dimMamba2Conv       // its convolution's channels: x, B and C
	dimMamba2Groups     // SSM.GroupCount: the groups of B and C, and of the gated norm
	dimMamba2GroupWidth // the gated norm's group width: inner / groups
	dimExperts          // Experts: a router's outputs
	dimExpertFF         // ExpertHiddenDim: one expert's inner width
	dimSharedFF         // SharedHiddenDim: the shared expert's inner width
	dimExpertGateUp     // 2 · ExpertHiddenDim: one expert's gate and up, stacked (gemma4)
	dimAltUp            // AltUp: the streams of gemma3n's residual stream (altup.go)
	dimAltUpCoefs       // AltUp²: a token's prediction coefficients
	dimAltUpProj        // (AltUp − 1) · Dim: the streams but the active one, stacked
	dimLaurelRank       // LaurelRank: LAuReL's low rank
)

// size is d's value under c.
func (c Config) size(d dimension) int {
	switch d {
	case dimVocab:
		return c.VocabSize
	case dimQ:
		return c.QDim()
	case dimKV:
		return c.KVDim()
	case dimHidden:
		return c.HiddenDim
	case dimModel:
		return c.Dim
	case dimRopePairs:
		return c.RotaryDims() / 2
	case dimHead:
		return c.HeadDim()
	case dimContext:
		return c.ContextLength
	case dimTokenTypes:
		return c.TokenTypes
	case dimClasses:
		return c.Classes
	case dimShortConvKernel:
		return c.ShortConvKernel
	case dimShortConvIn:
		return 3 * c.Dim
	case dimHeads:
		return c.Heads
	case dimQGate:
		return 2 * c.QDim()
	case dimSSMConv:
		return c.deltaNet().convDim()
	case dimSSMInner:
		return c.SSM.InnerSize
	case dimSSMHeads:
		return c.SSM.TimeStepRank
	case dimSSMState:
		return c.SSM.StateSize
	case dimSSMKernel:
		return c.SSM.ConvKernel
	case dimPerLayer:
		return c.PerLayerDim
	case dimPerLayers:
		return c.PerLayerDim * c.Layers
	case dimScalar:
		return 1
	case dimExperts:
		return c.Experts
	case dimExpertFF:
		return c.ExpertHiddenDim
	case dimSharedFF:
		return c.SharedHiddenDim
	case dimExpertGateUp:
		return 2 * c.ExpertHiddenDim
	case dimAltUp:
		return c.AltUp
	case dimAltUpCoefs:
		return c.AltUp * c.AltUp
	case dimAltUpProj:
		return max(c.AltUp-1, 0) * c.Dim
	case dimLaurelRank:
		return c.LaurelRank
	}
	if d >= dimMamba2InProj && d <= dimMamba2GroupWidth {
		return c.mamba2().size(d)
	}
	return 0
}

// tensorRef is one tensor of a model: its spec, its GGUF name, and its layer.
type tensorRef struct {
	spec  *tensorSpec
	name  string
	layer int
}

// isMatrix reports whether the tensor is a matrix (else a vector).
func (t tensorRef) isMatrix() bool { return t.spec.at.isMatrix() }

// matrixIn is where the tensor, a matrix, is held in w.
func (t tensorRef) matrixIn(w *modelWeights) **tensor.Matrix { return w.matrixAt(t.spec.at, t.layer) }

// vectorIn is where the tensor, a vector, is held in w.
func (t tensorRef) vectorIn(w *modelWeights) *[]float32 { return w.vectorAt(t.spec.at, t.layer) }

// walk calls fn for every tensor of the table for a model of the given
// number of layers, in table order: the globals, then layer by layer.
func (a *architecture) walk(layers int, fn func(tensorRef)) {
	for i := range a.tensors {
		if t := &a.tensors[i]; !t.perLayer() {
			fn(tensorRef{spec: t, name: t.name})
		}
	}
	for l := range layers {
		for i := range a.tensors {
			if t := &a.tensors[i]; t.perLayer() {
				fn(tensorRef{spec: t, name: t.fullName(l), layer: l})
			}
		}
	}
}

// pieceRows is where a fused tensor's piece t lies in it, in a model of
// config c or, with part, in a part of a split model (which holds its rows
// of each piece, in order: every piece is split): rows [lo, lo+rows) of
// total.
func (t *tensorSpec) pieceRows(c Config, part *Part) (lo, rows, total int) {
	for i, d := range t.fused {
		n := c.size(d)
		if part != nil {
			n = part.Rows(Axis(d)).Len()
		}
		switch {
		case i < t.piece:
			lo += n
		case i == t.piece:
			rows = n
		}
		total += n
	}
	return lo, rows, total
}

// pieceOf is piece t of whole, the fused tensor name, as a view of its rows.
func (t *tensorSpec) pieceOf(name string, whole *tensor.Matrix, c Config, part *Part) (*tensor.Matrix, error) {
	lo, rows, total := t.pieceRows(c, part)
	if whole.Rows != total {
		return nil, fmt.Errorf("%w: tensor %s is %d×%d, want %d×%d", ErrFormat, name, whole.Rows, whole.Cols, total, c.size(t.cols))
	}
	m, err := whole.Slice(lo, lo+rows)
	if err != nil {
		return nil, fmt.Errorf("%w: tensor %s: %w", ErrFormat, name, err)
	}
	return m, nil
}

// has reports whether the table lists a tensor of that name.
func (a *architecture) has(name string) bool {
	for i := range a.tensors {
		if a.tensors[i].name == name {
			return true
		}
	}
	return false
}
