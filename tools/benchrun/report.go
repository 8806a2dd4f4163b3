//go:build !js

package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Report is bench/results.json.
type Report struct {
	Machine  Machine  `json:"machine"`
	Settings Settings `json:"settings"`
	Hosts    []Host   `json:"hosts"`
	Results  []Result `json:"results"`
	// Peers are the peer numbers the comparison used (bench/peers.json).
	Peers PeerFile `json:"peers"`
	// Masks (grammar mode) are the token masks' cost on real
	// vocabularies, without a model (engine's BenchmarkGrammarMask).
	Masks []MaskResult `json:"masks,omitempty"`
	// Embeds (embed mode) are the embedding models' embeddings a second,
	// in place of Results.
	Embeds []EmbedResult `json:"embeds,omitempty"`
	// Adapter (webgpu mode) is the WebGPU adapter the browser's pages
	// found.
	Adapter *GPUAdapter `json:"adapter,omitempty"`
}

// Settings are how the run measured.
type Settings struct {
	Mode         string `json:"mode"`          // full, quick or peers
	PromptTokens int    `json:"prompt_tokens"` // asked for; browser prompts are text and come within a few tokens (0: embed mode)
	// LongPromptTokens is the second prompt, run where the model's context
	// holds it (0: none; older records have none).
	LongPromptTokens int    `json:"long_prompt_tokens,omitempty"`
	MaxTokens        int    `json:"max_tokens"` // generated, greedy, never stopping early
	WarmupMS         int    `json:"warmup_ms"`  // generating before measuring, so WebAssembly engines have tiered up
	Method           string `json:"method"`
	// Limits says which hosts leave out or shorten which runs (see plan).
	Limits string `json:"limits,omitempty"`
	// Temperature and Seed sample the generations (0: greedy, as every
	// mode but grammar), and Schema (grammar mode) is the JSON Schema each
	// is repeated under (Result.Constrained).
	Temperature float64 `json:"temperature,omitempty"`
	Seed        uint64  `json:"seed,omitempty"`
	Schema      string  `json:"schema,omitempty"`
	// Rounds (grammar mode) are each a generation without the schema and
	// two with it (Result.Constrained); in embed mode, the measured rounds
	// of each spec.
	Rounds int `json:"rounds,omitempty"`
}

// Host is one way the benchmark runs the engine.
type Host struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Skipped     string `json:"skipped,omitempty"` // why the host did not run
}

// Result is one host × model measurement.
type Result struct {
	Host        string         `json:"host"`
	Model       string         `json:"model"`       // stories260K, stories15M-Q8_0, ...
	Shape       string         `json:"shape"`       // stories260K, stories15M, stories110M
	TensorType  string         `json:"tensor_type"` // the file's type, as the table groups it
	MatrixTypes map[string]int `json:"matrix_types,omitempty"`
	FileSize    int64          `json:"file_size"`

	// Prompt is the prompt length asked for (Settings.PromptTokens or
	// LongPromptTokens; 0 in older records: PromptTokens), and
	// PromptTokens the prompt's tokens as the host counted them.
	Prompt                 int     `json:"prompt,omitempty"`
	PromptTokens           int     `json:"prompt_tokens"`
	GeneratedTokens        int     `json:"generated_tokens"`
	FinishReason           string  `json:"finish_reason"`
	DecodeTokensPerSecond  float64 `json:"decode_tokens_per_second"`
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	TimeToFirstTokenMS     float64 `json:"time_to_first_token_ms"`
	LoadMS                 float64 `json:"load_ms"`
	PeakMemoryBytes        uint64  `json:"peak_memory_bytes"`
	PeakMemorySource       string  `json:"peak_memory_source"`
	KVCacheBytes           int64   `json:"kv_cache_bytes"`
	// KVType is the KV cache's element type (f32 or f16; empty in runs
	// in older records: f32), ContextLength the positions it holds.
	KVType        string `json:"kv_type,omitempty"`
	ContextLength int    `json:"context_length,omitempty"`
	// ProcessPeakRSSBytes is the peak resident memory of the process that
	// ran the model, as ProcessPeakRSSSource says: in Chromium the tab's
	// renderer process (the page and its Web Workers: see memory.go),
	// natively wasmlm's, under Node and for llama.cpp the Node process's.
	// 0: not measured (older records).
	ProcessPeakRSSBytes  uint64 `json:"process_peak_rss_bytes,omitempty"`
	ProcessPeakRSSSource string `json:"process_peak_rss_source,omitempty"`
	// In Chromium: the tab's renderer's resident memory just before the
	// load and after the model was unloaded, the other renderers' before
	// the load (what earlier runs left behind: a blank page's worth), and
	// the largest peak of the browser's other processes during the run
	// (OtherProcess says which: browser, gpu-process, utility, ...).
	ProcessRSSBeforeLoadBytes  uint64 `json:"process_rss_before_load_bytes,omitempty"`
	ProcessRSSAfterUnloadBytes uint64 `json:"process_rss_after_unload_bytes,omitempty"`
	OtherRenderersRSSBytes     uint64 `json:"other_renderers_rss_bytes,omitempty"`
	OtherProcessPeakRSSBytes   uint64 `json:"other_process_peak_rss_bytes,omitempty"`
	OtherProcess               string `json:"other_process,omitempty"`
	// LoadOptions are WasmLM.load's options (our browser hosts), and
	// CacheStorage where the model cache kept the model when it was on
	// (opfs, cache-storage; none: the page read it from the network).
	LoadOptions string `json:"load_options,omitempty"`
	// Workers is how many Web Workers the page ran the model in (our
	// browser hosts; with workers: 'auto', the page's choice).
	Workers      int    `json:"workers,omitempty"`
	CacheStorage string `json:"cache_storage,omitempty"`
	// LoadAverage1m is the machine's 1-minute load average when the run
	// started: the machine is shared, and other work slows every number.
	LoadAverage1m float64 `json:"load_average_1m"`
	// YieldMS is the time the browser's worker spent handing control to its
	// event loop between tokens (included in its decode time).
	YieldMS float64 `json:"yield_ms,omitempty"`
	// SIMDRelaxed: the page ran the relaxed-SIMD build of the kernels
	// (wasmlm-simd-relaxed.wasm; lm.info.simdRelaxed).
	SIMDRelaxed bool `json:"simd_relaxed,omitempty"`
	// Device is where the page ran the model (lm.info.device: webgpu or
	// cpu; empty in older records and on other hosts), and GPU (webgpu
	// mode, the GPU's rows) tools/gpuprofile's report of the same model.
	Device string      `json:"device,omitempty"`
	GPU    *GPUProfile `json:"gpu,omitempty"`
	// Constrained (grammar mode) are the same generation under
	// Settings.Schema: with the grammar just compiled, then again.
	Constrained []Constrained `json:"constrained,omitempty"`
	Error       string        `json:"error,omitempty"`
}

// PeerFile is bench/peers.json: other runtimes' numbers, measured elsewhere.
type PeerFile struct {
	Source string `json:"source"`
	Method string `json:"method"`
	Peers  []Peer `json:"peers"`
}

// Peer is one peer measurement.
type Peer struct {
	Name    string `json:"name"`
	Detail  string `json:"detail,omitempty"`
	Host    string `json:"host"` // chromium or native
	Threads int    `json:"threads"`
	Shape   string `json:"shape"`
	Type    string `json:"type"`              // the type our row it compares with has
	Variant string `json:"variant,omitempty"` // the peer's own file type when it differs (Q4_K_M)
	// DecodeTokensPerSecond is warm decode tokens/s.
	DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
	// Target says what we aim at against this peer: "match" (our
	// browser decode ≥ the peer's with one worker), "match-all-workers" (≥
	// the peer's with all workers), "stretch-half" (≥ half of it).
	Target string `json:"target"`
}

func readPeers(path string) (PeerFile, error) {
	var p PeerFile
	data, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// promptOf is the prompt length r asked for.
func promptOf(r Result, s Settings) int {
	if r.Prompt == 0 {
		return s.PromptTokens
	}
	return r.Prompt
}

// shortPrompt are the results of the short prompt: all that runs without a
// long prompt measured, and what the tables by host and model show.
func shortPrompt(rep Report) []Result {
	var out []Result
	for _, r := range rep.Results {
		if promptOf(r, rep.Settings) == rep.Settings.PromptTokens {
			out = append(out, r)
		}
	}
	return out
}

// shapeOrder sorts shapes smallest first; unknown ones last.
func shapeOrder(shape string) int {
	if i := slices.Index([]string{"stories260K", "stories15M", "stories110M", "qwen3-0.6b", "tinyllama", "gemma3-1b", "lfm2-1.2b", "qwen35-0.8b", "llama3b", "llama8b", "bigvocab"}, shape); i >= 0 {
		return i
	}
	return 99
}

// typeOrder sorts tensor types from the widest to the narrowest.
func typeOrder(t string) int {
	if i := slices.Index([]string{"F16", "F32", "Q8_0", "Q4_0", "Q4_K"}, t); i >= 0 {
		return i
	}
	return 99
}

// sortResults orders results by shape, type, then host order.
func sortResults(rs []Result, hostOrder []string) {
	slices.SortStableFunc(rs, func(a, b Result) int {
		return cmp.Or(
			cmp.Compare(shapeOrder(a.Shape), shapeOrder(b.Shape)),
			cmp.Compare(typeOrder(a.TensorType), typeOrder(b.TensorType)),
			cmp.Compare(a.Model, b.Model),
			cmp.Compare(a.Prompt, b.Prompt),
			cmp.Compare(indexOr(hostOrder, a.Host), indexOr(hostOrder, b.Host)),
		)
	})
}

func indexOr(list []string, s string) int {
	if i := slices.Index(list, s); i >= 0 {
		return i
	}
	return len(list)
}

func mib(n uint64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }

// typeLabel is a result's type for the table, saying where a K-quant file
// holds other types (the Q5_0 fallback of 288-value rows).
func typeLabel(r Result) string {
	if len(r.MatrixTypes) <= 1 {
		return r.TensorType
	}
	var others []string
	for t, n := range r.MatrixTypes {
		if t != r.TensorType {
			others = append(others, fmt.Sprintf("%d %s", n, t))
		}
	}
	slices.Sort(others)
	return fmt.Sprintf("%s (%d of %d matrices; %s)", r.TensorType, r.MatrixTypes[r.TensorType], sum(r.MatrixTypes), strings.Join(others, ", "))
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// printTable writes the results as one Markdown table.
func printTable(w io.Writer, rep Report, b MemoryBudget) {
	m := rep.Machine
	fmt.Fprintf(w, "wasmlm %s benchmark, %s: %s, %d cores, %s; Go %s, Node %s, %s; load average %s → %s\n",
		rep.Settings.Mode, m.Date, m.CPU, m.Cores, m.OS, m.GoVersion, m.NodeVersion, m.ChromiumVersion, m.LoadAverageStart, m.LoadAverageEnd)
	prompts := fmt.Sprintf("prompt %d tokens", rep.Settings.PromptTokens)
	if rep.Settings.LongPromptTokens > 0 {
		prompts += fmt.Sprintf(" and %d", rep.Settings.LongPromptTokens)
	}
	how := "greedy, never stopping early"
	if rep.Settings.Temperature > 0 {
		how = fmt.Sprintf("sampled at temperature %g, seed %d", rep.Settings.Temperature, rep.Settings.Seed)
	}
	fmt.Fprintf(w, "%s, %d generated (%s), after %d ms of warm-up\n",
		prompts, rep.Settings.MaxTokens, how, rep.Settings.WarmupMS)
	if rep.Settings.Limits != "" {
		fmt.Fprintf(w, "limits: %s\n", rep.Settings.Limits)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| model | type | host | prompt | prompt tok/s | TTFT ms | decode tok/s | peak MiB | process MiB | file MiB | KV MiB | peak / budget | load |")
	fmt.Fprintln(w, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(w, "| %s | %s | %s | %d | error: %s | | | | | | | | |\n", r.Shape, typeLabel(r), r.Host, promptOf(r, rep.Settings), oneLine(r.Error))
			continue
		}
		decode := fmt.Sprintf("%.1f", r.DecodeTokensPerSecond)
		if r.GeneratedTokens != rep.Settings.MaxTokens {
			decode += fmt.Sprintf(" (%d tokens)", r.GeneratedTokens)
		}
		peak, ratio, process := "—", "—", "—" // a host that does not measure it (wllama's memory, older records)
		if r.PeakMemoryBytes > 0 {
			peak, ratio = mib(r.PeakMemoryBytes), fmt.Sprintf("%.2f", b.fraction(r))
		}
		if r.ProcessPeakRSSBytes > 0 {
			process = mib(r.ProcessPeakRSSBytes)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %.1f | %.0f | %s | %s | %s | %s | %s | %s | %.1f |\n",
			r.Shape, typeLabel(r), r.Host, r.PromptTokens, r.PrefillTokensPerSecond, r.TimeToFirstTokenMS, decode,
			peak, process, mib(uint64(r.FileSize)), mib(uint64(r.KVCacheBytes)), ratio, r.LoadAverage1m)
	}
	for _, h := range rep.Hosts {
		if h.Skipped != "" {
			fmt.Fprintf(w, "\n%s: not run: %s", h.Name, h.Skipped)
		}
	}
	sources := sourcesOf(rep.Results, func(r Result) string { return r.PeakMemorySource })
	processes := sourcesOf(rep.Results, func(r Result) string { return r.ProcessPeakRSSSource })
	fmt.Fprintf(w, "\npeak memory — %s. peak / budget = peak memory ÷ (%g × file + KV cache), the memory budget (≤ 1). "+
		"load = the 1-minute load average when the run started.\n", strings.Join(sources, "; "), b.FileFactor)
	if len(processes) > 0 {
		fmt.Fprintf(w, "process — the peak resident memory of the process that ran the model: %s.\n", strings.Join(processes, "; "))
	}
}

// sourcesOf lists "host: source" once each, for the results source gives
// one.
func sourcesOf(rs []Result, source func(Result) string) []string {
	var out []string
	for _, r := range rs {
		s := r.Host + ": " + source(r)
		if source(r) != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// fraction is r's peak memory as a fraction of the budget, its factor ×
// the model file + the KV cache.
func (b MemoryBudget) fraction(r Result) float64 {
	budget := b.FileFactor*float64(r.FileSize) + float64(r.KVCacheBytes)
	if budget <= 0 {
		return 0
	}
	return float64(r.PeakMemoryBytes) / budget
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// comparison is one row of the peer table.
type comparison struct {
	Peer    Peer
	Ours    map[string]float64 // host → decode tokens/s on the same shape and type
	Verdict string
}

// comparisonHosts are our hosts the peer table shows, in order; the first
// is the one peers.json's targets are about (the browser, one worker).
func comparisonHosts() []string {
	return []string{"chromium", "chromium-simd", "chromium-2w", "chromium-simd-2w", "wasm-simd", "native", "native-2t"}
}

// compare pairs each peer with our decode tokens/s on its shape and type.
func compare(results []Result, peers []Peer) []comparison {
	var out []comparison
	for _, p := range peers {
		c := comparison{Peer: p, Ours: map[string]float64{}}
		for _, r := range results {
			if r.Error == "" && r.Shape == p.Shape && r.TensorType == p.Type && slices.Contains(comparisonHosts(), r.Host) {
				c.Ours[r.Host] = r.DecodeTokensPerSecond
			}
		}
		c.Verdict = verdict(p, c.Ours)
		out = append(out, c)
	}
	return out
}

// verdict says whether our browser numbers meet the peer's target: with the
// SIMD page when it ran, else the plain page; for a target with all
// workers, the faster of one worker and two (this machine's cores).
func verdict(p Peer, ours map[string]float64) string {
	host := "chromium"
	if _, ok := ours["chromium-simd"]; ok {
		host = "chromium-simd"
	}
	if p.Target == "match-all-workers" {
		for _, h := range []string{"chromium-2w", "chromium-simd-2w"} {
			if v, ok := ours[h]; ok && v > ours[host] {
				host = h
			}
		}
		v, ok := ours[host]
		if !ok || p.DecodeTokensPerSecond <= 0 {
			return "not measured"
		}
		workers := "with 1 worker"
		if strings.HasSuffix(host, "-2w") {
			workers = "with 2 workers"
		}
		return metOrMissed(v >= p.DecodeTokensPerSecond, fmt.Sprintf("%s %s %.2f×, target ≥ 1× with all workers", host, workers, v/p.DecodeTokensPerSecond))
	}
	v, ok := ours[host]
	if !ok || p.DecodeTokensPerSecond <= 0 {
		return "not measured"
	}
	ratio := v / p.DecodeTokensPerSecond
	switch p.Target {
	case "match":
		return metOrMissed(ratio >= 1, fmt.Sprintf("%s %.2f×, target ≥ 1×", host, ratio))
	case "match-all-workers":
		return metOrMissed(ratio >= 1, fmt.Sprintf("%s with 1 worker %.2f×, target ≥ 1× with all workers", host, ratio))
	case "stretch-half":
		return metOrMissed(ratio >= 0.5, fmt.Sprintf("%s %.2f×, stretch target ≥ 0.5×", host, ratio))
	}
	return fmt.Sprintf("%s %.2f×", host, ratio)
}

func metOrMissed(ok bool, detail string) string {
	if ok {
		return "met (" + detail + ")"
	}
	return "missed (" + detail + ")"
}

// printPeers writes the peer comparison as a Markdown table: the peers of
// the shapes measured, against our hosts that have numbers for them.
func printPeers(w io.Writer, rep Report) {
	var rows []comparison
	hosts := map[string]bool{}
	for _, c := range compare(shortPrompt(rep), rep.Peers.Peers) {
		if !slices.ContainsFunc(rep.Results, func(r Result) bool { return r.Shape == c.Peer.Shape }) {
			continue
		}
		rows = append(rows, c)
		for h := range c.Ours {
			hosts[h] = true
		}
	}
	if len(rows) == 0 {
		return
	}
	var cols []string
	for _, h := range comparisonHosts() {
		if hosts[h] {
			cols = append(cols, h)
		}
	}
	fmt.Fprintf(w, "\nDecode tokens/s against the peers of peers.json (%s; %s):\n\n", rep.Peers.Source, rep.Peers.Method)
	fmt.Fprint(w, "| shape | type | peer | peer host | peer tok/s |")
	for _, h := range cols {
		fmt.Fprintf(w, " ours %s | ratio |", h)
	}
	fmt.Fprintln(w, " target |")
	fmt.Fprint(w, "|---|---|---|---|--:|")
	for range cols {
		fmt.Fprint(w, "--:|--:|")
	}
	fmt.Fprintln(w, "---|")
	for _, c := range rows {
		p := c.Peer
		typ := p.Type
		if p.Variant != "" {
			typ += " (peer: " + p.Variant + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s, %d thread%s | %.1f |", p.Shape, typ, p.Name, p.Host, p.Threads, plural(p.Threads), p.DecodeTokensPerSecond)
		for _, h := range cols {
			if v, ok := c.Ours[h]; ok {
				fmt.Fprintf(w, " %.1f | %.2f× |", v, v/p.DecodeTokensPerSecond)
			} else {
				fmt.Fprint(w, " — | — |")
			}
		}
		fmt.Fprintf(w, " %s |\n", c.Verdict)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
