package modelsource

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wasmlm/wasmlm/engine"
)

// TestContextFor: the context is the longest whose estimate fits the
// budget — one position more does not — capped by the model's context and
// engine.DefaultContextLength, and 0 when not even one position fits.
func TestContextFor(t *testing.T) {
	c := engine.Config{Dim: 768, HiddenDim: 2048, Layers: 12, Heads: 12, KVHeads: 12, VocabSize: 32000, ContextLength: 1024}
	long := c
	long.ContextLength = 1 << 20
	const weights = 60 << 20
	at := func(c engine.Config, n int) int64 { return engine.EstimateMemory(c, weights, n, engine.KVF16).Total }
	cases := []struct {
		name   string
		c      engine.Config
		budget int64
		want   int
	}{
		{"the model's context fits", c, DefaultBudget << 1, 1024},
		{"the default context caps a long one", long, 1 << 40, engine.DefaultContextLength},
		{"exactly 700 positions", c, at(c, 700), 700},
		{"one byte short of 700", c, at(c, 700) - 1, 699},
		{"not one position", c, at(c, 1) - 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := ContextFor(tc.c, weights, engine.KVF16, tc.budget)
			assert.Equal(t, tc.want, n)
			if n > 0 && n < min(tc.c.ContextLength, engine.DefaultContextLength) {
				assert.LessOrEqual(t, at(tc.c, n), tc.budget)
				assert.Greater(t, at(tc.c, n+1), tc.budget)
			}
		})
	}
}

// TestFit: F32 while the model's whole context fits the budget with it,
// F16 and the longest context that fits once it does not.
func TestFit(t *testing.T) {
	c := engine.Config{Dim: 768, HiddenDim: 2048, Layers: 12, Heads: 12, KVHeads: 12, VocabSize: 32000, ContextLength: 1024}
	const weights = 60 << 20
	full := func(kv engine.KVType) int64 { return engine.EstimateMemory(c, weights, 1024, kv).Total }
	cases := []struct {
		name   string
		budget int64
		kv     engine.KVType
		n      int
	}{
		{"the whole context in F32", full(engine.KVF32), engine.KVF32, 1024},
		{"one byte short: the whole context in F16", full(engine.KVF32) - 1, engine.KVF16, 1024},
		{"less: F16, shorter", full(engine.KVF16) - 1, engine.KVF16, 1023},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kv, n := Fit(c, weights, tc.budget)
			assert.Equal(t, tc.kv, kv)
			assert.Equal(t, tc.n, n)
		})
	}
}
