package gpu_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// TestKVStore checks the stored keys and values: an F32 cache's are the
// values, an F16 cache's the engine's own encoding of them, bit for bit
// (rounded to nearest, ties to even; values that tie included), in the
// rows of their positions, round a ring of 5 in the second layer.
func TestKVStore(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const context, kvDim, n, pos, ring = 12, 24, 3, 8, 5
	for _, f16 := range []bool{false, true} {
		e := newEnv(t)
		cache, err := gpu.NewRingKVCache(e.host, context, kvDim, f16, []int{context, ring})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cache.Destroy)
		k, v := random(r, (ring+1)*kvDim, 3), random(r, (ring+1)*kvDim, 70000) // past F16's largest
		k[0], k[1], k[2] = 1+1.0/2048, 1+3.0/2048, 3e-6                        // ties to even, and an F16 subnormal
		store, err := gpu.NewKVStore(e.lib, e.pass, cache, 1, e.upload(k), e.upload(v))
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Record(n, pos); err != nil {
			t.Fatal(err)
		}
		e.run()
		for _, c := range []struct {
			name string
			buf  gpu.Buffer
			want []float32
		}{{"keys", cache.Keys(1), k}, {"values", cache.Values(1), v}} {
			size := 4
			if f16 {
				size = 2
			}
			got := make([]byte, size*ring*kvDim)
			if err := e.host.Read(c.buf, 0, got); err != nil {
				t.Fatal(err)
			}
			for j, w := range c.want[:n*kvDim] {
				i := (pos+j/kvDim)%ring*kvDim + j%kvDim // its row's
				if !f16 {
					if g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); g != w {
						t.Errorf("f32 %s[%d] = %v, want %v", c.name, i, g, w)
					}
					continue
				}
				var bits [1]uint16
				tensor.EncodeF16(bits[:], []float32{w})
				if g := binary.LittleEndian.Uint16(got[2*i:]); g != bits[0] {
					t.Errorf("f16 %s[%d] of %v = %#04x, want %#04x", c.name, i, w, g, bits[0])
				}
			}
		}
		if err := store.Record(n, context-2); err == nil {
			t.Error("positions past the cache were recorded")
		}
		if err := store.Record(ring+1, 0); err == nil {
			t.Error("more positions than the ring holds were recorded")
		}
	}
}
