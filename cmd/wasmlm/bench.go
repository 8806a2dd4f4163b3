package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/sampling"
)

// benchJSON is what bench -json prints: the host, the settings, and one
// result per model.
type benchJSON struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GoVersion  string `json:"go_version"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// PromptTokens, MaxTokens and WarmupMS are the -prompt, -n and -warmup asked for.
	PromptTokens int           `json:"prompt_tokens"`
	MaxTokens    int           `json:"max_tokens"`
	WarmupMS     float64       `json:"warmup_ms"`
	Models       []benchResult `json:"models"`
}

// benchResult is one model's measurement.
type benchResult struct {
	Model         string         `json:"model"` // the -m path, or the default model's file name
	Name          string         `json:"name"`  // the file's base name without extension
	Architecture  string         `json:"architecture"`
	Parameters    int64          `json:"parameters"`
	TensorTypes   map[string]int `json:"tensor_types"`
	FileSize      int            `json:"file_size"`
	ContextLength int            `json:"context_length"` // of the session
	// KVType is the session's KV cache type (f32 or f16, -kv-type resolved),
	// and KVCacheBytes its size: 2 · layers · context · kvDim values.
	KVType engine.KVType `json:"kv_type"`
	// Threads is the session's thread count (-threads resolved).
	Threads      int     `json:"threads"`
	KVCacheBytes int64   `json:"kv_cache_bytes"`
	LoadMS       float64 `json:"load_ms"` // reading the file and engine.Load
	// WarmupTokens were generated, in rounds, before measuring.
	WarmupTokens int `json:"warmup_tokens"`

	PromptTokens           int     `json:"prompt_tokens"`
	GeneratedTokens        int     `json:"generated_tokens"`
	FinishReason           string  `json:"finish_reason"`
	TimeToFirstTokenMS     float64 `json:"time_to_first_token_ms"`
	PrefillMS              float64 `json:"prefill_ms"`
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	DecodeMS               float64 `json:"decode_ms"`
	DecodeTokens           int     `json:"decode_tokens"`
	DecodeTokensPerSecond  float64 `json:"decode_tokens_per_second"`

	// PeakMemoryBytes is measured as PeakMemorySource says (see peakMemory).
	PeakMemoryBytes  uint64 `json:"peak_memory_bytes"`
	PeakMemorySource string `json:"peak_memory_source"`
	// ProcessPeakRSSBytes is the process's VmHWM when /proc/self/status is
	// readable (under wasm in Node on Linux: Node's whole process), else 0.
	ProcessPeakRSSBytes uint64 `json:"process_peak_rss_bytes,omitempty"`

	// Constrained are -json-schema's or -grammar's -rounds: the measured
	// generation again without the grammar, then held to it (compiled for
	// the round, then kept).
	Constrained []constrainedRun `json:"constrained,omitempty"`
	// Embed are -embed's measurements, one per spec (the generation
	// fields are then empty).
	Embed []embedRun `json:"embed,omitempty"`
}

// benchSettings are bench's flags that shape each run.
type benchSettings struct {
	prompt, n, ctx int
	warmup         time.Duration
	tokenizer      string
	kvType         engine.KVType
	threads        int
	// temperature and seed sample the measured generation (0: greedy);
	// grammar, GBNF source when set, repeats it in rounds without and
	// held to it (benchConstrained).
	temperature float64
	seed        uint64
	grammar     string
	rounds      int
	// warnings gets what bench says before measuring (a -ctx beyond the
	// trained length), as generate and serve say it.
	warnings io.Writer
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: wasmlm bench [-m MODEL ...] [-tokenizer TOK] [-prompt N] [-n N] [-warmup D] [-ctx N] [-kv-type T] [-threads N] [-json]\n"+
			"       wasmlm bench -m MODEL -embed 32x1,256x16 [-rounds N] [-warmup D] [-threads N] [-json]\n"+
			"       wasmlm bench -gen DIR [-shapes stories15M,stories110M]\n\n"+
			"Measures load time, time to first token, prefill and decode tokens/s and peak memory of each\n"+
			"model: greedy decoding of a fixed synthetic prompt, never stopping early. -embed measures an\n"+
			"embedding model's embeddings/s instead. -gen writes the benchmark's random-weight models.\n\n")
		fs.PrintDefaults()
	}
	var (
		paths   stringList
		set     benchSettings
		jsonOut = fs.Bool("json", false, "print one JSON object")
		gen     = fs.String("gen", "", "write the random-weight benchmark models to this directory as <shape>-<type>.gguf, then exit")
		shapes  = fs.String("shapes", "stories15M,stories110M", "with -gen: the shapes to write, comma-separated (also: tinyllama, TinyLlama-1.1B's, in Q8_0, Q4_0 and Q4_K only; llama3b and llama8b, Llama-3.2-3B-like and Llama-3-8B-like with a 32000-token vocabulary; qwen3-0.6b, gemma3-1b, lfm2-1.2b and qwen35-0.8b, Qwen3-0.6B's, Gemma-3-1B's, LFM2-1.2B's and Qwen3.5-0.8B's, in Q8_0 and Q4_K (Qwen3-0.6B in Q4_0 too); bigvocab, stories15M's body with a 151936-token vocabulary, in Q4_0; parity, one small model per supported architecture, <architecture>.gguf in F32 and <architecture>-<type>.gguf in its quantized test type)")
		only    = fs.String("models", "", "with -gen: only these of the shapes' models, comma-separated <shape>-<type> names (default: all)")
	)
	fs.Var(&paths, "m", "model file: GGUF or llama2.c checkpoint (repeatable; default: the embedded "+models.DefaultName+")")
	fs.StringVar(&set.tokenizer, "tokenizer", "", "llama2.c tokenizer.bin (for llama2.c checkpoints)")
	fs.IntVar(&set.prompt, "prompt", 128, "prompt tokens (BOS and then fixed token ids)")
	fs.IntVar(&set.n, "n", 128, "tokens to generate")
	fs.DurationVar(&set.warmup, "warmup", time.Second, "generate for this long before measuring, so the code is compiled and hot (WebAssembly engines tier up while it runs); 0: no warm-up")
	fs.IntVar(&set.ctx, "ctx", 0, "context length to allocate (0: the model's, at most 4096)")
	kvType := kvTypeFlag(fs)
	fs.IntVar(&set.threads, "threads", 0, "threads for the matrix products (0: every core)")
	fs.Float64Var(&set.temperature, "temperature", 0, "sampling temperature of the measured generation (0: greedy)")
	fs.Uint64Var(&set.seed, "seed", 1, "the sampler's seed, with -temperature")
	schemaFile := fs.String("json-schema", "", "then repeat the generation in -rounds, each without and held to this JSON Schema `FILE` (as response_format json_schema): the grammar compiled for the round, then kept")
	grammarFile := fs.String("grammar", "", "the same with a GBNF `FILE`")
	fs.IntVar(&set.rounds, "rounds", 1, fmt.Sprintf("with -json-schema or -grammar: how many rounds; with -embed, the measured rounds of each spec (default %d)", defaultEmbedRounds))
	embedList := fs.String("embed", "", "embed instead of generating: for each `TOKENSxBATCH` spec (comma-separated: 32x1,256x16) rounds of one embeddings call of BATCH texts of TOKENS tokens each ([CLS] and [SEP] included: whole words of BERT's vocabulary, for a bert or nomic-bert model), after warming up for -warmup; the median round gives embeddings/s")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bench: unexpected argument %q (models go in -m)\n", fs.Arg(0))
		return exitUsage
	}
	set.kvType, set.warnings = *kvType, stderr
	var err error
	if set.grammar, err = grammarSource(*schemaFile, *grammarFile); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return exitUsage
	}
	var embed []modelgen.EmbedSpec
	if *embedList != "" {
		if set.grammar != "" {
			fmt.Fprintln(stderr, "bench: -embed measures embeddings; -json-schema and -grammar are for generations")
			return exitUsage
		}
		if embed, err = parseEmbedSpecs(*embedList); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return exitUsage
		}
		if !flagGiven(fs, "rounds") {
			set.rounds = defaultEmbedRounds
		}
	}
	if *gen != "" {
		if len(paths) > 0 {
			fmt.Fprintln(stderr, "bench: -gen writes models; it takes no -m")
			return exitUsage
		}
		var names []string
		if *only != "" {
			names = strings.Split(*only, ",")
		}
		if err := generateBenchModels(*gen, strings.Split(*shapes, ","), names, stderr); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return exitError
		}
		return exitOK
	}
	if set.prompt < 1 || set.n < 1 || set.warmup < 0 || set.ctx < 0 || set.temperature < 0 || set.rounds < 1 {
		fmt.Fprintln(stderr, "bench: -prompt, -n and -rounds must be >= 1, -warmup, -ctx and -temperature >= 0")
		return exitUsage
	}
	if len(paths) == 0 {
		paths = stringList{""}
	}
	out := benchJSON{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		PromptTokens: set.prompt, MaxTokens: set.n, WarmupMS: ms(set.warmup),
	}
	if !*jsonOut && embed != nil {
		fmt.Fprintf(stdout, "%s/%s %s, %d CPUs, %s; embeddings of texts of BERT's words, %d rounds after warming up for %v\n",
			out.GOOS, out.GOARCH, out.GoVersion, out.NumCPU, benchThreads(set.threads), set.rounds, set.warmup)
	} else if !*jsonOut {
		fmt.Fprintf(stdout, "%s/%s %s, %d CPUs, %s; prompt %d tokens, %d generated (greedy), warm-up %v\n",
			out.GOOS, out.GOARCH, out.GoVersion, out.NumCPU, benchThreads(set.threads), set.prompt, set.n, set.warmup)
		fmt.Fprintf(stdout, "%-24s %10s %10s %10s %10s %10s %10s %10s\n",
			"model", "load ms", "TTFT ms", "prefill/s", "decode/s", "peak MiB", "file MiB", "KV MiB")
	}
	for _, path := range paths {
		if embed != nil {
			r, err := benchEmbedModel(ctx, path, set, embed)
			if err != nil {
				fmt.Fprintf(stderr, "bench: %v\n", err)
				return exitError
			}
			out.Models = append(out.Models, r)
			if !*jsonOut {
				for _, e := range r.Embed {
					fmt.Fprintf(stdout, "%-24s %4d tokens x %-4d %10.1f embeddings/s (median of %d rounds, %.1f ms each)\n",
						r.Name, e.Tokens, e.Batch, e.EmbeddingsPerSecond, len(e.Seconds), 1000*e.MedianSeconds)
				}
			}
			continue
		}
		r, err := benchModel(ctx, path, set)
		if err != nil {
			fmt.Fprintf(stderr, "bench: %s\n", flagError(err))
			return exitError
		}
		out.Models = append(out.Models, r)
		if !*jsonOut {
			fmt.Fprintf(stdout, "%-24s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10s\n",
				r.Name, r.LoadMS, r.TimeToFirstTokenMS, r.PrefillTokensPerSecond, r.DecodeTokensPerSecond,
				mb(r.PeakMemoryBytes), mb(uint64(r.FileSize)), fmt.Sprintf("%.1f %s", mb(uint64(r.KVCacheBytes)), r.KVType))
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return exitError
		}
	} else if embed == nil {
		fmt.Fprintf(stdout, "peak memory: %s\n", peakMemoryNote())
	}
	return exitOK
}

// mb is n bytes in MiB (2^20 bytes), as the CLI prints sizes.
func mb(n uint64) float64 { return float64(n) / (1 << 20) }

// benchModel loads one model (path "" is the embedded default) and
// measures a greedy generation of set.n tokens after a set.prompt-token
// prompt on a fresh session.
func benchModel(ctx context.Context, path string, set benchSettings) (benchResult, error) {
	model, r, reset, err := loadBenchModel(path, set)
	if err != nil {
		return r, err
	}
	session, err := model.NewSession(engine.SessionOptions{ContextLength: set.ctx, KVType: set.kvType, Threads: set.threads})
	if err != nil {
		return benchResult{}, err
	}
	if w := model.ContextWarning(session.ContextLength()); w != "" && set.warnings != nil {
		fmt.Fprintf(set.warnings, "bench: warning: -ctx: %s (%s)\n", w, r.Name)
	}
	c := model.Config()
	if set.prompt+set.n-1 > session.ContextLength() {
		return benchResult{}, fmt.Errorf("%s: a %d-token prompt and %d generated tokens do not fit the context of %d", displayPath(path), set.prompt, set.n, session.ContextLength())
	}
	r.ContextLength, r.KVType, r.Threads = session.ContextLength(), session.KVType(), session.Threads()
	r.KVCacheBytes = c.KVCacheBytes(session.ContextLength(), session.KVType())

	sp := model.Tokenizer().Special()
	// Greedy, and the tokens that would end the generation banned, so every
	// run generates exactly set.n tokens whatever the weights.
	opts := engine.GenerateOptions{Sampling: sampling.Params{LogitBias: map[int]float32{}, Temperature: float32(set.temperature), Seed: set.seed}}
	for _, id := range []int{sp.BOS, sp.EOS, sp.EOT} {
		if id >= 0 && id < c.VocabSize {
			opts.Sampling.LogitBias[id] = float32(math.Inf(-1))
		}
	}
	prompt := benchPrompt(set.prompt, c.VocabSize, sp.BOS, opts.Sampling.LogitBias)
	if r.WarmupTokens, err = warmUp(ctx, session, prompt, opts, set.warmup); err != nil {
		return r, err
	}
	opts.MaxTokens = set.n
	res, err := session.GenerateTokens(ctx, prompt, opts, nil)
	if err != nil {
		return r, err
	}
	t := res.Timings
	r.PromptTokens, r.GeneratedTokens, r.FinishReason = len(res.PromptTokens), len(res.Tokens), string(res.FinishReason)
	r.TimeToFirstTokenMS, r.PrefillMS, r.PrefillTokensPerSecond = ms(t.TimeToFirstToken), ms(t.Prefill), t.PrefillTokensPerSecond()
	r.DecodeMS, r.DecodeTokens, r.DecodeTokensPerSecond = ms(t.Decode), t.DecodeTokens, t.DecodeTokensPerSecond()
	if set.grammar != "" {
		if r.Constrained, err = benchConstrained(ctx, model, session, prompt, opts, set.grammar, set.rounds); err != nil {
			return r, err
		}
	}
	r.PeakMemoryBytes, r.PeakMemorySource = peakMemory(reset)
	r.ProcessPeakRSSBytes, _ = procStatus("VmHWM")
	runtime.KeepAlive(model)
	return r, nil
}

// loadBenchModel loads one model (path "" is the embedded default), after
// resetting the peak memory (reset: whether it could), and starts its
// result: the model's names, size, parameters and load time.
func loadBenchModel(path string, set benchSettings) (model *engine.Model, r benchResult, reset bool, err error) {
	reset = resetPeakMemory()
	start := time.Now()
	if model, err = (&modelFlags{path: path, tokenizer: set.tokenizer}).load(); err != nil {
		return nil, r, reset, err
	}
	loaded := time.Since(start)
	info := model.Info()
	r = benchResult{
		Model: displayPath(path), Name: benchName(path), Architecture: info.Architecture,
		Parameters: info.Parameters, TensorTypes: info.TensorTypes, FileSize: model.FileSize(), LoadMS: ms(loaded),
	}
	return model, r, reset, nil
}

// warmUp generates rounds of 8 tokens after the prompt's first 8 until d
// has passed (at least one round when d > 0), then resets the session so the
// measured run evaluates its whole prompt. It returns the tokens generated.
func warmUp(ctx context.Context, s *engine.Session, prompt []int, opts engine.GenerateOptions, d time.Duration) (int, error) {
	if d <= 0 {
		return 0, nil
	}
	p := prompt[:min(8, len(prompt))]
	opts.MaxTokens = min(8, s.ContextLength()-len(p)+1)
	n := 0
	for start, rounds := time.Now(), 0; rounds == 0 || time.Since(start) < d; rounds++ {
		res, err := s.GenerateTokens(ctx, p, opts, nil)
		if err != nil {
			return n, err
		}
		n += len(res.Tokens)
		s.Reset()
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
	}
	return n, nil
}

// benchPrompt is n token ids: BOS (when the vocabulary has one), then ids
// spread over the vocabulary by a fixed stride, skipping banned ones (the
// special tokens), so every host and run evaluates the same prompt.
func benchPrompt(n, vocab, bos int, banned map[int]float32) []int {
	ids := make([]int, 0, n)
	if bos >= 0 && bos < vocab {
		ids = append(ids, bos)
	}
	const stride = 7919 // a prime: unless vocab is a multiple of it, the ids visit the whole vocabulary
	for i := 1; len(ids) < n; i++ {
		id := i * stride % vocab
		for range min(len(banned), vocab) { // the next id that is not banned, if any
			if _, skip := banned[id]; !skip {
				break
			}
			id = (id + 1) % vocab
		}
		ids = append(ids, id)
	}
	return ids
}

// displayPath names a model path for output.
func displayPath(path string) string {
	if path == "" {
		return models.DefaultFile
	}
	return path
}

// benchName names a model in results: the default model's name, or the
// file's base name without its extension (the benchmark's generated models
// are named <shape>-<type>.gguf).
func benchName(path string) string {
	if path == "" {
		return models.DefaultName
	}
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// benchThreads says how many threads -threads gives the products, and
// whether they run on the native SIMD kernels.
func benchThreads(n int) string {
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	kernels := "pure-Go kernels"
	if tensor.NativeSIMD() {
		kernels = "SIMD kernels"
	}
	if n == 1 {
		return "1 thread, " + kernels
	}
	return fmt.Sprintf("%d threads, %s", n, kernels)
}
