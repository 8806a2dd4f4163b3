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
// (rounded to nearest, ties to even; values that tie included).
func TestKVStore(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const layers, context, kvDim, n, pos = 2, 12, 24, 3, 7
	for _, f16 := range []bool{false, true} {
		e := newEnv(t)
		cache, err := gpu.NewKVCache(e.host, layers, context, kvDim, f16)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cache.Destroy)
		k, v := random(r, n*kvDim, 3), random(r, n*kvDim, 70000) // past F16's largest
		k[0], k[1], k[2] = 1+1.0/2048, 1+3.0/2048, 3e-6          // ties to even, and an F16 subnormal
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
			got := make([]byte, size*n*kvDim)
			if err := e.host.Read(c.buf, size*pos*kvDim, got); err != nil {
				t.Fatal(err)
			}
			for i, w := range c.want {
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
	}
}
