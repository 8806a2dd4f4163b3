//go:build !js

// Command benchrun is `make bench`: it measures wasmlm on every host this
// machine has — natively, as WebAssembly in Node (with and without the
// SIMD128 kernels), and in headless Chromium through the page's own JS API —
// and, side by side in the same run on the same files, llama.cpp natively
// (node-llama-cpp, 1 and 2 threads) and wllama (llama.cpp in WebAssembly, 1
// thread) in the same Chromium, on the default model and random-weight
// models of llama2.c's stories15M and stories110M shapes in F32, Q8_0, Q4_0
// and Q4_K and of TinyLlama-1.1B's in Q8_0, Q4_0 and Q4_K. It prints the
// tables (the results, the side-by-side comparison with the targets of
// bench/targets.json, and the peers of bench/peers.json) and writes
// bench/results.json.
//
//	go run ./tools/benchrun [-mode full|quick|peers|memory|archs|hybrid|native|grammar|embed|webgpu] [-hosts native,wasm,...] [-models NAME,...] [-out FILE]
//	go run ./tools/benchrun -print bench/results.json [-write-doc]
//
// Every host runs the same measurement: load the model, warm up, then a
// greedy generation of -n tokens after a -prompt-token prompt (and after a
// -long-prompt-token one where the model's context holds it) that never
// stops early (see bench/README.md). It expects `make web` to have built
// web/dist and `npm ci --omit=optional` the peers; the models are generated
// into -models-dir by `wasmlm bench -gen`, which reuses them while the
// generator's version is unchanged.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// allHosts are the hosts in the order they run and the table shows them:
// ours, then the peers measured in the same run.
func allHosts() []string {
	return []string{"native", "native-2t", "wasm", "wasm-simd", "chromium", "chromium-simd", "chromium-auto", "chromium-webgpu", "chromium-2w", "chromium-simd-2w",
		"llama.cpp-1t", "llama.cpp-2t", "wllama-1t"}
}

// peerHosts are the hosts that run another runtime, not wasmlm.
func peerHosts() []string { return []string{"llama.cpp-1t", "llama.cpp-2t", "wllama-1t"} }

// mode is what a -mode runs.
type mode struct {
	defaultModel bool     // the embedded default model (stories260K)
	shapes       []string // generated shapes
	types        []string // the types of those shapes to run; nil: all the benchmark writes
	hosts        []string // nil: allHosts
	out          string   // results file
	// cache is WasmLM.load's cache option for our browser hosts (false: the
	// page reads the model from the server).
	cache bool
	// maxTokens (when not 0) replaces -n's default, and noLongPrompt
	// -long-prompt's with 0; a value given on the command line wins.
	maxTokens    int
	noLongPrompt bool
	// grammar: each model's generation is sampled (temperature 1, a fixed
	// seed) without and with grammarSchema, and the mask benchmark runs on
	// real vocabularies (grammar.go).
	grammar bool
	// embed: the models are embedding models, measured in embeddings a
	// second of texts of embedSpecs (embed.go), not generations.
	embed bool
	// models, when set, are the models the mode runs when -models is not
	// given (of its shapes and types).
	models []string
	// webgpu: Chromium starts with WebGPU, the run records its adapter,
	// is bounded where that is a fallback one, and the GPU's host adds
	// tools/gpuprofile's report (webgpu.go).
	webgpu bool
}

// memoryTokens is what the memory mode generates: enough to see the KV
// cache and the sampler at work (the peak comes with the load), few enough
// that wllama's 3B run (under a token a second) takes minutes, not an hour.
const memoryTokens = 32

// modeOf returns the named mode: full (everything, bench/results.json),
// quick (the default model and stories15M), peers (the browser against
// llama.cpp on a chat model's sizes: TinyLlama and Qwen3-0.6B in Q8_0,
// Q4_0 and Q4_K on native, chromium-simd (one worker), chromium-auto
// (workers: 'auto') and the peers, bench/results-peers.json), or memory (the tab's peak memory: TinyLlama
// and the 3B shape in Q4_0 on native, chromium-simd with the page's
// default options — the model cache on — and wllama, the short prompt and
// 32 generated tokens, bench/results-memory.json), or archs (the shapes of
// other families: Qwen3-0.6B and Gemma-3-1B in Q8_0 and Q4_K on native,
// chromium-simd and the peers, bench/results-archs.json), or hybrid (the
// hybrids' shapes, LFM2-1.2B's short convolutions and Qwen3.5-0.8B's Gated
// DeltaNet beside attention, the same way, bench/results-hybrid.json), or native
// (native speed against llama.cpp: stories15M, stories110M and TinyLlama
// in F32 (the stories shapes), Q8_0, Q4_0 and Q4_K natively with 1 and 2
// threads beside llama.cpp with 1 and 2, bench/results-native.json), or
// grammar (the cost of constrained sampling: stories15M, TinyLlama and
// bigvocab — stories15M's
// body with a 151936-token vocabulary — in Q4_0 on native and
// chromium-simd, each generation sampled without and with a JSON schema,
// and the token masks alone on real vocabularies, bench/results-grammar.json),
// or embed (embeddings a second: MiniLM-L6 and BGE-base shapes
// in F16 and Q8_0 (and MiniLM in F32), texts of 32 and 256 tokens one and sixteen to a call,
// natively with 1 and 2 threads, in Chromium and with llama.cpp with 1
// and 2, bench/results-embed.json), or webgpu (the GPU path: Qwen3-0.6B
// and TinyLlama in Q8_0 and Q4_0 in one Chromium with WebGPU, the page
// with device: 'webgpu' beside device: 'cpu', and tools/gpuprofile's
// dispatches, bytes and kernel times; bounded on a fallback adapter,
// bench/results-webgpu.json).
func modeOf(name string) (mode, error) {
	switch name {
	case "full":
		return mode{defaultModel: true, shapes: []string{"stories15M", "stories110M", "tinyllama"}, out: "bench/results.json"}, nil
	case "quick":
		return mode{defaultModel: true, shapes: []string{"stories15M"}, out: "bench/results-quick.json"}, nil
	case "peers":
		return mode{shapes: []string{"tinyllama", "qwen3-0.6b"}, types: []string{"Q8_0", "Q4_0", "Q4_K"},
			hosts: append([]string{"native", "chromium-simd", "chromium-auto"}, peerHosts()...), out: "bench/results-peers.json"}, nil
	case "native":
		return mode{shapes: []string{"stories15M", "stories110M", "tinyllama"}, types: []string{"F32", "Q8_0", "Q4_0", "Q4_K"},
			hosts: []string{"native", "native-2t", "llama.cpp-1t", "llama.cpp-2t"}, out: "bench/results-native.json"}, nil
	case "archs":
		return mode{shapes: []string{"qwen3-0.6b", "gemma3-1b"}, types: []string{"Q8_0", "Q4_K"},
			hosts: append([]string{"native", "chromium-simd"}, peerHosts()...), out: "bench/results-archs.json"}, nil
	case "hybrid":
		return mode{shapes: []string{"lfm2-1.2b", "qwen35-0.8b"}, types: []string{"Q8_0", "Q4_K"},
			hosts: append([]string{"native", "chromium-simd"}, peerHosts()...), out: "bench/results-hybrid.json"}, nil
	case "grammar":
		return mode{shapes: []string{"stories15M", "tinyllama", "bigvocab"}, types: []string{"Q4_0"}, hosts: []string{"native", "chromium-simd"},
			out: "bench/results-grammar.json", noLongPrompt: true, grammar: true}, nil
	case "embed":
		// F32 for MiniLM only: BGE-base's would add a quarter of an hour
		// (and a 416 MiB file) for the type least often served.
		return mode{shapes: []string{"minilm-l6", "bge-base"}, types: []string{"F32", "F16", "Q8_0"},
			models: []string{"minilm-l6-F32", "minilm-l6-F16", "minilm-l6-Q8_0", "bge-base-F16", "bge-base-Q8_0"},
			hosts:  []string{"native", "native-2t", "chromium-simd", "llama.cpp-1t", "llama.cpp-2t"}, out: "bench/results-embed.json", embed: true}, nil
	case "webgpu":
		return mode{shapes: []string{"qwen3-0.6b", "tinyllama"}, types: []string{"Q8_0", "Q4_0"}, hosts: []string{"chromium-simd", "chromium-webgpu"},
			out: "bench/results-webgpu.json", noLongPrompt: true, webgpu: true}, nil
	case "memory":
		return mode{shapes: []string{"tinyllama", "llama3b"}, types: []string{"Q4_0"}, hosts: []string{"native", "chromium-simd", "wllama-1t"},
			out: "bench/results-memory.json", cache: true, maxTokens: memoryTokens, noLongPrompt: true}, nil
	}
	return mode{}, fmt.Errorf("-mode %q: want full, quick, peers, memory, archs, hybrid, native, grammar, embed or webgpu", name)
}

// with applies md's defaults to the settings the flags gave, where the
// command line did not name them (given: the flags it set), and -cache.
func (md mode) with(s Settings, given map[string]bool, cache bool) (mode, Settings) {
	if md.maxTokens > 0 && !given["n"] {
		s.MaxTokens = md.maxTokens
	}
	if md.noLongPrompt && !given["long-prompt"] {
		s.LongPromptTokens = 0
	}
	if md.grammar {
		s.Temperature, s.Seed, s.Schema, s.Rounds = grammarTemperature, grammarSeed, grammarSchema, grammarRounds
	}
	if md.embed {
		s.Rounds, s.PromptTokens, s.LongPromptTokens, s.MaxTokens, s.Method = embedRounds, 0, 0, 0, embedMethod
	}
	if given["cache"] {
		md.cache = cache
	}
	return md, s
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		modeName = fs.String("mode", "full", "full (default model, stories15M, stories110M and TinyLlama shapes), quick (default model and stories15M), peers (stories110M and TinyLlama, Q8_0, Q4_0 and Q4_K, on native, chromium-simd and the peers) memory (TinyLlama and the 3B shape in Q4_0 on native, chromium-simd with the model cache, and wllama; 32 tokens, no long prompt) archs (Qwen3-0.6B and Gemma-3-1B shapes, Q8_0 and Q4_K, on native, chromium-simd and the peers) or hybrid (LFM2-1.2B and Qwen3.5-0.8B shapes, the same way) or native (stories110M and TinyLlama, Q8_0, Q4_0 and Q4_K, natively with 1 and 2 threads beside llama.cpp with 1 and 2) or grammar (stories15M, TinyLlama and a 151936-token vocabulary in Q4_0 on native and chromium-simd, without and with bench/grammar-schema.json; the token masks alone on Llama 2's and Qwen3's vocabularies) or embed (MiniLM-L6 and BGE-base shapes in F16 and Q8_0, MiniLM in F32 too: embeddings/s of texts of 32 and 256 tokens, 1 and 16 a call, natively with 1 and 2 threads, in Chromium and with llama.cpp with 1 and 2) or webgpu (Qwen3-0.6B and TinyLlama shapes, Q8_0 and Q4_0, in Chromium with WebGPU: device 'webgpu' beside device 'cpu', the adapter, dispatches and bytes of weights per token, kernel times; an 8-token prompt and 2 tokens on a fallback adapter)")
		hostList = fs.String("hosts", "", "hosts to run, comma-separated (default: the mode's)")
		only     = fs.String("models", "", "run only these models of the mode, comma-separated (stories110M-Q4_0, tinyllama-Q4_0, ...)")
		root     = fs.String("root", ".", "the repository root")
		modelDir = fs.String("models-dir", "bench/models", "where the generated models are kept (gitignored)")
		dist     = fs.String("web", "web/dist", "the `make web` site")
		peers    = fs.String("peers", "bench/peers.json", "the peers' numbers")
		goals    = fs.String("targets", "bench/targets.json", "what each mode's results are judged against")
		doc      = fs.String("doc", "docs/benchmarks.md", "the page whose tables of a results file (its <!-- benchrun: FILE table N --> blocks) a run rewrites")
		writeTo  = fs.Bool("write-doc", false, "with -print: also rewrite -doc's tables of that results file")
		out      = fs.String("out", "", "results file (default: the mode's: bench/results.json, results-quick.json, results-peers.json, results-memory.json, results-archs.json, results-hybrid.json, results-native.json, results-grammar.json, results-embed.json, results-webgpu.json)")
		printOf  = fs.String("print", "", "print the tables of this results file and exit")
		compare  = fs.String("compare", "", "BEFORE,AFTER: print how decode speed changed between two results files, per host, and exit")
		goCmd    = fs.String("go", "go", "the go command")
		cacheOn  = fs.Bool("cache", false, "our browser hosts load with WasmLM.load's model cache on (default: the mode's: on in memory mode, off in the others)")
		set      = Settings{Method: "load the model, warm up (generate rounds of 8 tokens for warmup_ms), then a greedy generation of max_tokens tokens after a prompt of prompt_tokens tokens (and, in a run of its own, after one of long_prompt_tokens where the model's context holds it), with the end-of-generation tokens banned (native and Node) or muted in the model (generated models), so every run generates them all; decode tokens/s is (generated - 1) / the time from the first to the last token, prefill (prompt) tokens/s is the prompt's rate, TTFT is from the call to the first token",
			Limits: limitsNote}
	)
	fs.IntVar(&set.PromptTokens, "prompt", 128, "prompt tokens")
	fs.IntVar(&set.LongPromptTokens, "long-prompt", 512, "a second, longer prompt, run where the model's context holds it and -n tokens (0: none; the memory mode's default)")
	fs.IntVar(&set.MaxTokens, "n", 128, "tokens generated (the memory mode's default: 32)")
	warmup := fs.Duration("warmup", time.Second, "how long each run generates (embed mode: embeds each spec) before measuring")
	gpuName := fs.String("gpu", "swiftshader", "webgpu mode: the adapter Chromium gives its pages: swiftshader (SwiftShader's, which runs the shaders on the CPU: any machine) or system (the machine's GPU, through Vulkan on Linux)")
	headed := fs.Bool("headed", false, "webgpu mode: show Chromium's window (some systems give a headless browser no GPU)")
	specList := fs.String("embed-specs", "", "embed mode: the TOKENSxBATCH specs to measure, comma-separated (default: 32x1,32x16,256x1,256x16)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *compare != "" {
		files := strings.Split(*compare, ",")
		if len(files) != 2 {
			fmt.Fprintf(stderr, "benchrun: -compare takes two results files, BEFORE,AFTER\n")
			return 2
		}
		var reps [2]Report
		for i, f := range files {
			var err error
			if reps[i], err = readReport(f); err != nil {
				fmt.Fprintf(stderr, "benchrun: %v\n", err)
				return 1
			}
		}
		printComparison(stdout, compareRuns(reps[0], reps[1]))
		return 0
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(*root, p)
	}
	if *printOf != "" {
		rep, err := readReport(*printOf)
		if err != nil {
			fmt.Fprintf(stderr, "benchrun: %v\n", err)
			return 1
		}
		tg, err := readTargets(abs(*goals))
		if err != nil {
			fmt.Fprintf(stderr, "benchrun: -targets: %v\n", err)
			return 2
		}
		printAll(stdout, rep, tg)
		if *writeTo {
			if err := writeDoc(abs(*doc), filepath.ToSlash(*printOf), rep, tg, stdout); err != nil {
				fmt.Fprintf(stderr, "benchrun: %v\n", err)
				return 1
			}
		}
		return 0
	}
	set.Mode, set.WarmupMS = *modeName, int(warmup.Milliseconds())
	md, err := modeOf(*modeName)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 2
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	md, set = md.with(set, given, *cacheOn)
	if !md.embed && (set.PromptTokens < 1 || set.MaxTokens < 1 || set.LongPromptTokens < 0) {
		fmt.Fprintf(stderr, "benchrun: -prompt and -n must be at least 1, -long-prompt at least 0\n")
		return 2
	}
	hosts := md.hosts
	if *hostList != "" {
		hosts = strings.Split(*hostList, ",")
	} else if hosts == nil {
		hosts = allHosts()
	}
	want := map[string]bool{}
	for _, h := range hosts {
		if !slices.Contains(allHosts(), h) {
			fmt.Fprintf(stderr, "benchrun: unknown host %q (known: %s)\n", h, strings.Join(allHosts(), ", "))
			return 2
		}
		want[h] = true
	}
	if *out == "" {
		*out = md.out
	}
	tg, err := readTargets(abs(*goals))
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: -targets: %v\n", err)
		return 2
	}
	models := md.models
	if *only != "" {
		models = strings.Split(*only, ",")
	}
	specs := embedSpecs()
	if *specList != "" {
		if specs, err = modelgen.ParseEmbedSpecs(*specList); err != nil {
			fmt.Fprintf(stderr, "benchrun: -embed-specs: %v\n", err)
			return 2
		}
	}
	var gpuFlags map[string]any
	if md.webgpu {
		if gpuFlags, err = gpuFlagsOf(*gpuName, *headed); err != nil {
			fmt.Fprintf(stderr, "benchrun: %v\n", err)
			return 2
		}
	}
	rep, err := measure(ctx, config{
		root: abs("."), modelDir: abs(*modelDir), dist: abs(*dist), peers: abs(*peers), goCmd: *goCmd,
		mode: md, models: models, want: want, settings: set, specs: specs, gpuFlags: gpuFlags,
	}, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 1
	}
	printAll(stdout, rep, tg)
	if err := writeReport(abs(*out), rep); err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", *out)
	if err := writeDoc(abs(*doc), filepath.ToSlash(*out), rep, tg, stdout); err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 1
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(stderr, "benchrun: %s on %s failed: %s\n", r.Model, r.Host, r.Error)
			return 1
		}
	}
	for _, r := range rep.Embeds {
		if r.Error != "" {
			fmt.Fprintf(stderr, "benchrun: %s %dx%d on %s failed: %s\n", r.Model, r.Tokens, r.Batch, r.Host, r.Error)
			return 1
		}
	}
	return 0
}

// printAll writes every table of a report, with the targets tg.
func printAll(w io.Writer, rep Report, tg Targets) {
	if len(rep.Embeds) > 0 {
		printEmbed(w, rep, tg.Embed)
		return
	}
	printTable(w, rep, tg.Budget)
	printSideBySide(w, rep, tg)
	printMemory(w, rep, tg.Memory)
	printGrammar(w, rep, tg.Grammar)
	printWebGPU(w, rep)
	printPeers(w, rep)
}

// config is one run's inputs.
type config struct {
	root, modelDir, dist, peers, goCmd string
	mode                               mode
	models                             []string // only these models, when set
	want                               map[string]bool
	settings                           Settings
	specs                              []modelgen.EmbedSpec // embed mode's
	gpuFlags                           map[string]any       // webgpu mode's Chromium flags (gpuFlagsOf)
	tmp                                string               // the run's builds
}

// measure builds the hosts, generates the models and runs every host on
// every model.
func measure(ctx context.Context, c config, log io.Writer) (Report, error) {
	rep := Report{Machine: machineFacts(c.goCmd), Settings: c.settings}
	peers, err := readPeers(c.peers)
	if err != nil {
		return rep, err
	}
	rep.Peers = peers
	tmp, err := os.MkdirTemp("", "wasmlm-bench-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(tmp)

	// The native build generates the models, so it is built even when not measured.
	want := map[string]bool{"native": true}
	for h, ok := range c.want {
		want[h] = ok
	}
	cli := buildCLIHosts(ctx, c.goCmd, c.root, tmp, want, log)
	if cli[0].Skipped != "" {
		return rep, fmt.Errorf("building wasmlm: %s", cli[0].Skipped)
	}
	models, err := generateModels(ctx, cli[0].argv[0], c.root, c.modelDir, c.mode, c.models, log)
	if err != nil {
		return rep, err
	}
	if c.mode.embed {
		err := measureEmbed(ctx, c, cli, models, &rep, log)
		rep.Machine.LoadAverageEnd = loadAverage()
		return rep, err
	}
	for _, h := range cli {
		if !c.want[h.Name] {
			continue
		}
		rep.Hosts = append(rep.Hosts, h.Host)
		if h.Skipped == "" {
			if err := runHost(ctx, &rep, h.Name, models, c.settings, log, h.run); err != nil {
				return rep, err
			}
		}
	}
	for _, h := range llamaCppHosts(c.root, c.want) {
		rep.Hosts = append(rep.Hosts, h.Host)
		if h.Skipped != "" {
			fmt.Fprintf(log, "benchrun: %s: not run: %s\n", h.Name, h.Skipped)
			continue
		}
		if err := runHost(ctx, &rep, h.Name, models, c.settings, log, h.run); err != nil {
			return rep, err
		}
	}
	c.tmp = tmp
	if err := measureBrowser(ctx, c, models, &rep, log); err != nil {
		return rep, err
	}
	if c.mode.grammar {
		if err := measureMasks(ctx, c, tmp, &rep, log); err != nil {
			return rep, err
		}
	}
	rep.Machine.LoadAverageEnd = loadAverage()
	sortResults(rep.Results, allHosts())
	return rep, nil
}

// runHost runs one host on every model, each run its plan asks for (see
// plan), adding the results to rep.
func runHost(ctx context.Context, rep *Report, host string, models []benchModel, s Settings, log io.Writer,
	run func(context.Context, benchModel, Settings, runSpec) Result) error {
	for _, m := range models {
		for _, spec := range plan(host, m, s) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintf(log, "benchrun: %s %s, %d-token prompt, %d generated...\n", host, m.Name, spec.Prompt, spec.N)
			r := run(ctx, m, s, spec)
			r.Prompt = spec.Prompt
			if r.Error == "" && r.ContextLength > 0 && r.KVType != "" && strings.HasSuffix(m.Path, ".gguf") {
				if kv, err := kvCacheBytes(m.Path, r.ContextLength, r.KVType); err == nil {
					r.KVCacheBytes = kv
				}
			}
			rep.Results = append(rep.Results, r)
			logResult(log, r)
		}
	}
	return nil
}

// measureBrowser runs the browser hosts (ours and wllama's) in one Chromium.
func measureBrowser(ctx context.Context, c config, models []benchModel, rep *Report, log io.Writer) error {
	hosts := browserHosts(c.root, c.want)
	var b *browser
	defer func() {
		if b != nil {
			b.close()
		}
	}()
	for _, h := range hosts {
		if h.Skipped == "" && b == nil {
			var err error
			if b, err = startBrowser(c.dist, c.modelDir, wllamaDir(c.root), c.gpuFlags); err != nil {
				h.Skipped = err.Error()
			} else if c.mode.webgpu {
				b.setUpWebGPU(ctx, &c, rep, log)
			}
		}
		if h.device == "webgpu" && h.Skipped == "" && rep.Adapter != nil && rep.Adapter.Error != "" {
			h.Skipped = "no WebGPU adapter: " + rep.Adapter.Error
		}
		if c.mode.grammar && !h.wllama {
			h.Description = grammarBrowserDescription
		}
		rep.Hosts = append(rep.Hosts, h.Host)
		if h.Skipped != "" {
			fmt.Fprintf(log, "benchrun: %s: not run: %s\n", h.Name, h.Skipped)
			continue
		}
		h.cache = c.mode.cache
		run := func(_ context.Context, m benchModel, s Settings, spec runSpec) Result {
			return b.run(h, m, s, spec, log)
		}
		if c.mode.grammar && !h.wllama {
			// wasmlm bench in a worker (browsercli.go), built once.
			const bin = "wasmlm-simd.wasm"
			if !b.cliMounted {
				if err := buildJS(ctx, c.goCmd, c.root, "./cmd/wasmlm", filepath.Join(c.tmp, bin), false, "wasmlm_simd"); err != nil {
					return err
				}
				b.mountCLI(c.root, c.tmp)
			}
			run = func(ctx context.Context, m benchModel, s Settings, spec runSpec) Result {
				return b.runBenchInBrowser(ctx, h, cliBuildURL+bin, m, s, spec)
			}
		}
		if h.device == "webgpu" && b.gpuProfile {
			run = func(ctx context.Context, m benchModel, s Settings, spec runSpec) Result {
				r := b.run(h, m, s, spec, log)
				r.GPU = b.runGPUProfile(ctx, m, spec, log)
				return r
			}
		}
		if err := runHost(ctx, rep, h.Name, models, c.settings, log, run); err != nil {
			return err
		}
	}
	return nil
}

func logResult(w io.Writer, r Result) {
	if r.Error != "" {
		fmt.Fprintf(w, "benchrun:   error: %s\n", r.Error)
		return
	}
	fmt.Fprintf(w, "benchrun:   decode %.1f tok/s, prompt %.1f tok/s, TTFT %.0f ms, peak %s MiB (%d prompt, %d generated; load average %.2f)\n",
		r.DecodeTokensPerSecond, r.PrefillTokensPerSecond, r.TimeToFirstTokenMS, mib(r.PeakMemoryBytes), r.PromptTokens, r.GeneratedTokens, r.LoadAverage1m)
}

func readReport(path string) (Report, error) {
	var rep Report
	data, err := os.ReadFile(path)
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

func writeReport(path string, rep Report) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
