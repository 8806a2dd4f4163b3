package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// lfm2 is LiquidAI's LFM2 (llama.cpp's LLM_ARCH_LFM2): a hybrid whose
// layers are either gated short convolutions (LayerShortConv,
// shortconv.go) or grouped-query attention with an RMSNorm of each query
// and key head (qwen3's) and NeoX-style rotations; every layer then has
// llama's SwiGLU feed-forward, both sub-layers pre-normed (attn_norm, the
// "operator norm", and ffn_norm). The file says which layers attend by
// attention.head_count_kv, an array of one count per layer where 0 marks
// a short convolution (llama.cpp's is_recr), and the convolution's span by
// shortconv.l_cache. The final norm is stored as token_embd_norm (llama.cpp's
// LLM_TENSOR_OUTPUT_NORM_LFM2), applied after the last layer as
// output_norm is in the llama family.
var lfm2 = &architecture{
	name: "lfm2", ropeStyle: RopeHalves, keys: lfm2Keys, tensors: lfm2Tensors(),
	layer:     LayerSpec{QKNorm: QKNormHeads},
	configure: configureShortConv("lfm2"),
	noSplit:   "its short-convolution layers keep a recurrent state that a part holding some rows cannot (hybrid models run whole)",
	// A fused q/k/v and biases, which llama.cpp would take and LFM2's
	// converter does not write; the ColBERT variant's dense output head.
	unsupported: []string{"blk.%d.attn_qkv.weight", "blk.%d.attn_q.bias", "blk.%d.attn_k.bias", "blk.%d.attn_v.bias", "dense_2.weight"},
}

// lfm2Keys are llama's but head_count_kv (an array: configureLFM2 reads
// it), and the short convolution's span.
var lfm2Keys = func() []configKey {
	var keys []configKey
	for _, k := range llamaKeys {
		if k.key != "attention.head_count_kv" {
			keys = append(keys, k)
		}
	}
	return append(keys, configKey{key: "shortconv.l_cache", int: func(p *hyperParams) *int { return &p.ShortConvKernel }})
}()

// lfm2Tensors is LFM2's table: the attention layers' tensors, the short
// convolutions', and llama's feed-forward in every layer.
func lfm2Tensors() []tensorSpec {
	attention := []LayerKind{LayerAttention}
	conv := []LayerKind{LayerShortConv}
	return []tensorSpec{
		{name: "token_embd.weight", rows: dimVocab, cols: dimModel, split: true, at: slotTokenEmbedding},
		{name: "token_embd_norm.weight", rows: dimModel, at: slotOutputNorm},
		{name: nameOutput, rows: dimVocab, cols: dimModel, split: true, optional: true, at: slotOutput}, // absent: tied to token_embd

		{name: "blk.%d.attn_norm.weight", rows: dimModel, at: slotAttnNorm},
		{name: "blk.%d.attn_q.weight", rows: dimQ, cols: dimModel, split: true, at: slotWq, kinds: attention},
		{name: "blk.%d.attn_k.weight", rows: dimKV, cols: dimModel, split: true, at: slotWk, kinds: attention},
		{name: "blk.%d.attn_v.weight", rows: dimKV, cols: dimModel, split: true, at: slotWv, kinds: attention},
		{name: "blk.%d.attn_q_norm.weight", rows: dimHead, at: slotQNorm, kinds: attention},
		{name: "blk.%d.attn_k_norm.weight", rows: dimHead, at: slotKNorm, kinds: attention},
		{name: "blk.%d.attn_output.weight", rows: dimModel, cols: dimQ, at: slotWo, kinds: attention},
		{name: "blk.%d.shortconv.conv.weight", rows: dimModel, cols: dimShortConvKernel, at: slotShortConv, kinds: conv},
		{name: "blk.%d.shortconv.in_proj.weight", rows: dimShortConvIn, cols: dimModel, at: slotShortConvIn, kinds: conv},
		{name: "blk.%d.shortconv.out_proj.weight", rows: dimModel, cols: dimModel, at: slotShortConvOut, kinds: conv},
		{name: "blk.%d.ffn_norm.weight", rows: dimModel, at: slotFFNNorm},
		{name: "blk.%d.ffn_gate.weight", rows: dimHidden, cols: dimModel, split: true, at: slotWGate},
		{name: "blk.%d.ffn_up.weight", rows: dimHidden, cols: dimModel, split: true, at: slotWUp},
		{name: "blk.%d.ffn_down.weight", rows: dimModel, cols: dimHidden, split: true, at: slotWDown},
	}
}

// configureShortConv is the configure of arch, lfm2 or lfm2moe: it reads
// attention.head_count_kv, one count per layer (or one for all, as
// llama.cpp also takes), and makes each layer with no key/value heads a
// short convolution. The attention layers must share one count, which
// becomes KVHeads. It refuses what llama.cpp's lfm2 graph computes and
// the engine does not: a sliding window, and the bidirectional
// (embedding) variant.
func configureShortConv(arch string) func(f *gguf.File, p *hyperParams) error {
	return func(f *gguf.File, p *hyperParams) error { return configureLFM2(f, p, arch) }
}

// configureLFM2 is configureShortConv's, for arch.
func configureLFM2(f *gguf.File, p *hyperParams, arch string) error {
	if p.Layers <= 0 || p.Layers > maxDimension {
		return nil // validate says what is wrong
	}
	if err := readLayerKinds(f, p, arch+".attention.head_count_kv", LayerShortConv); err != nil {
		return err
	}
	if p.KVHeads == 0 {
		p.KVHeads = p.Heads // no attention layer: any count that validates
	}
	if w, err := f.Uint32Or(arch+".attention.sliding_window", 0); err != nil || w > 0 {
		return fmt.Errorf("%w: %s.attention.sliding_window %d: sliding attention layers (%v)", ErrUnsupported, arch, w, err)
	}
	if causal, err := f.BoolOr(arch+".attention.causal", true); err != nil || !causal {
		return fmt.Errorf("%w: %s.attention.causal false: the bidirectional (embedding) variant (%v)", ErrUnsupported, arch, err)
	}
	return nil
}

// readLayerKinds reads which of a hybrid's layers attend from key, its
// attention.head_count_kv per layer: a layer of 0 key/value heads is of
// kind recurrent, the others attend, all with the same count, the
// model's KVHeads (left 0 when no layer attends).
func readLayerKinds(f *gguf.File, p *hyperParams, key string, recurrent LayerKind) error {
	counts, err := perLayerCounts(f, key, p.Layers)
	if err != nil {
		return err
	}
	p.layers.kinds = make([]LayerKind, len(counts))
	for l, n := range counts {
		switch {
		case n == 0:
			p.layers.kinds[l] = recurrent
		case p.KVHeads == 0:
			p.KVHeads = n
		case n != p.KVHeads:
			return fmt.Errorf("%w: %s: layer %d has %d kv heads, an earlier attention layer %d", ErrUnsupported, key, l, n, p.KVHeads)
		}
	}
	return nil
}

// perLayerCounts reads key, an unsigned count per layer: an array of
// layers integers, or one integer for every layer (llama.cpp's
// get_key_or_arr).
func perLayerCounts(f *gguf.File, key string, layers int) ([]int, error) {
	v, ok := f.Lookup(key)
	if !ok {
		return nil, fmt.Errorf("%w: missing key %s", ErrFormat, key)
	}
	out := make([]int, layers)
	if _, isArray := v.ElemType(); !isArray {
		n, ok := v.AsUint64()
		if !ok || n > maxDimension {
			return nil, fmt.Errorf("%w: %s is %v, want a count or an array of one per layer", ErrFormat, key, v)
		}
		for l := range out {
			out[l] = int(n)
		}
		return out, nil
	}
	if v.Len() != layers {
		return nil, fmt.Errorf("%w: %s has %d values for %d layers", ErrFormat, key, v.Len(), layers)
	}
	var bad bool
	switch a := v.Any().(type) {
	case []int32:
		for l, n := range a {
			out[l], bad = int(n), bad || n < 0
		}
	case []uint32:
		for l, n := range a {
			out[l] = int(n)
		}
	case []int64:
		for l, n := range a {
			out[l], bad = int(n), bad || n < 0 || n > maxDimension
		}
	case []uint64:
		for l, n := range a {
			out[l], bad = int(n), bad || n > maxDimension
		}
	default:
		bad = true
	}
	for _, n := range out {
		bad = bad || n > maxDimension
	}
	if bad {
		return nil, fmt.Errorf("%w: %s is %v, want counts of 0..%d", ErrFormat, key, v, maxDimension)
	}
	return out, nil
}
