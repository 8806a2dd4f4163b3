//go:build !js

package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/wasmlm/wasmlm/internal/embedref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// The embedding benchmark (BENCH=embed): embeddings a second of
// MiniLM-L6 and BGE-base shapes, for texts of 32 and 256 tokens, one and
// sixteen to a call, natively (1 and 2 threads), in Chromium through the
// page's lm.embeddings.create (one worker), optionally under Node, and
// llama.cpp (node-llama-cpp, 1 and 2 threads) on the same files and the
// same texts. Each host × model runs in a process or tab of its own, the
// hosts of a model one after the other, so each ratio is measured minutes
// apart: the machine is shared.

// embedSpecs are a sentence and a chunk of a document (32 and 256 tokens),
// one to a call (a query) and sixteen (a batch to index).
func embedSpecs() []modelgen.EmbedSpec {
	return []modelgen.EmbedSpec{{Tokens: 32, Batch: 1}, {Tokens: 32, Batch: 16}, {Tokens: 256, Batch: 1}, {Tokens: 256, Batch: 16}}
}

// embedRounds are the measured rounds of each spec, after rounds to warm
// up for Settings.WarmupMS (at least one): the median of five.
const embedRounds = 5

// embedHostOrder are the hosts of the embedding benchmark, in the order
// each model runs on them and the tables show them.
func embedHostOrder() []string {
	return []string{"llama.cpp-1t", "llama.cpp-2t", "native", "native-2t", "wasm-simd", "chromium-simd"}
}

// llama.cpp's ways of embedding a batch (embedref's modes).
const (
	modeSequences  = embedref.Sequences  // one context of Batch sequences: one encode
	modeSequential = embedref.Sequential // getEmbeddingFor, one text after another
)

// EmbedResult is one host × model × spec measurement (and, for
// llama.cpp, one of its modes).
type EmbedResult struct {
	Host       string `json:"host"`
	Model      string `json:"model"` // minilm-l6-F16, ...
	Shape      string `json:"shape"` // minilm-l6, bge-base
	TensorType string `json:"tensor_type"`
	FileSize   int64  `json:"file_size"`
	Tokens     int    `json:"tokens"` // each text's, [CLS] and [SEP] included
	Batch      int    `json:"batch"`  // texts per call
	// Mode is llama.cpp's way of embedding the batch: sequences (one
	// context of Batch sequences, one encode) or sequential (one
	// getEmbeddingFor after another); empty for ours (one Embed call).
	Mode    string `json:"mode,omitempty"`
	Threads int    `json:"threads,omitempty"`
	// WarmupRounds ran before the measured rounds, whose wall times are
	// Seconds; the rate is Batch over their median.
	WarmupRounds        int       `json:"warmup_rounds"`
	Seconds             []float64 `json:"seconds"`
	MedianSeconds       float64   `json:"median_seconds"`
	EmbeddingsPerSecond float64   `json:"embeddings_per_second"`
	LoadMS              float64   `json:"load_ms,omitempty"`
	SIMDRelaxed         bool      `json:"simd_relaxed,omitempty"`
	// LoadAverage1m is the machine's 1-minute load average when the host
	// started on the model.
	LoadAverage1m float64 `json:"load_average_1m"`
	Error         string  `json:"error,omitempty"`
}

// embedHost runs every spec of one model.
type embedHost struct {
	Host
	run func(ctx context.Context, m benchModel, specs []modelgen.EmbedSpec, s Settings) []EmbedResult
}

// newEmbedResults are a result per spec of host on m, each with err's
// message when err is not nil.
func newEmbedResults(host string, m benchModel, specs []modelgen.EmbedSpec, err error) []EmbedResult {
	out := make([]EmbedResult, len(specs))
	for i, sp := range specs {
		out[i] = EmbedResult{Host: host, Model: m.Name, Shape: m.Shape, TensorType: m.Type, FileSize: m.FileSize,
			Tokens: sp.Tokens, Batch: sp.Batch, LoadAverage1m: loadAverage1m()}
		if err != nil {
			out[i].Error = err.Error()
		}
	}
	return out
}

// finish sets r's median and rate from its rounds.
func (r *EmbedResult) finish() {
	r.EmbeddingsPerSecond, r.MedianSeconds = modelgen.EmbedSpec{Tokens: r.Tokens, Batch: r.Batch}.Rate(r.Seconds)
}

// embedCLI runs `wasmlm bench -embed` (natively, or a GOOS=js build under
// Node) on one model, every spec in one process.
func (h cliHost) embedCLI(ctx context.Context, m benchModel, specs []modelgen.EmbedSpec, s Settings) []EmbedResult {
	out := newEmbedResults(h.Name, m, specs, nil)
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	list := make([]string, len(specs))
	for i, sp := range specs {
		list[i] = sp.String()
	}
	args := append(append([]string{}, h.argv[1:]...), "bench", "-m", m.Path, "-json", "-embed", strings.Join(list, ","),
		"-rounds", strconv.Itoa(s.Rounds), "-warmup", strconv.Itoa(s.WarmupMS)+"ms")
	args = append(args, h.args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, h.argv[0], args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return newEmbedResults(h.Name, m, specs, fmt.Errorf("%v: %s", err, lastLines(stderr.String(), 5)))
	}
	var res struct {
		Models []struct {
			LoadMS  float64 `json:"load_ms"`
			Threads int     `json:"threads"`
			Embed   []struct {
				Tokens       int       `json:"tokens"`
				Batch        int       `json:"batch"`
				WarmupRounds int       `json:"warmup_rounds"`
				Seconds      []float64 `json:"seconds"`
			} `json:"embed"`
		} `json:"models"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || len(res.Models) != 1 || len(res.Models[0].Embed) != len(specs) {
		return newEmbedResults(h.Name, m, specs, fmt.Errorf("unexpected output (%v): %.200s", err, stdout.String()))
	}
	for i, e := range res.Models[0].Embed {
		r := &out[i]
		if e.Tokens != r.Tokens || e.Batch != r.Batch {
			r.Error = fmt.Sprintf("measured %dx%d for %dx%d", e.Tokens, e.Batch, r.Tokens, r.Batch)
			continue
		}
		r.Threads, r.LoadMS, r.WarmupRounds, r.Seconds = res.Models[0].Threads, res.Models[0].LoadMS, e.WarmupRounds, e.Seconds
		r.finish()
	}
	return out
}

// embedLlamaCpp runs llama.cpp on one model with threads, every spec in
// one Node process (embedref's time jobs): for a batch of more than one
// text, both of its ways.
func embedLlamaCpp(runner *embedref.Runner, name string, threads int) func(context.Context, benchModel, []modelgen.EmbedSpec, Settings) []EmbedResult {
	return func(_ context.Context, m benchModel, specs []modelgen.EmbedSpec, s Settings) []EmbedResult {
		var jobs []embedref.TimeJob
		var out []EmbedResult
		for _, sp := range specs {
			texts, err := sp.Texts()
			if err != nil {
				return newEmbedResults(name, m, specs, err)
			}
			modes := []string{modeSequences}
			if sp.Batch > 1 {
				modes = append(modes, modeSequential)
			}
			for _, mode := range modes {
				jobs = append(jobs, embedref.TimeJob{Model: m.Path, Tokens: sp.Tokens, Batch: sp.Batch, Repeats: s.Rounds, Mode: mode,
					Texts: texts, Threads: threads, WarmupMS: s.WarmupMS})
				r := newEmbedResults(name, m, []modelgen.EmbedSpec{sp}, nil)[0]
				r.Mode = mode
				out = append(out, r)
			}
		}
		res, err := runner.Run(embedref.Request{Time: jobs})
		if err != nil {
			for i := range out {
				out[i].Error = err.Error()
			}
			return out
		}
		for i, t := range res.Time {
			r := &out[i]
			switch {
			case t.Error != "":
				r.Error = t.Error
			case t.Threads != threads:
				r.Error = fmt.Sprintf("asked for %d threads, llama.cpp ran %d", threads, t.Threads)
			case t.Tokens != r.Tokens:
				r.Error = fmt.Sprintf("llama.cpp evaluated %d tokens a text, not %d", t.Tokens, r.Tokens)
			default:
				r.Threads, r.WarmupRounds, r.Seconds = t.Threads, t.WarmupRounds, t.Seconds
				r.finish()
			}
		}
		return out
	}
}

// embedPageScript loads the model in the page (one worker, the SIMD
// kernels, no model cache), then for each spec calls
// lm.embeddings.create with its texts: rounds to warm up until warmupMs
// have passed (at least one), then the measured rounds, each timed around
// the call (the worker's messages and the vectors' conversion to arrays
// included, as a page has them). Every call must report the spec's tokens.
const embedPageScript = `(async () => {
	const { WasmLM } = await import('/wasmlm.js');
	const url = %q, options = %s, specs = %s, rounds = %d, warmupMs = %d;
	const t0 = performance.now();
	const lm = await WasmLM.load(url, options);
	const loadMs = performance.now() - t0;
	try {
		if (typeof lm.embeddings?.create !== 'function') throw new Error('the page has no lm.embeddings.create (a page built before embeddings)');
		const results = [];
		for (const spec of specs) {
			const round = async () => {
				const start = performance.now();
				const r = await lm.embeddings.create({ input: spec.texts });
				const seconds = (performance.now() - start) / 1000;
				if (r.data.length !== spec.texts.length || r.usage.prompt_tokens !== spec.tokens * spec.texts.length) {
					throw new Error(spec.texts.length + ' texts of ' + spec.tokens + ' tokens: ' + r.data.length + ' embeddings, ' + r.usage.prompt_tokens + ' tokens');
				}
				return seconds;
			};
			let warmupRounds = 0;
			for (const start = performance.now(); warmupRounds === 0 || performance.now() - start < warmupMs; warmupRounds++) await round();
			const seconds = [];
			for (let i = 0; i < rounds; i++) seconds.push(await round());
			results.push({ tokens: spec.tokens, batch: spec.texts.length, warmupRounds, seconds });
		}
		return { loadMs, info: lm.info, results };
	} finally {
		lm.unload();
	}
})()`

// embedPage measures one model with our page in a tab of its own.
func (b *browser) embedPage(ctx context.Context, h browserHost, m benchModel, specs []modelgen.EmbedSpec, s Settings) []EmbedResult {
	out := newEmbedResults(h.Name, m, specs, nil)
	type pageSpec struct {
		Tokens int      `json:"tokens"`
		Texts  []string `json:"texts"`
	}
	var ps []pageSpec
	for _, sp := range specs {
		texts, err := sp.Texts()
		if err != nil {
			return newEmbedResults(h.Name, m, specs, err)
		}
		ps = append(ps, pageSpec{sp.Tokens, texts})
	}
	specJSON, err := json.Marshal(ps)
	if err != nil {
		return newEmbedResults(h.Name, m, specs, err)
	}
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	tab, cancelTimeout := context.WithTimeout(tab, browserTimeout)
	defer cancelTimeout()
	if err := chromedp.Do(tab, chromedp.Navigate(b.site+blankPage)); err != nil {
		return newEmbedResults(h.Name, m, specs, err)
	}
	script := fmt.Sprintf(embedPageScript, m.URL, loadOptions(h), specJSON, s.Rounds, s.WarmupMS)
	raw, err := chromedp.Run(tab, chromedp.Evaluate[json.RawMessage](script, chromedp.EvalAwaitPromise))
	if err != nil {
		return newEmbedResults(h.Name, m, specs, err)
	}
	var res struct {
		LoadMS float64 `json:"loadMs"`
		Info   struct {
			SIMD        bool   `json:"simd"`
			SIMDRelaxed bool   `json:"simdRelaxed"`
			SIMDReason  string `json:"simdReason"`
		} `json:"info"`
		Results []struct {
			Tokens       int       `json:"tokens"`
			Batch        int       `json:"batch"`
			WarmupRounds int       `json:"warmupRounds"`
			Seconds      []float64 `json:"seconds"`
		} `json:"results"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Results) != len(specs) {
		return newEmbedResults(h.Name, m, specs, fmt.Errorf("unexpected result (%v): %.200s", err, raw))
	}
	if res.Info.SIMD != h.simd {
		return newEmbedResults(h.Name, m, specs, fmt.Errorf("asked for simd: %v, the page ran simd: %v (%s)", h.simd, res.Info.SIMD, res.Info.SIMDReason))
	}
	for i, e := range res.Results {
		r := &out[i]
		r.Threads, r.LoadMS, r.SIMDRelaxed, r.WarmupRounds, r.Seconds = 1, res.LoadMS, res.Info.SIMDRelaxed, e.WarmupRounds, e.Seconds
		r.finish()
	}
	return out
}

// embedBrowserDescription is chromium-simd's Host.Description in the
// embedding benchmark.
const embedBrowserDescription = "headless Chromium through the page's own JS API from web/dist: WasmLM.load(url, {cache: false, simd: true, workers: 1}), then lm.embeddings.create({input: texts}) a round, " +
	"timed in the page around the call (the worker's messages and the vectors' conversion to arrays included); one Web Worker, the SIMD128 kernels (their relaxed-SIMD build where Chromium has it)"

// measureEmbed runs every wanted host on every model, model by model (the
// hosts of a model one after the other), adding the results to rep.
func measureEmbed(ctx context.Context, c config, cli []cliHost, models []benchModel, rep *Report, log io.Writer) error {
	specs := c.specs
	var hosts []embedHost
	for _, h := range cli {
		if c.want[h.Name] {
			hosts = append(hosts, embedHost{Host: h.Host, run: h.embedCLI})
		}
	}
	for _, h := range llamaCppHosts(c.root, c.want) {
		eh := embedHost{Host: h.Host}
		eh.Description = fmt.Sprintf("native llama.cpp, %d thread%s, through node-llama-cpp's prebuilt CPU binary (internal/embedref's time jobs): the same texts, "+
			"tokenized by llama.cpp; a batch of several texts both in one context of as many sequences (one encode) and one getEmbeddingFor after another, "+
			"the tables taking the faster; timed in Node around the calls", h.threads, plural(h.threads))
		if h.Skipped == "" {
			runner, err := embedref.New()
			if err != nil {
				eh.Skipped = err.Error()
			} else {
				eh.run = embedLlamaCpp(runner, h.Name, h.threads)
			}
		}
		eh.Skipped = cmp.Or(h.Skipped, eh.Skipped)
		hosts = append(hosts, eh)
	}
	var b *browser
	defer func() {
		if b != nil {
			b.close()
		}
	}()
	for _, h := range browserHosts(c.root, c.want) {
		if h.Name != oursHost {
			eh := embedHost{Host: h.Host}
			eh.Skipped = "the embedding benchmark runs Chromium as chromium-simd only"
			hosts = append(hosts, eh)
			continue
		}
		h.Description = embedBrowserDescription
		eh := embedHost{Host: h.Host}
		if h.Skipped == "" {
			var err error
			if b, err = startBrowser(c.dist, c.modelDir, wllamaDir(c.root), nil); err != nil {
				eh.Skipped = err.Error()
			}
		}
		hh := h
		eh.run = func(ctx context.Context, m benchModel, specs []modelgen.EmbedSpec, s Settings) []EmbedResult {
			return b.embedPage(ctx, hh, m, specs, s)
		}
		hosts = append(hosts, eh)
	}
	slices.SortStableFunc(hosts, func(a, b embedHost) int {
		return indexOr(embedHostOrder(), a.Name) - indexOr(embedHostOrder(), b.Name)
	})
	for _, h := range hosts {
		rep.Hosts = append(rep.Hosts, h.Host)
		if h.Skipped != "" {
			fmt.Fprintf(log, "benchrun: %s: not run: %s\n", h.Name, h.Skipped)
		}
	}
	for _, m := range models {
		for _, h := range hosts {
			if h.Skipped != "" {
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(log, "benchrun: %s %s, %v...\n", h.Name, m.Name, specs)
			start := time.Now()
			rs := h.run(ctx, m, specs, c.settings)
			for _, r := range rs {
				logEmbed(log, r)
			}
			fmt.Fprintf(log, "benchrun:   (%.0f s)\n", time.Since(start).Seconds())
			rep.Embeds = append(rep.Embeds, rs...)
		}
	}
	return nil
}

func logEmbed(w io.Writer, r EmbedResult) {
	mode := ""
	if r.Mode != "" {
		mode = " (" + r.Mode + ")"
	}
	if r.Error != "" {
		fmt.Fprintf(w, "benchrun:   %dx%d%s: error: %s\n", r.Tokens, r.Batch, mode, r.Error)
		return
	}
	fmt.Fprintf(w, "benchrun:   %dx%d%s: %.1f embeddings/s (median %.1f ms of %d rounds after %d; load average %.2f)\n",
		r.Tokens, r.Batch, mode, r.EmbeddingsPerSecond, 1000*r.MedianSeconds, len(r.Seconds), r.WarmupRounds, r.LoadAverage1m)
}
