#!/usr/bin/env python3
"""Independent reference for package sampling: the chain and PRNG exactly as the
package comment (doc.go) specifies them, written from that text in plain Python
(no numpy), so that TestReferenceDraws checks the documentation is enough to
reproduce the Go sampler's ids.

Regenerate with:  python3 testdata/reference_draws.py > testdata/reference_draws.json

float32 arithmetic is emulated by rounding each float64 result to float32
(exact for +, -, *, / of float32 operands: 53 >= 2*24+2). exp is math.exp,
which may differ from fmath.Exp64 in the last bit; with random logits that
changes a draw with probability around 1e-15 per step.
"""
import json
import math
import struct

M64 = (1 << 64) - 1
INF = float("inf")


def f32(x):
    """Round a float64 to the nearest float32 (as a Python float)."""
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(INF, x)


def splitmix64(seed):
    z = (seed + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class XorShift64Star:
    def __init__(self, seed):
        self.x = splitmix64(seed) or 0x9E3779B97F4A7C15

    def next(self):
        x = self.x
        x ^= x >> 12
        x ^= (x << 25) & M64
        x ^= x >> 27
        self.x = x
        return (x * 0x2545F4914F6CDD1D) & M64

    def uniform(self):
        return (self.next() >> 11) * 2.0**-53


class Sampler:
    def __init__(self, params, vocab):
        self.p = params
        self.vocab = vocab
        self.history = []
        self.rng = XorShift64Star(params.get("seed", 0))

    def accept(self, tok):
        self.history.append(tok)

    def window(self):
        n = self.p.get("penalty_last_n", 0)
        if n == 0:
            n = 64
        return self.history if n == -1 else self.history[-n:]

    def sample(self, logits):
        p = self.p
        l = [-INF if math.isnan(x) else x for x in logits]
        for tok, b in p.get("logit_bias", []):
            v = f32(l[tok] + b)
            l[tok] = -INF if math.isnan(v) else v
        counts = {}
        for tok in self.window():
            counts[tok] = counts.get(tok, 0) + 1
        rep = p.get("repeat_penalty", 0.0)
        pres = p.get("presence_penalty", 0.0)
        freq = p.get("frequency_penalty", 0.0)
        if rep not in (0, 1) or pres != 0 or freq != 0:
            for tok, c in counts.items():
                x = l[tok]
                if rep not in (0, 1):
                    x = f32(x / rep) if x > 0 else f32(x * rep)
                l[tok] = f32(x - f32(f32(c * freq) + pres))
        t = p.get("temperature", 0.0)
        if t == 0:
            return max(range(self.vocab), key=lambda i: (l[i], -i))
        u = self.rng.uniform()
        order = sorted(range(self.vocab), key=lambda i: (-l[i], i))
        k = p.get("top_k", 0)
        if 0 < k < self.vocab:
            order = order[:k]
        xs = [l[i] / t for i in order]
        if xs[0] == -INF:
            return 0
        if xs[0] == INF:
            w = [1.0 if x == INF else 0.0 for x in xs]
        else:
            w = [0.0 if x - xs[0] < -42 else math.exp(x - xs[0]) for x in xs]
        cand = [(tok, v) for tok, v in zip(order, w) if v > 0]
        z = 0.0
        for _, v in cand:
            z += v
        cand = [(tok, v / z) for tok, v in cand]
        top_p = p.get("top_p", 0.0)
        if 0 < top_p < 1:
            s = 0.0
            for m, (_, q) in enumerate(cand, 1):
                s += q
                if s >= top_p:
                    break
            cand = cand[:m]
        min_p = p.get("min_p", 0.0)
        if min_p > 0:
            threshold = min_p * cand[0][1]
            cand = [c for c in cand if c[1] >= threshold]
        total = 0.0
        for _, q in cand:
            total += q
        target = u * total
        s = 0.0
        for tok, q in cand:
            s += q
            if s > target:
                return tok
        return cand[0][0]


def lcg_normals(seed, n):
    """Deterministic pseudo-normal logits (Box-Muller over an LCG), rounded to float32."""
    state = seed
    out = []
    while len(out) < n:
        vals = []
        for _ in range(2):
            state = (state * 6364136223846793005 + 1442695040888963407) & M64
            vals.append(((state >> 11) + 1) * 2.0**-53)
        r = math.sqrt(-2 * math.log(vals[0]))
        out.append(r * math.cos(2 * math.pi * vals[1]))
        out.append(r * math.sin(2 * math.pi * vals[1]))
    return out[:n]


VOCAB = 32
STEPS = 24
PROMPT = [5, 9, 9, 2, 17, 5, 30, 9]

CASES = [
    ("temperature", {"temperature": 1.0, "seed": 1}),
    ("top_k", {"temperature": 0.8, "top_k": 6, "seed": 2}),
    ("top_p", {"temperature": 1.2, "top_p": 0.9, "seed": 3}),
    ("min_p", {"temperature": 0.7, "min_p": 0.05, "seed": 4}),
    ("hot", {"temperature": 2.5, "seed": 0}),
    ("greedy_penalties", {"repeat_penalty": 1.5, "presence_penalty": 0.4, "frequency_penalty": 0.6, "penalty_last_n": 6}),
    ("all_window_all", {"temperature": 0.9, "top_k": 20, "top_p": 0.95, "min_p": 0.02, "repeat_penalty": 1.3,
                        "presence_penalty": 0.5, "frequency_penalty": 0.3, "penalty_last_n": -1, "seed": 12345}),
    ("all_bias", {"temperature": 1.1, "top_k": 12, "top_p": 0.8, "min_p": 0.1, "repeat_penalty": 0.8,
                  "presence_penalty": -0.5, "frequency_penalty": 1.5, "penalty_last_n": 4, "seed": 2**64 - 1,
                  "logit_bias": [[3, 2.5], [7, -INF], [11, -1.5], [0, 1.0]]}),
    ("ties", {"temperature": 1.0, "top_k": 5, "top_p": 0.6, "seed": 7, "round_logits": True}),
    ("cold", {"temperature": 0.15, "seed": 8}),
    ("cold_tiny_min_p", {"temperature": 0.2, "top_p": 0.999999, "min_p": 1e-30, "seed": 9}),
]


def encode(x):
    return "-inf" if x == -INF else x


def main():
    cases = []
    for ci, (name, params) in enumerate(CASES):
        params = {k: (f32(v) if isinstance(v, float) else v) for k, v in params.items()}
        if "logit_bias" in params:
            params["logit_bias"] = [[t, f32(b)] for t, b in params["logit_bias"]]
        s = Sampler(params, VOCAB)
        for tok in PROMPT:
            s.accept(tok)
        steps = []
        for step in range(STEPS):
            logits = [f32(3 * x) for x in lcg_normals(1000 * ci + step, VOCAB)]
            if params.get("round_logits"):
                logits = [f32(round(x)) for x in logits]
            tok = s.sample(logits)
            s.accept(tok)
            steps.append({"logits": logits, "id": tok})
        out = {k: v for k, v in params.items() if k not in ("logit_bias", "round_logits")}
        if "logit_bias" in params:
            out["logit_bias"] = [[t, encode(b)] for t, b in params["logit_bias"]]
        cases.append({"name": name, "params": out, "steps": steps})
    doc = {
        "note": "generated by testdata/reference_draws.py from the package comment's specification",
        "vocab": VOCAB,
        "prompt": PROMPT,
        "cases": cases,
    }
    print(json.dumps(doc, indent=None, separators=(",", ":")))


if __name__ == "__main__":
    main()
