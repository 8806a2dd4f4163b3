//go:build !js

package e2e

import (
	"bytes"
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
	"github.com/wasmlm/wasmlm/models"
)

// The sizes of the site's files that README.md and web/README.md state, as
// bounds (MB = 10⁶ bytes, KB = 10³; gzipped at gzip's default level): a
// build that outgrows one must change the READMEs with this table.
var siteSizeBounds = []struct {
	file           string
	bytes, gzBytes int
}{
	{"wasmlm.wasm", 9_000_000, 2_450_000},        // "at most 9 MB (2.45 MB gzipped)"
	{"wasmlm-serve.wasm", 12_500_000, 3_200_000}, // "at most 12.5 MB (3.2 MB gzipped)": wasmlm.wasm with lm.serve's httpapi and net/http
	{"wasmlm-simd.wasm", 90_000, 14_000},         // "under 90 KB each (14 KB each gzipped)"
	{"wasmlm-simd-relaxed.wasm", 90_000, 14_000}, // the same
	{"simd.js", 8_000, 3_000},                    // "under 8 KB (3 KB gzipped)"
}

// TestBrowserSiteSizes: the files of `make web` are within the sizes the
// READMEs state, and the site ships the embedded default model (whose size
// package models' test holds to the READMEs' number).
func TestBrowserSiteSizes(t *testing.T) {
	s := webSite(t)
	for _, c := range siteSizeBounds {
		b, err := os.ReadFile(filepath.Join(s.dist, c.file))
		require.NoError(t, err)
		gz := gzipSize(t, b)
		t.Logf("%-28s %9d bytes, %9d gzipped", c.file, len(b), gz)
		assert.Less(t, len(b), c.bytes, c.file)
		assert.Less(t, gz, c.gzBytes, "%s gzipped", c.file)
	}
	model, err := os.ReadFile(filepath.Join(s.dist, "models", models.DefaultFile))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(models.Default(), model), "the site's default model is the embedded one")
}

// The demo page keeps the default model in Cache Storage: a reload reads it
// from there, with no request to the server, and the status says so.
func TestBrowserDemoPageReloadsFromCache(t *testing.T) {
	const modelPath = "/models/" + models.DefaultFile
	page := newTab(t, "/", chromedp.WithNewBrowserContext()) // empty caches
	ready := `document.getElementById('status').dataset.state === 'ready'`
	waitFor(t, page, ready, 30*time.Second)
	assert.NotContains(t, text(t, page, "status"), "(from cache)", "a fresh profile has nothing cached")
	fetched := page.site.requests(modelPath)
	require.NoError(t, chromedp.Do(page.ctx, chromedp.Reload()))
	waitFor(t, page, ready, 30*time.Second)
	assert.Contains(t, text(t, page, "status"), "(from cache)")
	assert.Equal(t, fetched, page.site.requests(modelPath), "the reload must not fetch the model again")
}

// BenchmarkBrowserDefaultModel measures what web/README.md ("Size and
// speed") reports, in headless Chromium through the page's own API: the
// demo page's time from navigation to model-ready, cold (a fresh profile)
// then warm (reloaded: the model from Cache Storage, the .wasm from the HTTP
// cache); and decode tokens/s of the default model, greedy, sampled with
// the default options and with trace: true, on the SIMD128 kernels (the
// default) and on the pure-Go ones (simd: false), with the time the worker
// spends yielding to its event loop per token. Both models load first and
// take turns, five rounds, so a machine whose load changes slows both alike;
// the speeds are the medians. Run it with `make bench-e2e` or
//
//	go test -run '^$' -bench BrowserDefaultModel -benchtime 1x ./tests/e2e/
func BenchmarkBrowserDefaultModel(b *testing.B) {
	webSite(b)
	type run struct {
		TokensPerSecond float64 `json:"tokensPerSecond"`
		YieldMsPerToken float64 `json:"yieldMsPerToken"`
	}
	var (
		cold, warm float64
		runs       map[string][]run
	)
	for b.Loop() {
		// A fresh browser context has empty caches: the first visit is cold.
		page := newTab(b, "/", chromedp.WithNewBrowserContext())
		ready := `document.getElementById('status').dataset.state === 'ready'`
		waitFor(b, page, ready, 30*time.Second)
		cold = eval[float64](b, page, `wasmlmDemo.readyAt`)
		require.NoError(b, chromedp.Do(page.ctx, chromedp.Reload()))
		waitFor(b, page, ready, 30*time.Second)
		warm = eval[float64](b, page, `wasmlmDemo.readyAt`)
		require.Contains(b, text(b, page, "status"), "(from cache)", "the warm load must come from the cache")

		tb := newTab(b, blankPage)
		got := eval[struct {
			Runs map[string][]run `json:"runs"`
			SIMD map[string]bool  `json:"simd"`
		}](b, tb, apiScript(`
			const models = { simd: await WasmLM.load(undefined, { simd: true }), purego: await WasmLM.load(undefined, { simd: false }) };
			const out = {}, simdUsed = {};
			for (const [kernels, lm] of Object.entries(models)) {
				simdUsed[kernels] = lm.info.simd;
				await lm.generate('', { maxTokens: 50 }); // warm up
			}
			const one = async (kernels, key, options) => {
				const s = models[kernels].stream('Once upon a time', { maxTokens: 256, ...options });
				for await (const c of s) {}
				const t = (await s.result).timings;
				(out[key + '-' + kernels] ??= []).push({ tokensPerSecond: t.decodeTokensPerSecond, yieldMsPerToken: t.yieldMs / t.decodeTokens });
			};
			for (let i = 0; i < 5; i++) {
				for (const kernels of Object.keys(models)) {
					await one(kernels, 'greedy', { temperature: 0 });
					await one(kernels, 'sampled', { seed: i });
					await one(kernels, 'traced', { seed: i, trace: true });
				}
			}
			for (const lm of Object.values(models)) lm.unload();
			return { runs: out, simd: simdUsed };
		`))
		require.Equal(b, map[string]bool{"simd": true, "purego": false}, got.SIMD, "lm.info.simd of the two loads")
		runs = got.Runs
	}
	b.ReportMetric(cold, "ready-cold-ms")
	b.ReportMetric(warm, "ready-warm-ms")
	for _, key := range slices.Sorted(maps.Keys(runs)) {
		rs := runs[key]
		tps := median(rs, func(r run) float64 { return r.TokensPerSecond })
		yield := median(rs, func(r run) float64 { return r.YieldMsPerToken })
		b.ReportMetric(tps, key+"-tok/s")
		b.ReportMetric(yield, key+"-yield-ms/token")
	}
	b.ReportMetric(loadAverage(b), "load-1m")
}

// median is the median of f over xs.
func median[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// BenchmarkBrowserWorkers measures a model split across Web Workers (load
// option workers) against one worker, in Chromium through the page's API:
// warm decode tokens/s with 1 and 2 workers (runs alternate, median of
// three), in a page that is not cross-origin isolated (the workers
// exchange by postMessage) and, sub-benchmarks -SharedMemory, in one that
// is (through shared memory), worker 0's wait per exchange (timings.exchangeMs / exchanges),
// and each worker's WebAssembly memory; and, for scale, the round trip of a
// bare postMessage between the page and a plain worker over a
// MessageChannel (sub-benchmark postMessage); and prompt tokens/s of a
// prompt of about 130 tokens (evaluated in blocks, with 2 workers each
// exchange carrying a block's parts). It runs the default model and a stories15M-shape Q8_0
// model on the SIMD128 kernels; with WASMLM_BENCH_WORKERS=full also
// stories15M Q4_0 and stories110M Q8_0 and Q4_0 (random weights,
// internal/modelgen, cached in the temp directory), and the Q8_0 models on
// the pure-Go kernels too (simd: false, as in a browser without SIMD);
// WASMLM_BENCH_WORKERS=name,… runs those benchmark models alone, with
// SIMD. Run it with `make bench-e2e` or
//
//	go test -run '^$' -bench BrowserWorkers -benchtime 1x ./tests/e2e/
//
// (make bench measures 1 and 2 workers on every benchmark model too: the
// chromium-2w hosts.)
func BenchmarkBrowserWorkers(b *testing.B) {
	b.Run("postMessage", func(b *testing.B) {
		tb := newTab(b, blankPage)
		var ms float64
		for b.Loop() {
			ms = eval[float64](b, tb, `(async () => {
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
		}
		b.ReportMetric(ms, "round-trip-ms")
	})

	type config struct {
		model string // "stories260K" (the default model) or a benchmark model's name
		simd  bool
	}
	configs := []config{{"stories260K", true}, {"stories15M-Q8_0", true}}
	switch env := os.Getenv("WASMLM_BENCH_WORKERS"); env {
	case "":
	case "full":
		configs = append(configs, config{"stories15M-Q4_0", true}, config{"stories110M-Q8_0", true}, config{"stories110M-Q4_0", true},
			config{"stories15M-Q8_0", false}, config{"stories110M-Q8_0", false})
	default:
		configs = nil
		for name := range strings.SplitSeq(env, ",") {
			configs = append(configs, config{name, true})
		}
	}
	for _, c := range configs {
		name := c.model
		if !c.simd {
			name += "-PureGo"
		}
		b.Run(name, func(b *testing.B) { benchmarkWorkers(b, c.model, c.simd, false) })
		b.Run(name+"-SharedMemory", func(b *testing.B) { benchmarkWorkers(b, c.model, c.simd, true) })
	}
}

// benchmarkWorkers is one model of BenchmarkBrowserWorkers, in a page that
// is cross-origin isolated (isolatedSite: the workers exchange through
// shared memory) or not (postMessage).
func benchmarkWorkers(b *testing.B, model string, simd, isolated bool) {
	url := "" // the default model
	if model != "stories260K" {
		url = serveModels(b, []string{model}) + "/" + model + ".gguf"
	}
	maxTokens := 128
	switch {
	case strings.HasPrefix(model, "stories110M") && !simd:
		maxTokens = 12
	case strings.HasPrefix(model, "stories110M") || !simd:
		maxTokens = 48
	}
	type run struct {
		Workers         int       `json:"workers"`
		TokensPerSecond float64   `json:"tokensPerSecond"`
		ExchangeMs      float64   `json:"exchangeMs"`
		Exchanges       int       `json:"exchanges"`
		Memory          []float64 `json:"memory"`
		PromptTokens    int       `json:"promptTokens"`    // evaluated of the long prompt
		PromptPerSecond float64   `json:"promptPerSecond"` // their rate
	}
	site := webSite(b)
	if isolated {
		site = isolatedSite(b)
	}
	tb := openTab(b, site, blankPage, nil)
	var runs []run
	for b.Loop() {
		runs = eval[[]run](b, tb, apiScript(`
			const url = `+jsonString(b, url)+` || undefined;
			const opts = { cache: false, simd: `+strconv.FormatBool(simd)+` };
			const lms = { 1: await WasmLM.load(url, { ...opts, workers: 1 }), 2: await WasmLM.load(url, { ...opts, workers: 2 }) };
			if (lms[2].info.exchange !== `+jsonString(b, map[bool]string{true: "shared-memory", false: "messages"}[isolated])+`) throw new Error('exchange: ' + lms[2].info.exchange);
			for (const lm of Object.values(lms)) await lm.generate('Once', { temperature: 0, maxTokens: 8 }); // warm up
			const out = [];
			// A prompt of 128 tokens or a few more, whatever the tokenizer.
			const words = 'Once upon a time there was a little girl named Lily who liked to play outside in the sun'.split(' ');
			let long = '';
			for (let k = 0; (await lms[1].tokenize(long)).length < 128; k++) long += words[k % words.length] + ' ';
			for (let i = 0; i < 3; i++) {
				for (const [n, lm] of Object.entries(lms)) {
					const r = await lm.generate('Once upon a time', { temperature: 0, maxTokens: `+strconv.Itoa(maxTokens)+` });
					// Each run's prompt differs from its second word: the cache gives back no more than that.
					const p = await lm.generate('Run ' + i + '. ' + long, { temperature: 0, maxTokens: 1 });
					out.push({ workers: Number(n), tokensPerSecond: r.timings.decodeTokensPerSecond, exchangeMs: r.timings.exchangeMs,
						exchanges: r.timings.exchanges, memory: r.wasmMemoryBytesPerWorker ?? [r.wasmMemoryBytes],
						promptTokens: p.timings.prefillTokens, promptPerSecond: p.timings.prefillTokensPerSecond });
				}
			}
			for (const lm of Object.values(lms)) lm.unload();
			return out;
		`))
	}
	for _, n := range []int{1, 2} {
		var rs []run
		for _, r := range runs {
			if r.Workers == n {
				rs = append(rs, r)
			}
		}
		require.Len(b, rs, 3, "%d workers", n)
		slices.SortFunc(rs, func(x, y run) int { return cmpFloat(x.TokensPerSecond, y.TokensPerSecond) })
		med := rs[1]
		w := strconv.Itoa(n) + "w"
		b.ReportMetric(med.TokensPerSecond, w+"-tok/s")
		b.ReportMetric(slices.Max(med.Memory)/(1<<20), w+"-MiB/worker")
		if n > 1 {
			require.Positive(b, med.Exchanges, "a split model exchanges activations")
			b.ReportMetric(med.ExchangeMs/float64(med.Exchanges), w+"-ms/exchange")
		}
		b.Logf("%d worker(s): %7.1f tokens/s, memory per worker %v MiB", n, med.TokensPerSecond, mibs(med.Memory))
		slices.SortFunc(rs, func(x, y run) int { return cmpFloat(x.PromptPerSecond, y.PromptPerSecond) })
		med = rs[1]
		require.Greater(b, med.PromptTokens, 100, "a long prompt, evaluated")
		b.ReportMetric(med.PromptPerSecond, w+"-prompt-tok/s")
		b.Logf("%d worker(s): %7.1f prompt tokens/s (%d tokens)", n, med.PromptPerSecond, med.PromptTokens)
	}
	b.ReportMetric(loadAverage(b), "load-1m")
}

// loadAverage is the machine's 1-minute load average: the machine is
// shared, and other work slows every number.
func loadAverage(t testing.TB) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Logf("no load average: %v", err) // not Linux; the numbers stand without it
		return 0
	}
	fields := strings.Fields(string(b))
	require.NotEmpty(t, fields, "/proc/loadavg")
	v, err := strconv.ParseFloat(fields[0], 64)
	require.NoError(t, err, "/proc/loadavg")
	return v
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
func serveModels(t testing.TB, names []string) string {
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
