//go:build !js

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBrowserBenchmark measures what the README reports, through the page's
// own API: the .wasm size raw and gzipped, the demo page's time from
// navigation to model-ready (cold, then warm from the caches), and decode
// tokens/s of the default model in Chromium, with the cost of yielding to
// the event loop between tokens, on the SIMD128 kernels (the default) and
// on the pure-Go ones (load option simd: false; keys ending in PureGo). It
// writes artifacts/benchmark.json.
func TestBrowserBenchmark(t *testing.T) {
	s := webSite(t)
	wasm, err := os.ReadFile(filepath.Join(s.dist, "wasmlm.wasm"))
	require.NoError(t, err)
	var gz bytes.Buffer
	w, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	require.NoError(t, err)
	_, err = w.Write(wasm)
	require.NoError(t, err)
	require.NoError(t, w.Close())

	// A fresh browser context has empty caches: the first visit is cold.
	page := newTab(t, "/", chromedp.WithNewBrowserContext())
	ready := `document.getElementById('status').dataset.state === 'ready'`
	waitFor(t, page, ready, 30*time.Second)
	cold := eval[float64](t, page, `wasmlmDemo.readyAt`)
	require.NoError(t, chromedp.Do(page.ctx, chromedp.Reload()))
	waitFor(t, page, ready, 30*time.Second)
	warm := eval[float64](t, page, `wasmlmDemo.readyAt`)
	assert.Contains(t, text(t, page, "status"), "(from cache)")

	tb := newTab(t, blankPage)
	type run struct {
		TokensPerSecond float64 `json:"tokensPerSecond"`
		YieldMsPerToken float64 `json:"yieldMsPerToken"`
		Tokens          int     `json:"tokens"`
	}
	bench := eval[struct {
		Runs map[string][]run `json:"runs"`
		SIMD map[string]bool  `json:"simd"`
	}](t, tb, apiScript(`
		// Both models load first and take turns, so a machine whose load
		// changes during the run slows both alike.
		const models = { '': await WasmLM.load(undefined, { simd: true }), PureGo: await WasmLM.load(undefined, { simd: false }) };
		const out = {}, simdUsed = {};
		for (const [suffix, lm] of Object.entries(models)) {
			simdUsed[suffix] = lm.info.simd;
			await lm.generate('', { maxTokens: 50 }); // warm up
		}
		const one = async (suffix, key, options) => {
			const s = models[suffix].stream('Once upon a time', { maxTokens: 256, ...options });
			for await (const c of s) {}
			const t = (await s.result).timings;
			(out[key + suffix] ??= []).push({ tokensPerSecond: t.decodeTokensPerSecond, yieldMsPerToken: t.yieldMs / t.decodeTokens, tokens: t.decodeTokens + 1 });
		};
		for (let i = 0; i < 5; i++) {
			for (const suffix of Object.keys(models)) {
				await one(suffix, 'greedy', { temperature: 0 });
				await one(suffix, 'sampled', { seed: i });
				await one(suffix, 'traced', { seed: i, trace: true });
			}
		}
		for (const lm of Object.values(models)) lm.unload();
		return { runs: out, simd: simdUsed };
	`))
	assert.Equal(t, map[string]bool{"": true, "PureGo": false}, bench.SIMD, "lm.info.simd of the two loads")
	runs := bench.Runs
	median := func(rs []run, f func(run) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	report := map[string]any{
		"wasmBytes": len(wasm), "wasmGzipBytes": gz.Len(), "simd": bench.SIMD[""],
		"pageReadyColdMs": cold, "pageReadyWarmMs": warm,
	}
	for _, key := range slices.Sorted(maps.Keys(runs)) {
		rs := runs[key]
		require.NotEmpty(t, rs)
		tps := median(rs, func(r run) float64 { return r.TokensPerSecond })
		yield := median(rs, func(r run) float64 { return r.YieldMsPerToken })
		assert.Positive(t, tps, key)
		report[key+"TokensPerSecond"] = tps
		report[key+"YieldMsPerToken"] = yield
		t.Logf("%-13s decode %6.0f tokens/s (median of %d), yielding %.3f ms/token", key, tps, len(rs), yield)
	}
	t.Logf("wasmlm.wasm %d bytes, %d gzipped; demo page ready %.0f ms after navigation (cold), %.0f ms (warm)",
		len(wasm), gz.Len(), cold, warm)
	out, err := json.MarshalIndent(report, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(artifactPath(t, "benchmark.json"), out, 0o644))
}
