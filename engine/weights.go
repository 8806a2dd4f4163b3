package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// modelWeights are a model's parameters. Matrices are (rows = outputs, cols =
// inputs) views into the model bytes; vectors are float32 views where the file
// stores float32, else decoded once at load (they are small). The
// architecture's table (arch.go) says which tensor goes where.
type modelWeights struct {
	TokenEmbedding *tensor.Matrix // (vocab, dim)
	Layers         []layerWeights
	OutputNorm     []float32      // (dim)
	Output         *tensor.Matrix // (vocab, dim); the embedding itself when shared
	// RopeFreqFactors, when present, divide each rotary pair's frequency
	// (headDim/2 values; llama-3.1-style rope scaling stores them as rope_freqs.weight).
	RopeFreqFactors []float32
	// RopeFactorsLong and RopeFactorsShort are LongRoPE's frequency
	// factors (phi3: rope_factors_long/short.weight, rotaryDims/2 values
	// each), for a session whose context exceeds the original training
	// context and for one whose does not (ropeFactors chooses).
	RopeFactorsLong, RopeFactorsShort []float32

	// The encoders' (arch_bert.go): learned positions (bert) and token
	// types, read row by row as the token embedding is; the LayerNorm of
	// the summed embeddings; and a reranker's classification head: a
	// dense layer (Cls, tanh) then the scores (ClsOut), each with a bias.
	PositionEmbedding, TokenTypes *tensor.Matrix // (context, dim), (token types, dim)
	EmbedNorm, EmbedNormBias      []float32      // (dim)
	Cls, ClsOut                   *tensor.Matrix // (dim, dim), (classes, dim)
	ClsBias, ClsOutBias           []float32      // (dim), (classes)

	// Gemma4's per-layer embeddings (per_layer.go): a row of every
	// layer's slices for each token, read row by row as the token
	// embedding is; the projection of the scaled token embedding to
	// every layer's slices; and the RMSNorm of each projected slice.
	PerLayerTokenEmbedding *tensor.Matrix // (vocab, layers·perLayerDim)
	PerLayerModelProj      *tensor.Matrix // (layers·perLayerDim, dim)
	PerLayerProjNorm       []float32      // (perLayerDim)

	// gemma3n's AltUp (altup.go): the projections of the scaled token
	// embedding to the other streams, and of the other streams back at
	// the end, each a stack of AltUp−1 matrices of dim × dim.
	AltUpProj, AltUpUnembdProj *tensor.Matrix // ((altUp−1)·dim, dim)

	packOnce sync.Once   // pack
	packed   atomic.Bool // some matrices are packed (tensor.Pack)
	packErr  error       // why pack could not view the packed experts (none can happen: see packsExperts)

	nonFinite nonFiniteScan // the matrices that hold a NaN or an infinity, once a forward pass met one
}

// pack packs the matrices the SIMD kernels read faster packed
// (tensor.Pack), once: every matrix of the layers and a separate output,
// not the token embedding (read row by row, and the output when tied). It
// reorders the model's bytes in place, so a model is cut into parts, or
// its file into shards, before: Cut refuses afterwards (WeightsPacked).
// Without the SIMD kernels it does nothing. It makes the experts' views
// again (viewExperts), of the packed stacks.
func (w *modelWeights) pack(a *architecture, layers int) error {
	w.packOnce.Do(func() {
		a.walk(layers, func(t tensorRef) {
			if !t.isMatrix() {
				return
			}
			m := *t.matrixIn(w)
			if m == nil || m == w.TokenEmbedding || m == w.PositionEmbedding || m == w.TokenTypes || m == w.PerLayerTokenEmbedding || m == w.AltUpUnembdProj ||
				t.spec.experts && !w.packsExperts(t, m) {
				return
			}
			if tensor.Pack(m) {
				w.packed.Store(true)
			}
		})
		// The experts' views, of the packed stacks now: they cut along
		// whole groups of packed rows (packsExperts).
		w.packErr = w.viewExperts()
	})
	return w.packErr
}

// layerWeights are one transformer block's parameters.
type layerWeights struct {
	AttnNorm []float32      // (dim); nil where the family has no pre-norms (olmo2)
	Wq       *tensor.Matrix // (heads·headDim, dim): query projection
	Wk       *tensor.Matrix // (kvDim, dim)
	Wv       *tensor.Matrix // (kvDim, dim)
	Wo       *tensor.Matrix // (dim, heads·headDim): attention output projection
	Bq       []float32      // (heads·headDim) or nil: query bias (qwen2)
	Bk       []float32      // (kvDim) or nil
	Bv       []float32      // (kvDim) or nil
	QNorm    []float32      // (headDim) or nil: RMSNorm weights of each query head (qwen3, gemma3); (heads·headDim): of all the queries at once (olmo2)
	KNorm    []float32      // (headDim) or nil: of each key head; (kvDim): of the whole key (olmo2)
	FFNNorm  []float32      // (dim); nil where the family has no pre-norms (olmo2)
	// AttnPostNorm and FFNPostNorm, where the family has them (olmo2,
	// gemma), normalise the attention's and the feed-forward's outputs
	// before they are added to the residual stream.
	AttnPostNorm []float32      // (dim) or nil
	FFNPostNorm  []float32      // (dim) or nil
	WGate        *tensor.Matrix // (hidden, dim): w1 in llama2.c
	WDown        *tensor.Matrix // (dim, hidden): w2
	WUp          *tensor.Matrix // (hidden, dim): w3

	// A short-convolution layer's (shortconv.go), in place of q, k, v and
	// Wo: its depthwise kernel (each channel's weights, oldest position
	// first), its input projection to b, c and x, its output projection.
	ShortConv    *tensor.Matrix // (dim, kernel)
	ShortConvIn  *tensor.Matrix // (3·dim, dim)
	ShortConvOut *tensor.Matrix // (dim, dim)
	// A Gated DeltaNet layer's (deltanet.go), in place of q, k, v and
	// Wo: the projections to q, k and v (before the convolution), to the
	// output gate z, to β and α (one per value head); the convolution
	// (each channel's weights, oldest position first); the dt bias and A
	// (one per value head); the output's RMSNorm weight (every head's);
	// the output projection.
	SSMQKV    *tensor.Matrix // (2·keyDim + valueDim, dim)
	SSMGate   *tensor.Matrix // (valueDim, dim)
	SSMConv   *tensor.Matrix // (2·keyDim + valueDim, kernel)
	SSMBeta   *tensor.Matrix // (vHeads, dim)
	SSMAlpha  *tensor.Matrix // (vHeads, dim)
	SSMOut    *tensor.Matrix // (dim, valueDim)
	SSMDtBias []float32      // (vHeads)
	SSMA      []float32      // (vHeads)
	SSMNorm   []float32      // (head)

	// The encoders' (arch_bert.go): the biases of the attention output
	// and of the feed-forward's products, and the LayerNorms (weight and
	// bias) of the residual stream after attention and after the
	// feed-forward.
	Bo, BUp, BDown                 []float32 // (dim), (hidden), (dim); nil where absent
	AttnOutNorm, AttnOutNormBias   []float32 // (dim)
	LayerOutNorm, LayerOutNormBias []float32 // (dim)

	// Sinks are the attention sinks' logits, one per query head, where the
	// layer's recipe has them (AttentionSpec.Sinks: gpt-oss).
	Sinks []float32 // (heads) or nil
	// Gemma4's (per_layer.go): the gate of the layer's slice of the
	// per-layer embeddings, its projection back to the residual stream
	// and the projection's RMSNorm; and the scale of the layer's output.
	PerLayerGate     *tensor.Matrix // (perLayerDim, dim)
	PerLayerProj     *tensor.Matrix // (dim, perLayerDim)
	PerLayerPostNorm []float32      // (dim)
	OutScale         []float32      // (1) or nil

	// A Mamba-2 layer's (mamba2.go), beside the Gated DeltaNet's SSMConv
	// (its channels x, B and C), SSMDtBias, SSMA, SSMNorm (inner, group
	// after group) and SSMOut (dim, inner): the input projection to z, x,
	// B, C and dt, the convolution's bias and the skip connection's D
	// (one per head).
	SSMIn       *tensor.Matrix // (2·inner + 2·groups·state + heads, dim)
	SSMConvBias []float32      // (channels) or nil
	SSMD        []float32      // (heads)

	// A mixture of experts' (moe.go): the router, each expert's gate, up
	// and down matrices stacked (the file's 3-D tensors, experts' rows
	// one after the other) and the same as one view per expert (experts),
	// and the shared expert's matrices with its gate's weights.
	Router                 *tensor.Matrix // (experts, dim)
	WGateExps, WUpExps     *tensor.Matrix // (experts·expertHidden, dim)
	WDownExps              *tensor.Matrix // (experts·dim, expertHidden)
	experts                []expertWeights
	WGateShared, WUpShared *tensor.Matrix // (sharedHidden, dim)
	WDownShared            *tensor.Matrix // (dim, sharedHidden)
	SharedGate             []float32      // (dim): x·SharedGate gates the shared expert
	// gpt-oss's biases (moe_bias.go): the router's, and each expert's
	// gate, up and down products' (a row per expert, F32).
	RouterBias                    []float32      // (experts) or nil
	BGateExps, BUpExps, BDownExps *tensor.Matrix // (experts, expertHidden), (experts, expertHidden), (experts, dim) or nil
	// ExpertBias, where the layer has one (lfm2moe's exp_probs_b), is
	// added to the router's probabilities to choose the experts, not to
	// weight them.
	ExpertBias []float32 // (experts) or nil
	// gemma4's (moe_dense.go): the experts' gate and up in one stack
	// (each expert's gate rows, then its up rows) in place of WGateExps
	// and WUpExps; each expert's output scale; the router's input scale;
	// the experts' input norm and the two branches' output norms.
	WGateUpExps                             *tensor.Matrix // (experts·2·expertHidden, dim) or nil
	DownExpsScale                           []float32      // (experts) or nil
	RouterScale                             []float32      // (dim) or nil
	FFNPreNorm2, FFNPostNorm1, FFNPostNorm2 []float32      // (dim) or nil

	// gemma3n's (altup.go): the router of the streams (its RMSNorm and
	// projection), the prediction and correction coefficients it
	// weighs, the scale of the corrected active stream; LAuReL's
	// low-rank pair and its RMSNorm.
	AltUpRouter       *tensor.Matrix // (altUp, dim)
	AltUpPredict      *tensor.Matrix // (altUp², altUp)
	AltUpCorrect      *tensor.Matrix // (altUp, altUp)
	AltUpRouterNorm   []float32      // (dim)
	AltUpCorrectScale []float32      // (dim)
	LaurelL           *tensor.Matrix // (laurelRank, dim)
	LaurelR           *tensor.Matrix // (dim, laurelRank)
	LaurelPostNorm    []float32      // (dim)
}

// checkShapes verifies every weight against the config (and, for a part of
// a split model, against the rows the part holds), so that the forward pass
// can index without checks.
func (w *modelWeights) checkShapes(a *architecture, c Config, part *Part) error {
	if len(w.Layers) != c.Layers {
		return fmt.Errorf("%w: %d layers of weights, config says %d", ErrFormat, len(w.Layers), c.Layers)
	}
	var err error
	present := map[string][2]int{} // per layer and group: how many present, how many in all
	a.walk(c.Layers, func(t tensorRef) {
		if err == nil {
			err = w.checkShape(t, c, part)
		}
		if t.spec.together != "" {
			key := fmt.Sprintf("%d %s", t.layer, t.spec.together)
			n := present[key]
			n[1]++
			if (t.isMatrix() && *t.matrixIn(w) != nil) || (!t.isMatrix() && *t.vectorIn(w) != nil) {
				n[0]++
			}
			present[key] = n
		}
	})
	if err != nil {
		return err
	}
	for l := range c.Layers {
		for _, t := range a.tensors {
			if n := present[fmt.Sprintf("%d %s", l, t.together)]; t.together != "" && n[0] != 0 && n[0] != n[1] {
				return fmt.Errorf("%w: layer %d has %d of its %d tensors of the %s", ErrFormat, l, n[0], n[1], t.together)
			}
		}
	}
	return nil
}

// checkShape checks one tensor: present unless optional, and of its shape.
func (w *modelWeights) checkShape(t tensorRef, c Config, part *Part) error {
	if s := c.Layer(t.layer); t.spec.perLayer() && !t.spec.inLayer(s) {
		if (t.isMatrix() && *t.matrixIn(w) != nil) || (!t.isMatrix() && *t.vectorIn(w) != nil) {
			return fmt.Errorf("%w: tensor %s in layer %d, a %s layer with a %s feed-forward, which has none", ErrFormat, t.name, t.layer, s.Kind, s.FFN)
		}
		return nil
	}
	rows, cols := c.sizeIn(t.spec.rows, t.layer), c.sizeIn(t.spec.cols, t.layer)
	if t.spec.experts {
		rows *= c.Experts
	}
	if part != nil && t.spec.split {
		rows = part.Rows(Axis(t.spec.rows)).Len()
	}
	optional := t.spec.optional || (t.spec.needed != nil && !t.spec.needed(c, t.layer))
	if t.isMatrix() {
		m := *t.matrixIn(w)
		switch {
		case m == nil && !optional:
			return fmt.Errorf("%w: missing tensor %s", ErrFormat, t.name)
		case m != nil && (m.Rows != rows || m.Cols != cols):
			return fmt.Errorf("%w: tensor %s is %d×%d, want %d×%d", ErrFormat, t.name, m.Rows, m.Cols, rows, cols)
		}
		return nil
	}
	v := *t.vectorIn(w)
	switch {
	case v == nil && !optional:
		return fmt.Errorf("%w: missing tensor %s", ErrFormat, t.name)
	case v != nil && len(v) != rows*max(cols, 1):
		return fmt.Errorf("%w: tensor %s has %d elements, want %d", ErrFormat, t.name, len(v), rows*max(cols, 1))
	}
	return nil
}

// cut returns weights whose split tensors are views of the rows part
// selects of w's (whole) tensors; the others are w's own.
func (w *modelWeights) cut(a *architecture, part *Part) (*modelWeights, error) {
	out := &modelWeights{Layers: make([]layerWeights, len(w.Layers))}
	var err error
	a.walk(len(w.Layers), func(t tensorRef) {
		var s Span
		if t.spec.split {
			s = part.Rows(Axis(t.spec.rows))
		}
		switch {
		case err != nil:
		case !t.isMatrix() && t.spec.split && *t.vectorIn(w) != nil:
			*t.vectorIn(out) = (*t.vectorIn(w))[s.Lo:s.Hi:s.Hi]
		case !t.isMatrix():
			*t.vectorIn(out) = *t.vectorIn(w)
		case t.spec.split && *t.matrixIn(w) != nil:
			*t.matrixIn(out), err = (*t.matrixIn(w)).Slice(s.Lo, s.Hi)
		default:
			*t.matrixIn(out) = *t.matrixIn(w)
		}
	})
	if w.Output == w.TokenEmbedding {
		out.Output = out.TokenEmbedding // tied: one view
	}
	return out, err
}
