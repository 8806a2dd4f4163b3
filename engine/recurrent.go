package engine

import "fmt"

// Hybrid memory: recurrent layers beside attention. A hybrid model (LFM2,
// Qwen3.5, Granite 4's hybrids) mixes attention layers, which keep every
// position's keys and values in the KV cache, with recurrent layers, which
// keep a fixed-size state per session instead: the last inputs of their
// causal convolution (conv) and, for Gated DeltaNet and Mamba-2, a
// matrix state per head (ssm). The KV cache holds the attention layers
// only; the recurrent state is float32 whatever the cache's type, as
// llama.cpp keeps its r and s caches, and its size does not grow with
// the context (Config.RecurrentStateBytes).
//
// A recurrent state holds a whole prefix folded in: it cannot be rewound
// to an earlier position. So a session of a hybrid model reuses its
// cache only when every cached token is a prefix of the new prompt, and
// otherwise starts over at position 0 with a zeroed state
// (Session.reusedPrefix); a pass at position 0 zeroes the state, and a
// pass at a position other than the one the state has reached is an
// error (Session.beginRecurrent).

// recurrentSizes is how many float32 values layer l's state holds: conv,
// the last (kernel−1) inputs of its causal convolution, (kernel−1) ·
// channels; ssm, its recurrent matrix state (0 for a short convolution).
// Both are 0 for an attention layer.
func (c Config) recurrentSizes(l int) (conv, ssm int) {
	switch c.Layer(l).Kind {
	case LayerShortConv:
		return (c.ShortConvKernel - 1) * c.Dim, 0
	case LayerDeltaNet:
		d := c.deltaNet()
		return d.convState(), d.ssmState()
	case LayerMamba2:
		m := c.mamba2()
		return m.convState(), m.ssmState()
	}
	return 0, 0
}

// computed reports whether the engine computes layers of kind k: a model
// with a layer of another kind is refused when it loads (validateLayers).
func (k LayerKind) computed() bool {
	switch k {
	case LayerAttention, LayerShortConv, LayerDeltaNet, LayerMamba2:
		return true
	}
	return false
}

// validateRecurrent checks what layer l's kind needs of the
// hyper-parameters.
func (c Config) validateRecurrent(l int) error {
	switch c.Layer(l).Kind {
	case LayerShortConv:
		if c.ShortConvKernel < 2 || c.ShortConvKernel > maxDimension {
			return fmt.Errorf("%w: layer %d: short convolution over %d positions (shortconv.l_cache: 2..%d)", ErrFormat, l, c.ShortConvKernel, maxDimension)
		}
	case LayerDeltaNet:
		if err := c.SSM.validateDeltaNet(); err != nil {
			return fmt.Errorf("layer %d: %w", l, err)
		}
	case LayerMamba2:
		if err := c.mamba2().validate(c.Dim); err != nil {
			return fmt.Errorf("layer %d: %w", l, err)
		}
	}
	return nil
}

// Recurrent reports whether the model has recurrent layers (LayerKind's
// Recurrent): a hybrid, whose sessions keep a recurrent state beside the
// KV cache.
func (c Config) Recurrent() bool {
	for l := range c.Layers {
		if c.Layer(l).Kind.Recurrent() {
			return true
		}
	}
	return false
}

// RecurrentStateBytes is what a session's recurrent state takes: the sum
// over the recurrent layers of their float32 states (recurrentSizes),
// whatever the context and the KV cache's type. 0 for a model without
// recurrent layers.
func (c Config) RecurrentStateBytes() int64 {
	var n int64
	for l := range c.Layers {
		conv, ssm := c.recurrentSizes(l)
		n += int64(conv) + int64(ssm)
	}
	return 4 * n
}

// recurrentState is a session's recurrent layers' state, allocated once
// in NewSession: one entry per layer, nil for an attention layer (and
// both nil for a model without recurrent layers).
type recurrentState struct {
	conv [][]float32 // (layers)(kernel−1, channels): a causal convolution's last inputs, oldest first
	ssm  [][]float32 // (layers)(the layer's matrix state)
	// pos is the position the state has reached: it has taken the tokens
	// at 0..pos-1, and the next pass must be at pos (or start over at 0).
	pos int
	// shortConv is the short-convolution layers' scratch (shortconv.go),
	// allocated at the first pass.
	shortConv *shortConvScratch
	// deltaNet is the Gated DeltaNet layers' scratch (deltanet.go),
	// allocated at the first pass.
	deltaNet *deltaNetScratch
	// mamba2 is the Mamba-2 layers' scratch (mamba2.go), allocated at
	// the first pass.
	mamba2 *mamba2Scratch
}

// newRecurrentState allocates the state of c's recurrent layers.
func newRecurrentState(c Config) recurrentState {
	if !c.Recurrent() {
		return recurrentState{}
	}
	r := recurrentState{conv: make([][]float32, c.Layers), ssm: make([][]float32, c.Layers)}
	for l := range c.Layers {
		conv, ssm := c.recurrentSizes(l)
		if conv > 0 {
			r.conv[l] = make([]float32, conv)
		}
		if ssm > 0 {
			r.ssm[l] = make([]float32, ssm)
		}
	}
	return r
}

// active reports whether the session has recurrent layers.
func (r *recurrentState) active() bool { return r.conv != nil }

// reset zeroes the state: the session starts over at position 0.
func (r *recurrentState) reset() {
	for l := range r.conv {
		clear(r.conv[l])
		clear(r.ssm[l])
	}
	r.pos = 0
}

// beginRecurrent prepares the recurrent state for a pass of n tokens at
// positions pos..pos+n-1: at position 0 it starts over (a zeroed state);
// elsewhere the state must have reached pos, as it cannot be rewound or
// moved forward. A model without recurrent layers takes any position.
func (s *Session) beginRecurrent(pos, n int) error {
	r := &s.rec
	if !r.active() {
		return nil
	}
	switch {
	case pos == 0:
		r.reset()
	case pos != r.pos:
		return optionError("position", "must be 0 (start over) or %d, the position this model's recurrent layers have reached (their state cannot be moved), got %d", r.pos, pos)
	}
	r.pos = pos + n
	return nil
}

// reusedPrefix is how many of the session's cached tokens a prompt's
// evaluation keeps: their common prefix, less what the cache cannot give
// back. Attention alone keeps any common prefix, at least the last prompt
// token running again for its logits, unless a sliding window's ring has
// moved past it. A model with recurrent layers keeps the cached tokens
// only when all of them are a prefix of the prompt and the prompt is
// longer (its state holds every cached token and cannot be rewound);
// otherwise it starts over at 0. A session saved or restored (SaveState,
// LoadState) keeps a prompt equal to its cached tokens whole while it has
// their last token's logits: nothing runs.
func (s *Session) reusedPrefix(prompt []int) int {
	first := commonPrefix(s.tokens, prompt)
	if s.restored && s.lastLogits && first == len(s.tokens) && first == len(prompt) {
		return first // the last token's logits are at hand (state.go)
	}
	if s.rec.active() {
		if first == len(s.tokens) && first < len(prompt) && s.rec.pos == first {
			return first
		}
		return 0
	}
	if first == len(prompt) {
		first-- // the last prompt token must run again to produce logits
	}
	if !s.kv.holds(first, len(s.tokens)) {
		first = 0 // a sliding window's ring has moved past the prefix
	}
	if first == 0 {
		s.kv.validFrom = 0 // the cache fills again from the start
	}
	return first
}

// mixBlock is the sequence mixer of layer l, a recurrent layer, over a
// pass's n tokens at positions pos..pos+n-1: xn holds their normalised
// rows (Dim each), and out receives their output rows (Dim each), which
// forwardBlock adds to the residual stream as it adds attention's
// projected output. It advances the layer's state by the n tokens; a
// block leaves exactly the state and outputs its tokens one by one would.
func (s *Session) mixBlock(spec *LayerSpec, l int, xn, out []float32, n, pos int) {
	switch spec.Kind {
	case LayerShortConv:
		s.shortConvBlock(l, xn, out, n)
	case LayerDeltaNet:
		s.deltaNetBlock(l, xn, out, n)
	case LayerMamba2:
		s.mamba2Block(l, xn, out, n)
	default:
		// Unreachable: validateLayers refuses a model with a layer of a
		// kind not computed here (LayerKind.computed).
		clear(out)
	}
}
