//go:build !js

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseMaskBench reads go test -bench's lines, with and without the
// GOMAXPROCS suffix (none under GOOS=js), and skips the others.
func TestParseMaskBench(t *testing.T) {
	out := `goos: linux
BenchmarkGrammarMask/llama2-32000/schema/fresh-2         	      20	  22955143 ns/op	       123.7 tokens/gen	       106.5 us/token	        10.73 worst-ms
BenchmarkGrammarMask/qwen3-151669/json/warm          	      10	 250287974 ns/op	       65.80 tokens/gen	      630.2 us/token	        43.05 worst-ms
PASS
`
	got := parseMaskBench("wasm", out)
	require.Len(t, got, 2)
	assert.Equal(t, MaskResult{Host: "wasm", Vocabulary: "llama2-32000", Grammar: "schema", State: "fresh", Generations: 20,
		TokensPerGeneration: 123.7, MicrosPerToken: 106.5, WorstStepMS: 10.73}, got[0])
	assert.Equal(t, MaskResult{Host: "wasm", Vocabulary: "qwen3-151669", Grammar: "json", State: "warm", Generations: 10,
		TokensPerGeneration: 65.8, MicrosPerToken: 630.2, WorstStepMS: 43.05}, got[1])
}

// grammarRows takes the best round of each pass, and the overhead is
// 1/with − 1/without of those.
func TestGrammarRows(t *testing.T) {
	c := func(round int, pass string, tps float64, tokens int, valid bool) Constrained {
		return Constrained{Round: round, Pass: pass, DecodeTokensPerSecond: tps, GeneratedTokens: tokens, ValidJSON: valid}
	}
	rep := Report{Results: []Result{
		{Host: "native", Model: "plain"}, // not a grammar run
		{Host: "chromium-simd", Model: "tinyllama-Q4_0", Shape: "tinyllama", Constrained: []Constrained{
			c(0, "without", 4, 128, false), c(0, "first", 3, 120, true), c(0, "again", 4, 128, true),
			c(1, "without", 5, 128, false), c(1, "first", 4, 127, true), c(1, "again", 2, 126, false),
		}},
	}}
	rows := grammarRows(rep)
	require.Len(t, rows, 1)
	r := rows[0]
	assert.Equal(t, 5.0, r.best["without"].DecodeTokensPerSecond)
	assert.Equal(t, 4.0, r.best["first"].DecodeTokensPerSecond)
	assert.Equal(t, 4.0, r.best["again"].DecodeTokensPerSecond)
	ms, f, ok := r.overhead("first")
	require.True(t, ok)
	assert.InDelta(t, 50, ms, 1e-9) // 1/4 − 1/5 s
	assert.InDelta(t, 0.25, f, 1e-9)
	assert.Equal(t, "120–127", r.tokens("first"))
	assert.Equal(t, "128", r.tokens("without"))
	assert.Equal(t, [2]int{3, 4}, [2]int{r.valid, r.held})
	ts := grammarTargets(rep, benchTargets(t).Grammar)
	require.Len(t, ts, 4)
	assert.True(t, ts[0].Measurable)
	assert.False(t, ts[0].Met, "25% > 10%")
	assert.False(t, ts[1].Measurable, "no mask benchmark")
	assert.False(t, ts[2].Measurable, "no bigvocab row")
	rep.Masks = []MaskResult{{Host: "chromium", Vocabulary: "llama2-32000", Grammar: "schema", State: "fresh", MicrosPerToken: 10_000},
		{Host: "chromium", Vocabulary: "llama2-32000", Grammar: "schema", State: "warm", MicrosPerToken: 1000}}
	ts = grammarTargets(rep, benchTargets(t).Grammar)
	assert.True(t, ts[1].Measurable)
	assert.True(t, ts[1].Met, "10 ms of 200 ms: 5%")
	assert.Equal(t, "5.0% (10.00 ms) fresh, 0.5% (1.00 ms) warm", ts[1].Measured)
}
