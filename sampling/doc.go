// Package sampling turns a logit vector into the next token id.
//
// A Sampler runs a fixed chain of small transforms configured by one Params
// struct, owns a seeded PRNG and the window of recent tokens that the
// penalties look at, and allocates nothing per token. Greedy decoding is the
// zero Params.
//
// The chain is specified below exactly, down to the order of every floating
// point sum, so that another implementation (a JS or Python port, or this one
// on another platform) picks the same ids for the same logits, Params and
// accepted tokens. Every exp is internal/fmath.Exp64, which gives the same
// bits natively and in wasm.
//
// # The chain
//
// Let n be the vocabulary size and l[i] the float32 logit of token i.
//
//  1. Input: l[i] = logits[i]; NaN becomes -Inf; ids at or beyond len(logits)
//     are -Inf (the caller is meant to pass exactly n logits).
//  2. Logit bias: l[id] = l[id] + LogitBias[id] (float32); a NaN result
//     (+Inf plus a -Inf bias) becomes -Inf, so a -Inf bias always bans.
//  3. Penalties, for every token id occurring c > 0 times in the window (the
//     last PenaltyLastN accepted tokens; 0 means 64, -1 every token accepted
//     since Reset): if RepeatPenalty R is neither 0 nor 1, l = l/R when l > 0,
//     else l = l*R; then l = l - (float32(float32(c)*FrequencyPenalty) +
//     PresencePenalty), every operation in float32.
//  4. Temperature 0: return the id of the largest l, the lowest id among
//     equals. Nothing else runs and the PRNG is not used.
//  5. Otherwise draw u (see below), then order the candidates (the tokens):
//     l descending, then id ascending (-0 equals +0). From here on index i
//     counts candidates in this order, which every later step keeps.
//  6. Top-k: when 0 < TopK < n, keep the first TopK candidates.
//  7. Temperature T: x[i] = float64(l[i]) / float64(T).
//  8. Softmax: if l[0] = -Inf (every logit is -Inf) return id 0. Else
//     w[i] = Exp64(x[i] - x[0]), or 0 when x[i] - x[0] < -42 (a weight below
//     2**-60 of the largest changes no float64 sum below, so no draw; it only
//     costs an exp); when x[0] = +Inf instead w[i] = 1 if x[i] = +Inf, else 0
//     (the +Inf tokens share the probability equally). Candidates with
//     w[i] = 0, banned ones included, leave the set (they are a suffix, as x
//     falls along the order). Z = w[0] + w[1] + ... summed in float64 in
//     order; p[i] = w[i] / Z.
//  9. Top-p: when 0 < TopP < 1, keep the first m candidates, m the smallest
//     count whose running float64 sum p[0] + ... + p[m-1] is >=
//     float64(TopP) (all of them if rounding keeps the sum below).
//  10. Min-p: when MinP > 0, keep, in order, the candidates with
//     p[i] >= float64(MinP) * p[0].
//  11. Draw: S = the float64 sum of p over the kept candidates, in order;
//     walk them in order accumulating p in float64 and return the first whose
//     running sum is > u*S. (This is drawing from the renormalised
//     probabilities p[i]/S.)
//
// # Random numbers
//
// The PRNG is xorshift64*. Its 64-bit state starts as splitmix64(Seed):
//
//	z = Seed + 0x9E3779B97F4A7C15
//	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//	state = z ^ (z >> 31)
//
// (all arithmetic mod 2**64), replaced by 0x9E3779B97F4A7C15 if it is 0, which
// only Seed 0x61C8864680B583EB gives. Each output is
//
//	x ^= x >> 12; x ^= x << 25; x ^= x >> 27; state = x
//	output = x * 0x2545F4914F6CDD1D
//
// and u = float64(output >> 11) * 2**-53, uniform in [0, 1). Every Sample call
// with Temperature > 0 draws exactly one u, before top-k, even when the result
// is forced; greedy calls draw none. Reset restarts the stream from Seed.
//
// # Edge cases
//
// Sample never panics and always returns an id in [0, n). NaN logits count as
// -Inf; if every logit is -Inf after bias and penalties, the result is 0, the
// lowest id, as argmax's tie rule gives. Every candidate left for the draw
// has a probability above 0.
package sampling
