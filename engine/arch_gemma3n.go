package engine

import (
	"fmt"
	"math"
	"slices"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Google's Gemma 3n (text: Gemma-3n-E2B and E4B), as llama.cpp's
// converter (conversion/gemma.py's Gemma3NModel) writes it and llama.cpp
// runs it (LLM_ARCH_GEMMA3N, src/models/gemma3n.cpp). Its attention is
// Gemma 4's — pre- and post-norms, an RMSNorm of each query and key head,
// each value head normalised without weights, scores not scaled, NeoX
// rotations (the sliding layers' by rope.freq_base_swa, 10000 when
// absent, unscaled), the layers from the 21st on attending over the cache
// of layer 18 (sliding) or 19 (full) —, its feed-forward GeGLU, its
// embedding scaled by √dim, per-layer embeddings of 256 values
// (per_layer.go), the logits soft-capped at 30; with, each a step of
// altup.go:
//
//   - AltUp: the residual stream is four streams, predicted before each
//     layer and corrected after it by a router's coefficients; the layer
//     computes on the active stream, and its per-layer embedding, gated by
//     the corrected active stream, goes into the others;
//   - LAuReL: a low-rank residual branch (rank 64) beside attention;
//   - activation sparsity in the first 10 layers' gates (a Gaussian top-k
//     at 1.6448533 standard deviations, the normal's 95th percentile).
//
// llama.cpp's build fixes rather than reads most of this: four streams,
// the first active, the rank, the per-layer width, the sparse layers and
// their multiplier, the first shared layer (20), the sliding pattern
// (every 5th layer full unless the file gives a period as one number) and
// the soft-cap. The engine fixes them alike: it refuses a file whose
// altup.num_inputs or altup.active_idx say otherwise, or whose list of
// sliding layers is not that pattern, and the tensors' shapes hold the
// rest.
var gemma3n = &architecture{
	name: "gemma3n", ropeStyle: RopeHalves, tensors: gemma3nTensors(),
	layer: LayerSpec{Norms: NormsPreAndPost, QKNorm: QKNormHeads, FFN: FFNGeGLU, Attention: AttentionSpec{ValueNorm: true}, AltUp: true},
	// feed_forward_length and head_count_kv may be arrays: configureGemma3n reads them.
	keys: slices.DeleteFunc(slices.Clone(llamaKeys), func(k configKey) bool {
		return k.key == "feed_forward_length" || k.key == "attention.head_count_kv"
	}),
	configure: configureGemma3n,
	noSplit: "its residual stream is four streams that every layer mixes whole, its last layers attend over earlier layers' caches " +
		"and every layer reads the per-layer embeddings whole, while a split divides every layer's heads alike",
}

// What llama.cpp's gemma3n fixes (llama-hparams.h, models.h, gemma3n.cpp).
const (
	gemma3nAltUp          = 4                  // n_altup
	gemma3nLaurelRank     = 64                 // laurel_rank
	gemma3nPerLayerDim    = 256                // n_embd_altup
	gemma3nSparseLayers   = 10                 // n_layer_sparsity
	gemma3nSparsityStdMul = 1.6448533535003662 // f_sparsity_std_mul: the normal's 95th percentile
	gemma3nFirstShared    = 20                 // n_layer_kv_from_start
	gemma3nWindowPeriod   = 5                  // the sliding pattern's period when the file gives none
	gemma3nFinalSoftCap   = 30                 // f_final_logit_softcapping, which gemma3n does not read
	gemma3nSwaTheta       = float32(10000)     // rope_freq_base_train_swa's default
)

// gemma3nTensors is gemma3n's tensor table (llama.cpp's
// llama_model_gemma3n::load_arch_tensors): every layer has its keys and
// values, even those that read an earlier layer's cache.
func gemma3nTensors() []tensorSpec {
	return []tensorSpec{
		{name: "token_embd.weight", rows: dimVocab, cols: dimModel, at: slotTokenEmbedding},
		{name: "altup_proj.weight", rows: dimAltUpProj, cols: dimModel, stacked: true, at: slotAltUpProj},
		{name: "altup_unembd_proj.weight", rows: dimAltUpProj, cols: dimModel, stacked: true, at: slotAltUpUnembdProj},
		{name: "per_layer_token_embd.weight", rows: dimVocab, cols: dimPerLayers, at: slotPerLayerTokenEmbedding},
		{name: "per_layer_model_proj.weight", rows: dimPerLayers, cols: dimModel, at: slotPerLayerModelProj},
		{name: "per_layer_proj_norm.weight", rows: dimPerLayer, at: slotPerLayerProjNorm},
		{name: "output_norm.weight", rows: dimModel, at: slotOutputNorm},
		{name: nameOutput, rows: dimVocab, cols: dimModel, optional: true, at: slotOutput},

		{name: "blk.%d.attn_norm.weight", rows: dimModel, at: slotAttnNorm},
		{name: "blk.%d.attn_q.weight", rows: dimQ, cols: dimModel, at: slotWq},
		{name: "blk.%d.attn_k.weight", rows: dimKV, cols: dimModel, at: slotWk},
		{name: "blk.%d.attn_v.weight", rows: dimKV, cols: dimModel, at: slotWv},
		{name: "blk.%d.attn_output.weight", rows: dimModel, cols: dimQ, at: slotWo},
		{name: "blk.%d.attn_q_norm.weight", rows: dimHead, at: slotQNorm},
		{name: "blk.%d.attn_k_norm.weight", rows: dimHead, at: slotKNorm},
		{name: "blk.%d.post_attention_norm.weight", rows: dimModel, at: slotAttnPostNorm},
		{name: "blk.%d.ffn_norm.weight", rows: dimModel, at: slotFFNNorm},
		{name: "blk.%d.ffn_gate.weight", rows: dimHidden, cols: dimModel, at: slotWGate},
		{name: "blk.%d.ffn_up.weight", rows: dimHidden, cols: dimModel, at: slotWUp},
		{name: "blk.%d.ffn_down.weight", rows: dimModel, cols: dimHidden, at: slotWDown},
		{name: "blk.%d.post_ffw_norm.weight", rows: dimModel, at: slotFFNPostNorm},
		{name: "blk.%d.inp_gate.weight", rows: dimPerLayer, cols: dimModel, at: slotPerLayerGate},
		{name: "blk.%d.proj.weight", rows: dimModel, cols: dimPerLayer, at: slotPerLayerProj},
		{name: "blk.%d.post_norm.weight", rows: dimModel, at: slotPerLayerPostNorm},
		{name: "blk.%d.altup_correct_coef.weight", rows: dimAltUp, cols: dimAltUp, at: slotAltUpCorrect},
		{name: "blk.%d.altup_correct_scale.weight", rows: dimModel, at: slotAltUpCorrectScale},
		{name: "blk.%d.altup_predict_coef.weight", rows: dimAltUpCoefs, cols: dimAltUp, at: slotAltUpPredict},
		{name: "blk.%d.altup_router.weight", rows: dimAltUp, cols: dimModel, at: slotAltUpRouter},
		{name: "blk.%d.altup_router_norm.weight", rows: dimModel, at: slotAltUpRouterNorm},
		{name: "blk.%d.laurel_l.weight", rows: dimLaurelRank, cols: dimModel, at: slotLaurelL},
		{name: "blk.%d.laurel_r.weight", rows: dimModel, cols: dimLaurelRank, at: slotLaurelR},
		{name: "blk.%d.laurel_post_norm.weight", rows: dimModel, at: slotLaurelPostNorm},
	}
}

// configureGemma3n reads what gemma3n's keys say layer by layer, and sets
// what llama.cpp fixes.
func configureGemma3n(f *gguf.File, p *hyperParams) error {
	c := &p.Config
	if c.Layers <= 0 || c.Layers > maxDimension || c.Heads <= 0 {
		return nil // validate says what is wrong
	}
	key := func(k string) string { return "gemma3n." + k }
	hidden, err := perLayerInts(f, key("feed_forward_length"), c.Layers, -1)
	if err != nil {
		return err
	}
	kvHeads, err := perLayerInts(f, key("attention.head_count_kv"), c.Layers, c.Heads)
	if err != nil {
		return err
	}
	window, err := uint32Key(f, key("attention.sliding_window"), -1)
	if err != nil {
		return err
	}
	sliding, err := gemma3nSliding(f, key("attention.sliding_window_pattern"), c.Layers)
	if err != nil {
		return err
	}
	altUp, err := uint32Key(f, key("altup.num_inputs"), gemma3nAltUp)
	if err != nil {
		return err
	}
	active, err := uint32Key(f, key("altup.active_idx"), 0)
	if err != nil {
		return err
	}
	thetaSWA, err := f.Float32Or(key("rope.freq_base_swa"), gemma3nSwaTheta)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	switch {
	case window < 0 || hidden == nil:
		return fmt.Errorf("%w: gemma3n needs attention.sliding_window and feed_forward_length", ErrFormat)
	case altUp != gemma3nAltUp || active != 0:
		return fmt.Errorf("%w: %d AltUp streams, stream %d active (llama.cpp computes 4, the first active)", ErrUnsupported, altUp, active)
	case !validRope(thetaSWA):
		return fmt.Errorf("%w: the sliding layers' rope base %v must be positive and finite", ErrFormat, thetaSWA)
	}
	c.HiddenDim, c.KVHeads = hidden[0], kvHeads[0]
	c.EmbeddingScale = float32(math.Sqrt(float64(float32(c.Dim)))) // sqrtf(n_embd)
	c.FinalSoftCap = gemma3nFinalSoftCap
	c.PerLayerDim, c.AltUp, c.LaurelRank = gemma3nPerLayerDim, gemma3nAltUp, gemma3nLaurelRank
	p.layers.attnScale = 1
	p.layers.each = func(l int, s *LayerSpec) {
		if sliding[l] {
			s.Attention.Window = window
			if thetaSWA != c.RopeTheta {
				s.Attention.RopeTheta = thetaSWA
			}
			if c.RopeScale != 1 {
				s.Attention.RopeScale = 1
			}
		}
		if kvHeads[l] != c.KVHeads {
			s.KVHeads = kvHeads[l]
		}
		if hidden[l] != c.HiddenDim {
			s.HiddenDim = hidden[l]
		}
		if l >= gemma3nFirstShared {
			// llama.cpp's cache: a sliding layer reads layer 18's, a full one 19's
			s.Attention.SharedKV, s.Attention.KVLayer = true, gemma3nFirstShared-1
			if sliding[l] {
				s.Attention.KVLayer = gemma3nFirstShared - 2
			}
		}
		if l < gemma3nSparseLayers {
			s.GateSparsity = gemma3nSparsityStdMul
		}
	}
	return nil
}

// gemma3nSliding is which of the layers slide, as llama.cpp's gemma3n
// reads attention.sliding_window_pattern: a period (of every period layers
// the last is full), 5 when the key is absent or a list, which llama.cpp
// does not read; a list (what the converter writes) must then be that
// pattern, else the file is refused.
func gemma3nSliding(f *gguf.File, key string, layers int) ([]bool, error) {
	period := gemma3nWindowPeriod
	v, ok := f.Lookup(key)
	_, isArray := v.ElemType()
	if ok && !isArray {
		n, err := uint32Key(f, key, gemma3nWindowPeriod)
		if err != nil {
			return nil, err
		}
		period = n
	}
	sliding := make([]bool, layers)
	for l := range sliding {
		sliding[l] = period == 0 || l%period < period-1
	}
	if ok && isArray {
		listed, err := perLayerInts(f, key, layers, 0)
		if err != nil {
			return nil, err
		}
		for l, s := range listed {
			if (s != 0) != sliding[l] {
				return nil, fmt.Errorf("%w: %s says layer %d slides: %v, where llama.cpp's gemma3n slides all but every %dth layer", ErrUnsupported, key, l, s != 0, gemma3nWindowPeriod)
			}
		}
	}
	return sliding, nil
}

// ggufStacked views a stack of matrices (GGUF dims [cols, rows, n]) as one
// matrix of n·rows rows.
func ggufStacked(ti gguf.TensorInfo) (*tensor.Matrix, error) {
	if len(ti.Dims) != 3 {
		return nil, fmt.Errorf("%w: tensor %s has %d dimensions, want 3 (columns, rows, matrices)", ErrFormat, ti.Name, len(ti.Dims))
	}
	if !tensor.Supported(ti.Type) {
		return nil, fmt.Errorf("%w: tensor %s has type %v, which this engine cannot compute with", ErrUnsupported, ti.Name, ti.Type)
	}
	if ti.Dims[0] > maxDimension || ti.Dims[1] > maxDimension || ti.Dims[2] > maxDimension {
		return nil, fmt.Errorf("%w: tensor %s is %d×%d, %d times", ErrFormat, ti.Name, ti.Dims[1], ti.Dims[0], ti.Dims[2])
	}
	m, err := tensor.NewMatrix(ti.Type, int(ti.Dims[1]*ti.Dims[2]), int(ti.Dims[0]), ti.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: tensor %s: %w", ErrFormat, ti.Name, err)
	}
	return m, nil
}
