package sampling

// rng is xorshift64* (Marsaglia 2003, with Vigna's multiplier, 2016): 64 bits
// of state, a full period of 2**64-1, and the same integers on every platform
// because it uses nothing but shifts, xors and one wrapping multiplication.
// The sampler owns one, so no package state is shared between samplers.
type rng struct {
	x uint64 // never 0: xorshift maps 0 to itself forever
}

// zeroStateReplacement is the state used when splitmix64(seed) is 0, which
// happens for exactly one seed (0x61C8864680B583EB): splitmix64 is a bijection.
const zeroStateReplacement = 0x9E3779B97F4A7C15

// splitmix64 scrambles a seed into a starting state, so that nearby seeds
// (0, 1, 2, ...) give unrelated streams (Steele, Lea and Flood 2014).
func splitmix64(seed uint64) uint64 {
	z := seed + 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// newRNG returns the generator for seed; every seed, 0 included, is valid.
func newRNG(seed uint64) rng {
	x := splitmix64(seed)
	if x == 0 {
		x = zeroStateReplacement
	}
	return rng{x: x}
}

// next advances the state and returns the next 64-bit output.
func (r *rng) next() uint64 {
	x := r.x
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	r.x = x
	return x * 0x2545F4914F6CDD1D
}

// float64 returns a uniform number in [0, 1) from the top 53 bits of next,
// which are the best-mixed bits of xorshift64* and exactly fill a float64
// mantissa, so every value is a multiple of 2**-53 and 1 is never returned.
func (r *rng) float64() float64 {
	return float64(r.next()>>11) * 0x1p-53
}
