package gpu

import "fmt"

// Attention: for each token and query head, the scores over the positions
// it attends to, their softmax and the weighted sum of the values, the
// scores and exponentials in workgroup memory, WG positions at a time
// (attention_wgsl.go). Where no head attends to more than WG positions, one
// kernel does it, a workgroup per token and head; past that the positions
// are split into chunks, as many per head as the device needs workgroups
// (several for a decode step over a long context: flash-decoding), and
// three kernels compute each chunk's softmax statistics (its maximum and
// sum of exponentials), each chunk's weighted values with the weights the
// head's statistics give, and their sum. The weights are the CPU's, e^(s −
// max)/Σ, only the order of the sums differs; no scores are kept in device
// memory, so any context fits, and the split's scratch is a few values per
// chunk.
//
// Over an F16 cache the query is rounded to F16 before its products with
// the keys and the weights before theirs with the values, as the engine
// attends over an F16 cache (kv.go's attentionF16): each product is then
// exact in f32, and only the order of the sums differs.

// The split: it aims at splitGroups workgroups, with at most maxSplits
// chunks per head.
const (
	splitGroups = 256
	maxSplits   = 32
)

// maxHeadDim is the widest head the kernel takes: its query is kept in
// workgroup memory, and an invocation adds into at most 4 dimensions. A
// head's width is a multiple of 4, its keys read four values at a time.
const maxHeadDim = 2 * workgroup

// AttentionSpec is what an attention's layer and model say of it.
type AttentionSpec struct {
	Heads, KVHeads, HeadDim int // query heads, key/value heads (a divisor), their width
	// Window is how many positions a query attends to, its own included
	// (a sliding window); 0: every position from 0.
	Window int
	// SoftCap caps the scores, cap·tanh(score/cap), before they are
	// scaled (gemma2); 0: not capped.
	SoftCap float32
	// Scale multiplies the scores before the softmax (the engine's
	// scoreScale: 1/√headDim, a family's scale, or 1).
	Scale float32
	// NonCausal lets every token of a pass attend to every position up to
	// the pass's last (the encoders); otherwise a token attends up to its
	// own position.
	NonCausal bool
	// MaxTokens is the most tokens one Record takes (a prompt block).
	MaxTokens int
}

// Attention computes the attention of n tokens' queries over a layer of
// the KV cache.
type Attention struct {
	single op    // the single kernel, which holds the parameters
	split  [3]op // the split's kernels, with the same parameters
	cache  *KVCache
	slots  int // the layer's
	spec   AttentionSpec
	q, out Binding
	// where the split's partial outputs begin in its scratch (values),
	// after two statistics per chunk
	partAt int
}

// NewAttention makes the attention of the rows of q (heads·headDim values
// each) over layer l of cache, into the rows of out (the same shape). The
// cache's kvDim must be kvHeads·headDim.
func NewAttention(lib *Library, pass *Pass, cache *KVCache, l int, q, out Binding, s AttentionSpec) (*Attention, error) {
	switch {
	case l < 0 || l >= len(cache.slots):
		return nil, fmt.Errorf("gpu: attention: layer %d is not one of the cache's %d", l, len(cache.slots))
	case s.Heads < 1 || s.KVHeads < 1 || s.Heads%s.KVHeads != 0:
		return nil, fmt.Errorf("gpu: attention: heads %d must be a multiple of kvHeads %d", s.Heads, s.KVHeads)
	case s.HeadDim < 4 || s.HeadDim > maxHeadDim || s.HeadDim%4 != 0:
		return nil, fmt.Errorf("gpu: attention: headDim %d must be a multiple of 4, from 4 to %d", s.HeadDim, maxHeadDim)
	case s.KVHeads*s.HeadDim != cache.kvDim:
		return nil, fmt.Errorf("gpu: attention: kvHeads %d × headDim %d is not the cache's kvDim %d", s.KVHeads, s.HeadDim, cache.kvDim)
	case s.Window < 0 || s.MaxTokens < 1:
		return nil, fmt.Errorf("gpu: attention: window %d must not be negative, maxTokens %d at least 1", s.Window, s.MaxTokens)
	case !(s.Scale > 0) || !(s.SoftCap >= 0):
		return nil, fmt.Errorf("gpu: attention: scale %v must be positive, softCap %v not negative", s.Scale, s.SoftCap)
	case cache.slots[l] < cache.context && (s.Window == 0 || s.Window+s.MaxTokens-1 > cache.slots[l]):
		return nil, fmt.Errorf("gpu: attention: layer %d's %d slots hold less than its window %d and a block of maxTokens %d less one", l, cache.slots[l], s.Window, s.MaxTokens)
	}
	// A split has fewer than splitGroups + heads chunks (Record).
	chunks := splitGroups + s.MaxTokens*s.Heads
	a := &Attention{cache: cache, slots: cache.slots[l], spec: s, q: q, out: out, partAt: 2 * chunks}
	scratch, err := cache.scratchBuffer(a.partAt + chunks*s.HeadDim)
	if err != nil {
		return nil, err
	}
	buffers := map[byte]Binding{'q': q, 'o': out, 'k': {Buffer: cache.k[l]}, 'v': {Buffer: cache.v[l]}, 's': {Buffer: scratch}}
	bind := func(params Params, k attentionKernel) (op, error) {
		var bs []Binding
		for i := range len(k.buffers) {
			bs = append(bs, buffers[k.buffers[i]])
		}
		return bindOp(lib, pass, params, k.name, k.source, bs...)
	}
	params, err := pass.Reserve()
	if err != nil {
		return nil, err
	}
	single, split := attentionKernels(cache.f16)
	if a.single, err = bind(params, single); err != nil {
		return nil, err
	}
	for i, k := range split {
		if a.split[i], err = bind(params, k); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Record records the attention of n tokens at positions pos..pos+n-1,
// whose keys and values are in the cache.
func (a *Attention) Record(n, pos int) error {
	s, c := a.spec, a.cache
	width := s.Heads * s.HeadDim
	if err := rowsFit("attention q", a.q, n, width); err != nil {
		return err
	}
	if err := rowsFit("attention out", a.out, n, width); err != nil {
		return err
	}
	switch {
	case n > s.MaxTokens:
		return fmt.Errorf("gpu: attention: %d tokens are more than maxTokens %d", n, s.MaxTokens)
	case pos < 0 || pos+n > c.context:
		return fmt.Errorf("gpu: attention: positions %d..%d are past the cache's %d", pos, pos+n-1, c.context)
	}
	if n == 0 {
		return nil
	}
	nonCausal := 0
	if s.NonCausal {
		nonCausal = 1
	}
	// Split the most positions a token attends to, past WG, into chunks
	// (of blocks of WG), more than one where the heads alone are fewer than
	// splitGroups workgroups: heads·chunks < splitGroups + heads.
	most := pos + n
	if s.Window > 0 {
		most = min(most, s.Window)
	}
	heads := n * s.Heads
	blocks := (most + workgroup - 1) / workgroup
	splits := min(maxSplits, blocks, (splitGroups+heads-1)/heads)
	chunkLen := workgroup * ((blocks + splits - 1) / splits)
	chunks := (most + chunkLen - 1) / chunkLen
	params := a.single.params
	for i, v := range [...]int{n, pos, s.Heads, s.Heads / s.KVHeads, s.HeadDim, c.kvDim, s.Window, nonCausal, c.context, a.slots} {
		params.SetU32(i, uint32(v))
	}
	params.SetF32(10, s.SoftCap)
	params.SetF32(11, s.Scale)
	for i, v := range [...]int{chunks, chunkLen, a.partAt} {
		params.SetU32(12+i, uint32(v))
	}
	if blocks == 1 {
		a.single.dispatch(heads)
		return nil
	}
	a.split[0].dispatch(heads * chunks)
	a.split[1].dispatch(heads * chunks)
	a.split[2].dispatch((heads*s.HeadDim + workgroup - 1) / workgroup)
	return nil
}
