//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chromedp/chromedp"
)

// The wllama-1t host runs wllama (llama.cpp compiled to WebAssembly, with
// SIMD128; @wllama/wllama, pinned in bench/package.json) in a tab of the same
// Chromium as our browser hosts, from the same site: its module is served
// at wllamaURL from node_modules. One thread: the site sends no COOP/COEP
// headers, so there is no SharedArrayBuffer (as for a page that cannot set
// them), and wllama's WebGPU is turned off (n_gpu_layers: 0). Its build
// needs JSPI and Memory64, which Chromium has since 137 and 133.

// wllamaURL is where the site serves wllama's esm directory.
const wllamaURL = "/__wllama__/"

// wllamaDir is wllama's esm directory as make bench installs it (npm ci in
// bench/: a peer only the benchmark measures, not among the tests' packages).
func wllamaDir(root string) string {
	return filepath.Join(root, "bench", "node_modules", "@wllama", "wllama", "esm")
}

// wllamaScript loads the model at url (fetched whole, as our page does) into
// wllama with one thread and a context of ctx, warms up (rounds of 8 tokens
// after an 8-token prompt for warmupMs), then completes a prompt of n tokens
// (letters: see textOf) greedily for n tokens, with cache_prompt off (so
// every prompt is evaluated whole) and the end-of-generation tokens banned
// (ignore_eos), and returns its result with wllama's own timings.
const wllamaScript = `(async () => {
	const { Wllama } = await import(%q);
	const wllama = new Wllama({ default: %q }, { suppressNativeLog: true });
	const t0 = performance.now();
	const blob = await (await fetch(%q)).blob();
	await wllama.loadModel([new File([blob], 'model.gguf')], {
		n_threads: 1, n_gpu_layers: 0, n_ctx: %d, n_parallel: 1, warmup: false,
	});
	const loadMs = performance.now() - t0;
	try {
		// wllama's completion takes text only (an array of token ids is read
		// as an array of prompts). With the generated models' vocabulary a
		// letter is a token and the space llama.cpp puts before a prompt is
		// three (the bytes of U+2581): BOS, 3, then n - 4 letters make n.
		const textOf = (n) => Array.from({ length: Math.max(n - 4, 1) }, (_, i) => 'abcdefghijklmnopqrstuvwxyz'[i %% 26]).join('');
		const complete = (prompt, n) => wllama.createCompletion({
			prompt, max_tokens: n, temperature: 0, cache_prompt: false, ignore_eos: true,
		});
		const warmupMs = %d;
		for (const t = performance.now(); warmupMs > 0;) {
			await complete(textOf(8), 8);
			if (performance.now() - t >= warmupMs) break;
		}
		const prompt = textOf(%d);
		let r;
		try {
			r = await complete(prompt, %d);
		} catch (e) {
			return { loadMs, error: String(e && e.message || e) };
		}
		const meta = wllama.getModelMetadata();
		const arch = meta.meta['general.architecture'];
		const heads = Number(meta.meta[arch + '.attention.head_count']);
		const kvHeads = Number(meta.meta[arch + '.attention.head_count_kv'] || heads);
		return { loadMs, usage: r.usage, timings: r.timings, finishReason: r.choices[0].finish_reason,
			layers: meta.hparams.nLayer, kvDim: meta.hparams.nEmbd / heads * kvHeads, threads: wllama.getNumThreads(),
			fileSize: blob.size };
	} finally {
		await wllama.exit();
	}
})()`

// wllamaRun is what wllamaScript returns.
type wllamaRun struct {
	LoadMS float64 `json:"loadMs"`
	Error  string  `json:"error"`
	Usage  struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	// Timings are llama.cpp's server timings: prompt_ms is the prompt's
	// evaluation, predicted_per_second is predicted_n tokens over the time
	// from the first to the last.
	Timings struct {
		PromptN            int     `json:"prompt_n"`
		PromptMS           float64 `json:"prompt_ms"`
		PromptPerSecond    float64 `json:"prompt_per_second"`
		PredictedN         int     `json:"predicted_n"`
		PredictedPerSecond float64 `json:"predicted_per_second"`
	} `json:"timings"`
	FinishReason string  `json:"finishReason"`
	Layers       int     `json:"layers"`
	KVDim        float64 `json:"kvDim"`
	Threads      int     `json:"threads"`
	FileSize     int64   `json:"fileSize"`
}

// runWllama measures m with wllama in the tab ctx has opened, filling r.
func runWllama(ctx context.Context, r Result, m benchModel, s Settings, spec runSpec) Result {
	script := fmt.Sprintf(wllamaScript, wllamaURL+"index.js", wllamaURL+"wasm/wllama.wasm", m.URL,
		m.ContextLength, s.WarmupMS, spec.Prompt, spec.N)
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](script, chromedp.EvalAwaitPromise))
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var out wllamaRun
	if err := json.Unmarshal(raw, &out); err != nil {
		r.Error = fmt.Sprintf("unexpected result (%v): %.200s", err, raw)
		return r
	}
	r.LoadMS = out.LoadMS
	switch {
	case out.Error != "":
		r.Error = "wllama: " + out.Error
		return r
	case out.Threads != 1:
		r.Error = fmt.Sprintf("asked for 1 thread, wllama ran %d", out.Threads)
		return r
	case out.Timings.PromptN != out.Usage.PromptTokens:
		// cache_prompt: false should make it evaluate every token.
		r.Error = fmt.Sprintf("wllama evaluated %d of the prompt's %d tokens", out.Timings.PromptN, out.Usage.PromptTokens)
		return r
	}
	t := out.Timings
	r.KVType, r.ContextLength = "f16", m.ContextLength // llama.cpp's default
	r.KVCacheBytes = 2 * int64(out.Layers) * int64(m.ContextLength) * int64(out.KVDim) * kvBytes(r.KVType)
	r.PromptTokens, r.GeneratedTokens, r.FinishReason = out.Usage.PromptTokens, out.Usage.CompletionTokens, strings.TrimSpace(out.FinishReason)
	r.TimeToFirstTokenMS, r.PrefillTokensPerSecond, r.DecodeTokensPerSecond = t.PromptMS, t.PromptPerSecond, t.PredictedPerSecond
	r.PeakMemorySource = "not reported (wllama's WebAssembly memory is in its worker: see the process's)"
	return r
}
