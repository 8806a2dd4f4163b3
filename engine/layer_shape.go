package engine

import (
	"fmt"
	"math"
)

// Layers of different shapes. Most families' layers are all alike, and a
// layer's head width, key/value heads and feed-forward width are the
// model's; gemma4's are not: its sliding layers have narrower heads than
// its full ones, its key/value heads may differ between the two, and its
// layers that read another layer's cache may have a wider feed-forward.
// A layer's recipe says where it differs (LayerSpec.HeadDim, KVHeads,
// HiddenDim); these are the sizes that follow, layer by layer.

// layerHeadDim is the width of one of layer l's attention heads.
func (c Config) layerHeadDim(l int) int {
	if d := c.Layer(l).HeadDim; d > 0 {
		return d
	}
	return c.HeadDim()
}

// layerKVHeads is layer l's key/value heads.
func (c Config) layerKVHeads(l int) int {
	if h := c.Layer(l).KVHeads; h > 0 {
		return h
	}
	return c.KVHeads
}

// layerQDim is the width of layer l's queries: every head.
func (c Config) layerQDim(l int) int { return c.Heads * c.layerHeadDim(l) }

// layerKVDim is the width of layer l's keys (and values).
func (c Config) layerKVDim(l int) int { return c.layerKVHeads(l) * c.layerHeadDim(l) }

// layerHidden is the width of layer l's feed-forward.
func (c Config) layerHidden(l int) int {
	if h := c.Layer(l).HiddenDim; h > 0 {
		return h
	}
	return c.HiddenDim
}

// layerRotaryDims is how many of a head's dimensions layer l rotates: the
// model's (Config.RotaryDims), or every one of a head of its own width.
func (c Config) layerRotaryDims(l int) int {
	if c.Layer(l).HeadDim > 0 {
		return c.Layer(l).HeadDim
	}
	return c.RotaryDims()
}

// kvLayerOf is the layer whose cache layer l attends over: its own, or the
// one it shares (AttentionSpec.SharedKV).
func (c Config) kvLayerOf(l int) int {
	if s := c.Layer(l); s.Attention.SharedKV {
		return s.Attention.KVLayer
	}
	return l
}

// sharesKV reports whether a later layer attends over layer l's cache.
func (c Config) sharesKV(l int) bool {
	for _, s := range c.LayerSpecs {
		if s.Attention.SharedKV && s.Attention.KVLayer == l {
			return true
		}
	}
	return false
}

// sizeIn is d's value in layer l: the layer's own for the sizes its recipe
// may change (dimQ, dimKV, dimHidden, dimHead), else the model's.
func (c Config) sizeIn(d dimension, l int) int {
	switch d {
	case dimQ:
		return c.layerQDim(l)
	case dimKV:
		return c.layerKVDim(l)
	case dimHidden:
		return c.layerHidden(l)
	case dimHead:
		return c.layerHeadDim(l)
	}
	return c.size(d)
}

// maxLayerSize is the largest of d's values over the layers.
func (c Config) maxLayerSize(d dimension) int {
	n := c.size(d)
	for l := range c.Layers {
		n = max(n, c.sizeIn(d, l))
	}
	return n
}

// validateLayerShape checks layer l's own sizes and the cache it shares.
func (c Config) validateLayerShape(l int, s LayerSpec) error {
	switch {
	case s.HeadDim < 0 || s.HeadDim > maxDimension || s.HeadDim%2 != 0:
		return fmt.Errorf("%w: layer %d: head width %d (want an even width, 0: the model's)", ErrFormat, l, s.HeadDim)
	case int64(s.HeadDim)*int64(c.Heads) > maxDimension:
		return fmt.Errorf("%w: layer %d: %d heads of %d values are more than %d", ErrFormat, l, c.Heads, s.HeadDim, maxDimension)
	case s.KVHeads < 0 || s.KVHeads > maxDimension || (s.KVHeads > 0 && c.Heads%s.KVHeads != 0):
		return fmt.Errorf("%w: layer %d: %d key/value heads for %d heads", ErrFormat, l, s.KVHeads, c.Heads)
	case s.HiddenDim < 0 || s.HiddenDim > maxDimension:
		return fmt.Errorf("%w: layer %d: feed-forward width %d is out of range (0..%d)", ErrFormat, l, s.HiddenDim, maxDimension)
	case !s.Attention.SharedKV && s.Attention.KVLayer != 0:
		return fmt.Errorf("%w: layer %d names a cache to share (layer %d) but shares none", ErrFormat, l, s.Attention.KVLayer)
	case !s.Attention.SharedKV:
		return nil
	case s.Attention.KVLayer < 0 || s.Attention.KVLayer >= l || c.Layer(s.Attention.KVLayer).Attention.SharedKV:
		return fmt.Errorf("%w: layer %d shares the cache of layer %d, which is not an earlier layer with a cache of its own", ErrFormat, l, s.Attention.KVLayer)
	}
	src := c.Layer(s.Attention.KVLayer)
	if src.Attention.Window != s.Attention.Window || c.layerHeadDim(s.Attention.KVLayer) != c.layerHeadDim(l) || c.layerKVHeads(s.Attention.KVLayer) != c.layerKVHeads(l) {
		return fmt.Errorf("%w: layer %d (window %d, %d key/value heads of %d) shares the cache of layer %d (window %d, %d of %d)", ErrUnsupported,
			l, s.Attention.Window, c.layerKVHeads(l), c.layerHeadDim(l), s.Attention.KVLayer, src.Attention.Window, c.layerKVHeads(s.Attention.KVLayer), c.layerHeadDim(s.Attention.KVLayer))
	}
	return nil
}

// layerScoreScale is what attention multiplies layer l's scores by
// (Config.scoreScale), 1/√headDim being of the layer's own heads.
func (c Config) layerScoreScale(l int) float32 {
	s := c.Layer(l)
	if s.HeadDim == 0 || s.Attention.ScaleQueries || s.Attention.Scale != 0 {
		return c.scoreScale(s.Attention)
	}
	return float32(1 / math.Sqrt(float64(s.HeadDim)))
}
