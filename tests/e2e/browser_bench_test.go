//go:build !js

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/modelgen"
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

// TestBrowserWorkersBenchmark measures a model split across Web Workers
// (load option workers) against one worker, in Chromium through the page's
// API: warm decode tokens/s with 1 and 2 workers (runs alternate, median of
// three), worker 0's wait per gather (timings.exchangeMs / exchanges), and
// each worker's WebAssembly memory; and, for scale, the round trip of a bare
// postMessage between the page and a plain worker over a MessageChannel.
// It is a measurement, not a check, so it runs only when asked:
// WASMLM_BENCH_WORKERS=1 runs the default model and a stories15M-shape Q8_0
// model on the SIMD128 kernels; WASMLM_BENCH_WORKERS=full also stories15M
// Q4_0 and stories110M Q8_0 and Q4_0 (random weights, internal/modelgen,
// cached in the temp directory), and the Q8_0 models on the pure-Go kernels
// too (simd: false, as in a browser without SIMD). It writes
// artifacts/workers-benchmark.json. (make bench measures 1 and 2 workers
// on every benchmark model too: the chromium-2w hosts.)
func TestBrowserWorkersBenchmark(t *testing.T) {
	if os.Getenv("WASMLM_BENCH_WORKERS") == "" {
		t.Skip("a measurement: set WASMLM_BENCH_WORKERS=1 (or full) to run it")
	}
	names := []string{"stories15M-Q8_0"}
	type config struct {
		model string
		simd  bool
	}
	configs := []config{{"stories260K", true}, {"stories15M-Q8_0", true}}
	if os.Getenv("WASMLM_BENCH_WORKERS") == "full" {
		names = append(names, "stories15M-Q4_0", "stories110M-Q8_0", "stories110M-Q4_0")
		configs = append(configs, config{"stories15M-Q4_0", true}, config{"stories110M-Q8_0", true}, config{"stories110M-Q4_0", true},
			config{"stories15M-Q8_0", false}, config{"stories110M-Q8_0", false})
	}
	models := map[string]string{"stories260K": ""} // name → URL ("" : the default model)
	srv := serveModels(t, names)
	for _, n := range names {
		models[n] = srv + "/" + n + ".gguf"
	}

	type run struct {
		Workers         int       `json:"workers"`
		TokensPerSecond float64   `json:"tokensPerSecond"`
		ExchangeMs      float64   `json:"exchangeMs"`
		Exchanges       int       `json:"exchanges"`
		Memory          []float64 `json:"memory"`
	}
	report := map[string]any{}
	tb := newTab(t, blankPage)
	pingPong := eval[float64](t, tb, `(async () => {
		const src = 'onmessage = (e) => { const p = e.data; p.onmessage = (m) => p.postMessage(m.data); };';
		const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
		// A worker echoes every message on its end of a channel: page → worker → page.
		const a = new Worker(url);
		const ch = new MessageChannel();
		a.postMessage(ch.port1, [ch.port1]);
		const p = ch.port2;
		const rounds = 2000;
		await new Promise((resolve) => { let n = 0; p.onmessage = () => { if (++n === 100) resolve(); else p.postMessage(n); }; p.postMessage(0); });
		const t0 = performance.now();
		await new Promise((resolve) => { let n = 0; p.onmessage = () => { if (++n === rounds) resolve(); else p.postMessage(new Float32Array(64)); }; p.postMessage(0); });
		const ms = (performance.now() - t0) / rounds;
		a.terminate();
		return ms;
	})()`)
	report["postMessageRoundTripMs"] = pingPong
	t.Logf("bare postMessage round trip page ↔ worker over a MessageChannel: %.3f ms", pingPong)

	for _, c := range configs {
		name := c.model
		maxTokens := 128
		switch {
		case strings.HasPrefix(name, "stories110M") && !c.simd:
			maxTokens = 12
		case strings.HasPrefix(name, "stories110M") || !c.simd:
			maxTokens = 48
		}
		if !c.simd {
			name += "-PureGo"
		}
		tb := newTab(t, blankPage)
		runs := eval[[]run](t, tb, apiScript(`
			const url = `+jsonString(t, models[c.model])+` || undefined;
			const opts = { cache: false, simd: `+strconv.FormatBool(c.simd)+` };
			const lms = { 1: await WasmLM.load(url, { ...opts, workers: 1 }), 2: await WasmLM.load(url, { ...opts, workers: 2 }) };
			for (const lm of Object.values(lms)) await lm.generate('Once', { temperature: 0, maxTokens: 8 }); // warm up
			const out = [];
			for (let i = 0; i < 3; i++) {
				for (const [n, lm] of Object.entries(lms)) {
					const r = await lm.generate('Once upon a time', { temperature: 0, maxTokens: `+strconv.Itoa(maxTokens)+` });
					out.push({ workers: Number(n), tokensPerSecond: r.timings.decodeTokensPerSecond, exchangeMs: r.timings.exchangeMs,
						exchanges: r.timings.exchanges, memory: r.wasmMemoryBytesPerWorker ?? [r.wasmMemoryBytes] });
				}
			}
			for (const lm of Object.values(lms)) lm.unload();
			return out;
		`))
		byWorkers := map[int][]run{}
		for _, r := range runs {
			byWorkers[r.Workers] = append(byWorkers[r.Workers], r)
		}
		entry := map[string]any{}
		for _, n := range []int{1, 2} {
			rs := byWorkers[n]
			require.Len(t, rs, 3, "%s, %d workers", name, n)
			slices.SortFunc(rs, func(a, b run) int { return cmpFloat(a.TokensPerSecond, b.TokensPerSecond) })
			med := rs[1]
			perGather := 0.0
			if med.Exchanges > 0 {
				perGather = med.ExchangeMs / float64(med.Exchanges)
			}
			entry[strconv.Itoa(n)+"w"] = map[string]any{
				"decodeTokensPerSecond": med.TokensPerSecond, "exchangeMsPerGather": perGather, "memoryBytesPerWorker": med.Memory,
			}
			t.Logf("%-23s %d worker(s): %7.1f tokens/s, worker 0 waits %.3f ms per gather, memory %v MiB",
				name, n, med.TokensPerSecond, perGather, mibs(med.Memory))
		}
		entry["loadAverage"] = loadAverage()
		report[name] = entry
	}
	out, err := json.MarshalIndent(report, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(artifactPath(t, "workers-benchmark.json"), out, 0o644))
}

// loadAverage is the machine's 1-minute load average ("" where unknown): the
// machine is shared, and other work slows every number.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Fields(string(b))[0]
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func mibs(bytes []float64) []string {
	out := make([]string, len(bytes))
	for i, b := range bytes {
		out[i] = strconv.FormatFloat(b/(1<<20), 'f', 1, 64)
	}
	return out
}

// serveModels writes the named benchmark models (internal/modelgen's
// BenchModels) into a cache directory under the temp directory, unless they
// are there already, and serves them on another origin (with CORS, as a CDN
// would); it returns the base URL.
func serveModels(t *testing.T, names []string) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "wasmlm-e2e-models-v"+strconv.Itoa(modelgen.Version))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	all, err := modelgen.BenchModels(modelgen.ShapeNames()...)
	require.NoError(t, err)
	for _, name := range names {
		i := slices.IndexFunc(all, func(m modelgen.Model) bool { return m.Name == name })
		require.GreaterOrEqual(t, i, 0, "no benchmark model %s", name)
		path := filepath.Join(dir, name+".gguf")
		if _, err := os.Stat(path); err == nil {
			continue
		}
		data, err := modelgen.Build(all[i].Spec)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path+".tmp", data, 0o644))
		require.NoError(t, os.Rename(path+".tmp", path))
	}
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
