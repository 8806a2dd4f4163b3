package gpu

import "fmt"

// KVCache is the keys and values of every position a session has seen, on
// the device: for each layer a buffer of keys and one of values, (slots,
// kvDim) each, as f32 or as F16 packed two to a u32 (pack2x16float's
// layout: the even value in the low half), which needs no shader-f16.
// Position p is in row p mod slots of its layer: a layer that holds the
// whole context has a row for each position, and one that attends to a
// sliding window may keep only a ring of the latest (as the engine's
// kvLayer), a few hundred rows where the context has thousands. Each
// layer's buffers are their own so that one binding never exceeds
// maxStorageBufferBindingSize for the whole cache.
type KVCache struct {
	host           Host
	k, v           []Buffer // (layers): (slots[l], kvDim) each
	slots          []int    // (layers): the positions each holds
	context, kvDim int
	f16            bool
	scratch        []Buffer // attention's split's; the last is the largest
}

// NewKVCache makes the cache of layers layers of context positions of
// kvDim keys (and values) each; f16 keeps them as F16 (kvDim then even).
func NewKVCache(h Host, layers, context, kvDim int, f16 bool) (*KVCache, error) {
	if layers < 1 {
		return nil, fmt.Errorf("gpu: kv cache: layers must be at least 1, got %d", layers)
	}
	slots := make([]int, layers)
	for l := range slots {
		slots[l] = context
	}
	return NewRingKVCache(h, context, kvDim, f16, slots)
}

// NewRingKVCache makes a cache of context positions whose layer l holds
// slots[l] of them (at most context), position p in row p mod slots[l]: a
// layer attending to a sliding window of w positions in prompt blocks of
// up to b tokens needs w+b-1 (a block's keys are all stored before its
// first token attends), the engine's Config.kvSlots.
func NewRingKVCache(h Host, context, kvDim int, f16 bool, slots []int) (*KVCache, error) {
	switch {
	case len(slots) < 1 || context < 1 || kvDim < 1:
		return nil, fmt.Errorf("gpu: kv cache: layers %d, context %d and kvDim %d must be at least 1", len(slots), context, kvDim)
	case f16 && kvDim%2 != 0:
		return nil, fmt.Errorf("gpu: kv cache: kvDim %d must be even for an F16 cache", kvDim)
	}
	for l, n := range slots {
		if n < 1 || n > context {
			return nil, fmt.Errorf("gpu: kv cache: slots[%d] is %d, not 1 to the context %d", l, n, context)
		}
	}
	c := &KVCache{host: h, slots: slots, context: context, kvDim: kvDim, f16: f16}
	for l, n := range slots {
		size := n * kvDim * c.valueBytes() // readable and writable by copies too: a session saved, restored, shifted
		k, err := h.NewBuffer(fmt.Sprintf("keys %d", l), size, UsageReadback)
		if err != nil {
			c.Destroy()
			return nil, err
		}
		c.k = append(c.k, k)
		v, err := h.NewBuffer(fmt.Sprintf("values %d", l), size, UsageReadback)
		if err != nil {
			c.Destroy()
			return nil, err
		}
		c.v = append(c.v, v)
	}
	return c, nil
}

// valueBytes is the bytes of one cached value: 4 (f32) or 2 (F16).
func (c *KVCache) valueBytes() int {
	if c.f16 {
		return 2
	}
	return 4
}

// Bytes is the bytes the keys and values of every layer take.
func (c *KVCache) Bytes() int {
	n := 0
	for _, s := range c.slots {
		n += 2 * s * c.kvDim * c.valueBytes()
	}
	return n
}

// Slots is how many positions layer l holds.
func (c *KVCache) Slots(l int) int { return c.slots[l] }

// Context is how many positions the cache holds.
func (c *KVCache) Context() int { return c.context }

// F16 reports whether the cache holds F16 values.
func (c *KVCache) F16() bool { return c.f16 }

// Keys is layer l's buffer of keys: (Slots(l), kvDim) values, f32 or F16
// pairs.
func (c *KVCache) Keys(l int) Buffer { return c.k[l] }

// Values is layer l's buffer of values, as Keys.
func (c *KVCache) Values(l int) Buffer { return c.v[l] }

// Destroy frees the cache's buffers.
func (c *KVCache) Destroy() {
	for _, bs := range [][]Buffer{c.k, c.v, c.scratch} {
		for _, b := range bs {
			b.Destroy()
		}
	}
	c.k, c.v, c.scratch = nil, nil, nil
}

// scratchBuffer is a buffer of at least n f32 values for attention's
// split, shared by every layer's attention (each runs after the last): the
// largest asked for so far, or a new one if n is more (an earlier one
// stays, bound to the attention that asked for it).
func (c *KVCache) scratchBuffer(n int) (Buffer, error) {
	if k := len(c.scratch); k > 0 && c.scratch[k-1].Size() >= 4*n {
		return c.scratch[k-1], nil
	}
	b, err := c.host.NewBuffer("attention scratch", 4*n, UsageStorage)
	if err != nil {
		return nil, err
	}
	c.scratch = append(c.scratch, b)
	return b, nil
}

// KVStore stores the keys and values of n tokens in a layer of the cache.
type KVStore struct {
	op
	cache *KVCache
	slots int // the layer's
	k, v  Binding
}

const kvStoreF32 = `
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = groupIndex(wg, nwg) * WG + li;
  if (i >= p.count) { return; }
  let at = ((p.pos + i / p.width) % p.slots) * p.width + i % p.width;
  keys[at] = k[i];
  vals[at] = v[i];
}
`

const kvStoreF16 = f16Fn + `
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = groupIndex(wg, nwg) * WG + li;
  if (i >= p.count) { return; }
  let at = ((p.pos + i / p.width) % p.slots) * p.width + i % p.width;
  keys[at] = f16Bits(k[2u * i]) | (f16Bits(k[2u * i + 1u]) << 16u);
  vals[at] = f16Bits(v[2u * i]) | (f16Bits(v[2u * i + 1u]) << 16u);
}
`

// NewKVStore makes the store of the rows of k and v (kvDim values each)
// into layer l of cache; over an F16 cache each value is rounded to the
// nearest F16, ties to even, as the engine's F16 cache stores it.
func NewKVStore(lib *Library, pass *Pass, cache *KVCache, l int, k, v Binding) (*KVStore, error) {
	if l < 0 || l >= len(cache.slots) {
		return nil, fmt.Errorf("gpu: kv store: layer %d is not one of the cache's %d", l, len(cache.slots))
	}
	name, body, word := "kv store f32", kvStoreF32, "f32"
	if cache.f16 {
		name, body, word = "kv store f16", kvStoreF16, "u32"
	}
	src := kernelSource("count: u32, width: u32, pos: u32, slots: u32,",
		[]string{"keys: array<" + word + ">", "vals: array<" + word + ">", "k: array<f32>", "v: array<f32>"}, body)
	o, err := newOp(lib, pass, name, src, Binding{Buffer: cache.k[l]}, Binding{Buffer: cache.v[l]}, k, v)
	if err != nil {
		return nil, err
	}
	return &KVStore{op: o, cache: cache, slots: cache.slots[l], k: k, v: v}, nil
}

// Record records the store of n rows at positions pos..pos+n-1 (at most
// the layer's slots).
func (s *KVStore) Record(n, pos int) error {
	c := s.cache
	if err := rowsFit("kv store k", s.k, n, c.kvDim); err != nil {
		return err
	}
	if err := rowsFit("kv store v", s.v, n, c.kvDim); err != nil {
		return err
	}
	switch {
	case pos < 0 || pos+n > c.context:
		return fmt.Errorf("gpu: kv store: positions %d..%d are past the cache's %d", pos, pos+n-1, c.context)
	case n > s.slots:
		return fmt.Errorf("gpu: kv store: %d positions are more than the layer's %d slots", n, s.slots)
	}
	width := c.kvDim // values, or F16 pairs, a row
	if c.f16 {
		width /= 2
	}
	count := n * width
	for i, v := range [...]int{count, width, pos, s.slots} {
		s.params.SetU32(i, uint32(v))
	}
	s.dispatch((count + workgroup - 1) / workgroup)
	return nil
}
