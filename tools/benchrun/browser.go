//go:build !js

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wasmlm/wasmlm/internal/headless"
)

// The browser host serves the `make web` site and the model directory with
// httptest on 127.0.0.1 and drives headless Chromium (the flags of
// tests/e2e) through the page's own JS API: WasmLM.load, lm.generate.

// modelsURL is where the site serves the generated models.
const modelsURL = "/bench-models/"

// blankPage is an empty page on the site's origin, to import wasmlm.js from.
const blankPage = "/__bench__/blank.html"

// browserTimeout bounds one model's run in the browser.
const browserTimeout = 20 * time.Minute

// browserHost runs the models in headless Chromium.
type browserHost struct {
	Host
	// simd is WasmLM.load's simd option: whether the page's worker runs the
	// SIMD128 kernels (wasmlm-simd.wasm) or the pure-Go ones. The run checks
	// lm.info.simd, so a browser or page that cannot is an error, not a
	// mislabelled row.
	simd bool
	// workers is WasmLM.load's workers option: how many Web Workers the
	// model is split across (0 means 1). The run checks lm.info.workers.
	workers int
	// autoWorkers asks for workers: 'auto' instead: the page chooses, and
	// the run records what it chose (Result.Workers).
	autoWorkers bool
	// wllama runs the page script of wllama (llama.cpp in WebAssembly, one
	// thread) instead of ours: see wllama.go.
	wllama bool
	// device is WasmLM.load's device option: 'cpu' (our CPU hosts) or
	// 'webgpu'. The run checks lm.info.device.
	device string
	// cache is WasmLM.load's cache option: false (the speed benchmark: the
	// page reads the model from the server) or true (the default, which the
	// memory benchmark measures: downloaded into the model cache, then read
	// from it).
	cache bool
}

// browserHosts are the browser hosts: the page with its pure-Go kernels and
// with its SIMD128 kernels, each in one Web Worker and split across two
// (the load option workers), and wllama with one thread.
func browserHosts(root string, want map[string]bool) []browserHost {
	var hosts []browserHost
	if want["chromium"] {
		hosts = append(hosts, browserHost{device: "cpu", Host: Host{Name: "chromium",
			Description: "headless Chromium, through the page's own JS API (WasmLM.load(url, {simd: false, device: 'cpu'}), lm.generate) from web/dist: one Web Worker, the pure-Go kernels"}})
	}
	if want["chromium-simd"] {
		hosts = append(hosts, browserHost{simd: true, device: "cpu", Host: Host{Name: "chromium-simd",
			Description: "the same with WasmLM.load's default simd: true: the SIMD128 kernels on the worker's Go memory, their relaxed-SIMD build (wasmlm-simd-relaxed.wasm) where Chromium has relaxed SIMD (simd_relaxed says)"}})
	}
	if want["chromium-auto"] {
		hosts = append(hosts, browserHost{simd: true, autoWorkers: true, device: "cpu", Host: Host{Name: "chromium-auto",
			Description: "chromium-simd with WasmLM.load's default workers: 'auto': as many Web Workers as the page chooses for the model and the machine (the row's workers says how many)"}})
	}
	if want["chromium-webgpu"] {
		hosts = append(hosts, browserHost{simd: true, device: "webgpu", Host: Host{Name: "chromium-webgpu",
			Description: "the page with WasmLM.load's device: 'webgpu': the forward pass on the WebGPU adapter Chromium finds (lm.info.adapter), the sampling in the worker; " +
				"beside it tools/gpuprofile in a worker of the same browser counts its dispatches and times its kernels (timestamp-query)"}})
	}
	if want["chromium-2w"] {
		hosts = append(hosts, browserHost{workers: 2, device: "cpu", Host: Host{Name: "chromium-2w",
			Description: "chromium with WasmLM.load's workers: 2: the model split across two Web Workers (each holds half the rows of every matrix; they swap activations by postMessage), the pure-Go kernels; peak memory is both workers'"}})
	}
	if want["chromium-simd-2w"] {
		hosts = append(hosts, browserHost{simd: true, workers: 2, device: "cpu", Host: Host{Name: "chromium-simd-2w",
			Description: "chromium-simd with workers: 2: the SIMD128 kernels in two Web Workers; peak memory is both workers'"}})
	}
	if want["wllama-1t"] {
		h := browserHost{wllama: true, Host: Host{Name: "wllama-1t",
			Description: "wllama (llama.cpp in WebAssembly with SIMD128, @wllama/wllama pinned in bench/package.json) in the same Chromium, one thread (no COOP/COEP), on the CPU: " +
				"the same prompt of token ids as wasmlm bench's; its own timings (prompt_per_second, predicted_per_second)"}}
		if _, err := os.Stat(filepath.Join(wllamaDir(root), "index.js")); err != nil {
			h.Skipped = "needs @wllama/wllama: make bench installs it (tools/npm-ci.sh bench)"
		}
		hosts = append(hosts, h)
	}
	return hosts
}

// browser is one headless Chromium and the site it loads.
type browser struct {
	ctx  context.Context // a chromedp context that has started the browser
	site string          // base URL
	mux  *http.ServeMux  // the site's
	// cliMounted: mountCLI has served the worker of GOOS=js programs;
	// gpuProfile: tools/gpuprofile is built and served there.
	cliMounted, gpuProfile bool
	cleanup                []func()

	mu       sync.Mutex
	problems []string // uncaught exceptions and console errors
}

// startBrowser serves dist, modelDir and wllama's module (wllamaESM, at
// wllamaURL) and starts Chromium: without a GPU (gpuFlags nil), or with
// the GPU process and gpuFlags (WebGPU on SwiftShader or on the machine's
// GPU: see gpuFlagsOf).
func startBrowser(dist, modelDir, wllamaESM string, gpuFlags map[string]any) (*browser, error) {
	for _, f := range []string{"wasmlm.js", "wasmlm.worker.js", "wasmlm.wasm", "wasm_exec.js", "models/stories260K-F16.gguf"} {
		if _, err := os.Stat(dist + "/" + f); err != nil {
			return nil, fmt.Errorf("%s is not a `make web` site: %w", dist, err)
		}
	}
	if _, err := headless.Path(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	b := &browser{mux: mux}
	mux.Handle(modelsURL, http.StripPrefix(modelsURL, http.FileServer(http.Dir(modelDir))))
	mux.Handle(wllamaURL, http.StripPrefix(wllamaURL, http.FileServer(http.Dir(wllamaESM))))
	mux.HandleFunc(blankPage, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>bench</title></head><body></body></html>`)
	})
	mux.Handle("/", http.FileServer(http.Dir(dist)))
	srv := httptest.NewServer(mux)
	b.site = srv.URL
	b.cleanup = append(b.cleanup, srv.Close)

	ctx, stop, err := headless.Start("wasmlm-bench-chromium-")
	if gpuFlags != nil {
		ctx, stop, err = headless.StartWith("wasmlm-bench-chromium-", gpuFlags)
	}
	if err != nil {
		b.close()
		return nil, err
	}
	b.cleanup = append(b.cleanup, stop)
	b.ctx = ctx
	return b, nil
}

// close stops the browser and the server.
func (b *browser) close() {
	for i := len(b.cleanup) - 1; i >= 0; i-- {
		b.cleanup[i]()
	}
}

// browserRun is what the page script returns.
type browserRun struct {
	LoadMS float64 `json:"loadMs"`
	Info   struct {
		BlockCount           int    `json:"blockCount"`
		EmbeddingLength      int    `json:"embeddingLength"`
		HeadCount            int    `json:"headCount"`
		HeadCountKv          int    `json:"headCountKv"`
		SessionContextLength int    `json:"sessionContextLength"`
		SIMD                 bool   `json:"simd"`
		SIMDRelaxed          bool   `json:"simdRelaxed"`
		SIMDReason           string `json:"simdReason"`
		Workers              int    `json:"workers"`
		FileSize             int    `json:"fileSize"`
		KVType               string `json:"kvType"`
		Device               string `json:"device"`
		DeviceReason         string `json:"deviceReason"`
	} `json:"info"`
	Usage struct {
		PromptTokens     int `json:"promptTokens"`
		CompletionTokens int `json:"completionTokens"`
	} `json:"usage"`
	Timings struct {
		TimeToFirstTokenMs     float64 `json:"timeToFirstTokenMs"`
		PrefillTokens          int     `json:"prefillTokens"`
		PrefillTokensPerSecond float64 `json:"prefillTokensPerSecond"`
		DecodeTokensPerSecond  float64 `json:"decodeTokensPerSecond"`
		YieldMs                float64 `json:"yieldMs"`
	} `json:"timings"`
	FinishReason    string  `json:"finishReason"`
	WasmMemoryBytes float64 `json:"wasmMemoryBytes"`
	CacheStorage    string  `json:"cacheStorage"`
}

// pageScript loads the model at url, finds the longest prefix of a story
// text that tokenizes to at most prompt tokens (BOS included; with the
// synthetic vocabulary every byte is a token), warms up (rounds of 8 tokens
// for warmupMs, as wasmlm bench does), then generates n tokens greedily. The
// warm-up shares BOS with the measured prompt, so the session keeps it and
// the measured prefill evaluates the rest. With the model cache on, it
// says where the cache kept the model, and deletes it after the run (the
// next run loads cold, and the profile does not keep gigabytes).
const pageScript = `(async () => {
	const { WasmLM } = await import('/wasmlm.js');
	const url = %q, options = %s;
	const t0 = performance.now();
	const lm = await WasmLM.load(url, options);
	const loadMs = performance.now() - t0;
	try {
		const story = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine with her dog. ';
		let text = story;
		while ((await lm.tokenize(text)).length < %d) text += story;
		let lo = 0, hi = text.length;
		while (lo < hi) {
			const mid = (lo + hi + 1) >> 1;
			if ((await lm.tokenize(text.slice(0, mid))).length <= %d) lo = mid; else hi = mid - 1;
		}
		text = text.slice(0, lo);
		const warmupMs = %d;
		for (const t = performance.now(); warmupMs > 0;) {
			await lm.generate('Zzz', { temperature: 0, maxTokens: 8 });
			if (performance.now() - t >= warmupMs) break;
		}
		const r = await lm.generate(text, { temperature: 0, maxTokens: %d });
		const perWorker = r.wasmMemoryBytesPerWorker ?? [r.wasmMemoryBytes ?? 0];
		let cacheStorage = '';
		if (options.cache !== false) {
			const entry = (await WasmLM.cache.list()).find((e) => e.url === new URL(url, location.href).href);
			cacheStorage = entry ? entry.storage : 'none';
		}
		return { loadMs, info: lm.info, usage: r.usage, timings: r.timings, finishReason: r.finishReason,
			wasmMemoryBytes: perWorker.reduce((a, b) => a + (b ?? 0), 0), cacheStorage };
	} finally {
		lm.unload();
		if (options.cache !== false) await WasmLM.cache.delete(url);
	}
})()`

// run measures one model in a tab of its own (and so a worker of its own),
// and the memory of the tab's process (see memory.go).
func (b *browser) run(h browserHost, m benchModel, s Settings, spec runSpec, log io.Writer) Result {
	r := newResult(h.Name, m)
	ctx, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, browserTimeout)
	defer cancelTimeout()
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg, err := range messages {
			if err != nil {
				return
			}
			if msg.IsException() || msg.Type == chromedp.ConsoleError {
				b.mu.Lock()
				b.problems = append(b.problems, msg.String())
				b.mu.Unlock()
				fmt.Fprintf(log, "benchrun: %s page: %s\n", h.Name, msg.String())
			}
		}
	}()
	defer func() { cancelTimeout(); cancel(); <-done }()
	if err := chromedp.Do(ctx, chromedp.Navigate(b.site+blankPage)); err != nil {
		r.Error = err.Error()
		return r
	}
	probe := startProbe(ctx)
	if h.wllama {
		r = runWllama(ctx, r, m, s, spec)
	} else {
		r = runPage(ctx, h, r, m, s, spec)
	}
	probe.finish(ctx, &r)
	return r
}

// loadOptions is WasmLM.load's options object for h.
func loadOptions(h browserHost) string {
	cache := ""
	if !h.cache {
		cache = "cache: false, "
	}
	device := ""
	if h.device != "" {
		device = fmt.Sprintf(", device: '%s'", h.device)
	}
	workers := fmt.Sprint(max(h.workers, 1))
	if h.autoWorkers {
		workers = "'auto'"
	}
	return fmt.Sprintf("{ %ssimd: %t, workers: %s%s }", cache, h.simd, workers, device)
}

// runPage measures m with our page in the tab ctx has opened, filling r.
func runPage(ctx context.Context, h browserHost, r Result, m benchModel, s Settings, spec runSpec) Result {
	workers := max(h.workers, 1)
	r.LoadOptions = loadOptions(h)
	script := fmt.Sprintf(pageScript, m.URL, r.LoadOptions, spec.Prompt, spec.Prompt, s.WarmupMS, spec.N)
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](script, chromedp.EvalAwaitPromise))
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var out browserRun
	if err := json.Unmarshal(raw, &out); err != nil {
		r.Error = fmt.Sprintf("unexpected result (%v): %.200s", err, raw)
		return r
	}
	in := out.Info
	if in.SIMD != h.simd {
		r.Error = fmt.Sprintf("asked for simd: %v, the page ran simd: %v (%s)", h.simd, in.SIMD, in.SIMDReason)
		return r
	}
	if h.autoWorkers {
		workers = max(in.Workers, 1)
	}
	if in.Workers != workers && !(workers == 1 && in.Workers == 0) {
		r.Error = fmt.Sprintf("asked for workers: %d, the page ran %d", workers, in.Workers)
		return r
	}
	r.Workers = workers
	if h.device != "" && in.Device != h.device {
		r.Error = fmt.Sprintf("asked for device: '%s', the page ran on %q (%s)", h.device, in.Device, in.DeviceReason)
		return r
	}
	r.Device = in.Device
	kvDim := 0
	if in.HeadCount > 0 {
		kvDim = in.EmbeddingLength / in.HeadCount * in.HeadCountKv
	}
	// The page reports no kvType before the F16 KV cache: it was F32.
	r.KVType, r.ContextLength, r.CacheStorage = cmp.Or(in.KVType, "f32"), in.SessionContextLength, out.CacheStorage
	r.KVCacheBytes = 2 * int64(in.BlockCount) * int64(in.SessionContextLength) * int64(kvDim) * kvBytes(r.KVType)
	r.LoadMS = out.LoadMS
	r.SIMDRelaxed = in.SIMDRelaxed
	r.PromptTokens, r.GeneratedTokens, r.FinishReason = out.Usage.PromptTokens, out.Usage.CompletionTokens, out.FinishReason
	r.TimeToFirstTokenMS = out.Timings.TimeToFirstTokenMs
	r.PrefillTokensPerSecond, r.DecodeTokensPerSecond = out.Timings.PrefillTokensPerSecond, out.Timings.DecodeTokensPerSecond
	r.YieldMS = out.Timings.YieldMs
	r.PeakMemoryBytes = uint64(out.WasmMemoryBytes)
	r.PeakMemorySource = "the worker's WebAssembly memory (result.wasmMemoryBytes)"
	if workers > 1 {
		r.PeakMemorySource = "the workers' WebAssembly memories, added (result.wasmMemoryBytesPerWorker)"
	}
	if out.WasmMemoryBytes == 0 {
		r.PeakMemorySource = "not reported (a page without result.wasmMemoryBytes)"
	}
	return r
}
