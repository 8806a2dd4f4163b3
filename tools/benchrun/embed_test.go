//go:build !js

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tools/benchdoc"
)

// embedRows takes llama.cpp's faster mode, leaves errors out, and the
// target is Chromium's rate over llama.cpp 1t's on MiniLM-L6 only.
func TestEmbedRowsAndTargets(t *testing.T) {
	r := func(host, model, shape string, batch int, mode string, perSecond float64, err string) EmbedResult {
		x := EmbedResult{Host: host, Model: model, Shape: shape, TensorType: "F16", Tokens: 32, Batch: batch, Mode: mode,
			Seconds: []float64{float64(batch) / perSecond}, Error: err, LoadAverage1m: perSecond / 100}
		x.finish()
		return x
	}
	rep := Report{Settings: Settings{Rounds: 1, WarmupMS: 1000}, Embeds: []EmbedResult{
		r("llama.cpp-1t", "minilm-l6-F16", "minilm-l6", 1, modeSequences, 100, ""),
		r("llama.cpp-1t", "minilm-l6-F16", "minilm-l6", 16, modeSequences, 200, ""),
		r("llama.cpp-1t", "minilm-l6-F16", "minilm-l6", 16, modeSequential, 300, ""),
		r("chromium-simd", "minilm-l6-F16", "minilm-l6", 1, "", 40, ""),
		r("chromium-simd", "minilm-l6-F16", "minilm-l6", 16, "", 150, ""),
		r("native", "minilm-l6-F16", "minilm-l6", 16, "", 0, "boom"),
		r("llama.cpp-1t", "bge-base-F16", "bge-base", 1, modeSequences, 10, ""),
		r("chromium-simd", "bge-base-F16", "bge-base", 1, "", 1, ""),
	}}
	rows := embedRows(rep)
	require.Len(t, rows, 3)
	assert.Equal(t, modeSequential, rows[1].By["llama.cpp-1t"].Mode, "the faster mode")
	assert.NotContains(t, rows[1].By, "native", "an error has no cell")
	e := benchTargets(t).Embed
	ts := embedTargets(rows, e)
	require.Len(t, ts, 2, "MiniLM's rows only")
	assert.InDelta(t, 0.4, ts[0].Ratio, 1e-9)
	assert.False(t, ts[0].Met)
	assert.InDelta(t, 0.5, ts[1].Ratio, 1e-9)
	assert.True(t, ts[1].Met, "0.5× is enough")

	var b strings.Builder
	printEmbed(&b, rep, e)
	out := b.String()
	assert.Contains(t, out, "| minilm-l6 F16 | 32 × 16 | 300.0¹ | 150.0 | 0.50× | — | 1.5–3.0 |")
	assert.Contains(t, out, "| minilm-l6 F16 | 32 × 1 | 40.0 | 100.0 | 0.40× | missed |")
	assert.Contains(t, out, "1 of 2 met")
	assert.Contains(t, out, "minilm-l6-F16 on native: boom")
	assert.Len(t, benchdoc.Tables(out), 2)
}
