package sampling

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The expected numbers were computed independently with this Python 3 script
// (arbitrary-precision integers masked to 64 bits, so no shared code with rng.go):
//
//	M=(1<<64)-1
//	def splitmix64(s):
//	    z=(s+0x9E3779B97F4A7C15)&M
//	    z=((z^(z>>30))*0xBF58476D1CE4E5B9)&M
//	    z=((z^(z>>27))*0x94D049BB133111EB)&M
//	    return z^(z>>31)
//	def xs(seed,n):
//	    x=splitmix64(seed) or 0x9E3779B97F4A7C15
//	    out=[]
//	    for _ in range(n):
//	        x^=x>>12; x^=(x<<25)&M; x^=x>>27
//	        out.append((x*0x2545F4914F6CDD1D)&M)
//	    return out
//	print([hex(v) for v in xs(seed,5)], [(v>>11)*2**-53 for v in xs(seed,3)])
//
// splitmix64(0) = 0xe220a8397b1dcdaf is also the well-known first output of
// Vigna's splitmix64.c for state 0.
func TestRNGMatchesReference(t *testing.T) {
	tests := []struct {
		seed     uint64
		state    uint64
		outputs  [5]uint64
		uniforms [3]float64
	}{
		{
			seed:     0,
			state:    0xe220a8397b1dcdaf,
			outputs:  [5]uint64{0x7bbcb40d550682d0, 0xde7fe413d00cc9fd, 0xb3c638353c668c91, 0xe073afc0949195fc, 0x7f2f9e2eb34937f6},
			uniforms: [3]float64{0.4833481342839381, 0.8691389606829488, 0.7022433404894405},
		},
		{
			seed:     42,
			state:    0xbdd732262feb6e95,
			outputs:  [5]uint64{0x31b0ece7c4f697a2, 0x9008a3b1cb686f03, 0x7c7173abd97be16f, 0x45672c8c8d6b8c4f, 0xcdbd2cdf34da70ea},
			uniforms: [3]float64{0.1941059175341826, 0.5626318272656207, 0.4861061377100522},
		},
		{
			// The one seed whose splitmix64 is 0; the state falls back to 0x9E3779B97F4A7C15.
			seed:     0x61C8864680B583EB,
			state:    zeroStateReplacement,
			outputs:  [5]uint64{0xd83b3e29a21487a, 0x54c44c79f1fe9d67, 0xa845f342007a0e78, 0x7d6e0b878a794779, 0x90d8d6e5a10dd485},
			uniforms: [3]float64{0.052790873358508184, 0.33112028100185353, 0.6573173557412489},
		},
	}
	for _, tt := range tests {
		r := newRNG(tt.seed)
		assert.Equal(t, tt.state, r.x, "seed %#x state", tt.seed)
		for i, want := range tt.outputs {
			assert.Equal(t, want, r.next(), "seed %#x output %d", tt.seed, i)
		}
		r = newRNG(tt.seed)
		for i, want := range tt.uniforms {
			assert.Equal(t, want, r.float64(), "seed %#x uniform %d", tt.seed, i)
		}
	}
	assert.Equal(t, uint64(0), splitmix64(0x61C8864680B583EB))
}

func TestRNGUniformRange(t *testing.T) {
	r := newRNG(7)
	for range 100000 {
		u := r.float64()
		if u < 0 || u >= 1 {
			t.Fatalf("uniform %v outside [0, 1)", u)
		}
	}
	// The extremes of the mapping itself: 0 maps to 0, all ones to 1-2**-53.
	assert.Equal(t, 0.0, float64(uint64(0)>>11)*0x1p-53)
	assert.Less(t, float64(^uint64(0)>>11)*0x1p-53, 1.0)
}
