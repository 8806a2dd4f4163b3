package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
	"github.com/wasmlm/wasmlm/policy"
	"github.com/wasmlm/wasmlm/sampling"
)

// stringList is a repeatable string flag (-stop a -stop b).
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ", ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// generateJSON is what generate -json prints.
type generateJSON struct {
	Text         string       `json:"text"`
	Tokens       []int        `json:"tokens"`
	PromptTokens []int        `json:"prompt_tokens"`
	FinishReason string       `json:"finish_reason"`
	Usage        openai.Usage `json:"usage"`
	Timings      timingsJSON  `json:"timings"`
	Seed         uint64       `json:"seed"`
}

type timingsJSON struct {
	TimeToFirstTokenMS     float64 `json:"time_to_first_token_ms"`
	PrefillMS              float64 `json:"prefill_ms"`
	PrefillTokens          int     `json:"prefill_tokens"`
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	DecodeMS               float64 `json:"decode_ms"`
	DecodeTokens           int     `json:"decode_tokens"`
	DecodeTokensPerSecond  float64 `json:"decode_tokens_per_second"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := engine.DefaultGenerateOptions() // the JS API's defaults too
	// decimal is a float32 default as the decimal it was written as (0.8,
	// not 0.800000011920929), for -h.
	decimal := func(f float32) float64 {
		d, _ := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64) // cannot fail: a float's own digits
		return d
	}
	var (
		mf       modelFlags
		prompt   = fs.String("p", "", "prompt (empty: start from BOS)")
		maxTok   = fs.Int("n", def.MaxTokens, "maximum tokens to generate (0: until the context is full)")
		temp     = fs.Float64("temp", decimal(def.Sampling.Temperature), "temperature; 0 is greedy (ties go to the lowest id)")
		topK     = fs.Int("top-k", def.Sampling.TopK, "keep the K most likely tokens (0: off)")
		topP     = fs.Float64("top-p", decimal(def.Sampling.TopP), "nucleus sampling threshold in [0, 1] (0 or 1: off)")
		minP     = fs.Float64("min-p", decimal(def.Sampling.MinP), "drop tokens less likely than min-p × the most likely, in [0, 1] (0: off)")
		repeat   = fs.Float64("repeat-penalty", decimal(def.Sampling.RepeatPenalty), "penalty for tokens among the last 64 (0 or 1: off)")
		seed     = fs.Int64("seed", -1, "random seed (-1: from the clock; printed on stderr)")
		stops    stringList
		jsonOut  = fs.Bool("json", false, "print one JSON object instead of streaming text")
		ctxLimit = fs.Int("ctx", 0, "context length to allocate (0: the model's)")
		kvType   = kvTypeFlag(fs)
		threads  = threadsFlag(fs)
		grammarF = fs.String("grammar", "", "GBNF `FILE` (llama.cpp's syntax) the output must match")
		schemaF  = fs.String("json-schema", "", "JSON schema `FILE` the output must be valid JSON for")
		shift    = fs.Bool("context-shift", false, "when the context is full, keep -keep tokens, drop the oldest half of the rest and go on (needs -n > 0; see docs/context.md)")
		keep     = fs.Int("keep", 0, "with -context-shift, tokens of the prompt a shift keeps, BOS aside")
		cacheF   = fs.String("prompt-cache", "", "`FILE` of a saved session to start from (its prompt is not evaluated again), written once the prompt is evaluated (llama.cpp's --prompt-cache)")
	)
	mf.register(fs)
	fs.Var(&stops, "stop", "stop string (repeatable)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "generate: unexpected argument %q (the prompt goes in -p)\n", fs.Arg(0))
		return exitUsage
	}
	if *seed < -1 {
		fmt.Fprintf(stderr, "generate: -seed must be >= -1, got %d\n", *seed)
		return exitUsage
	}
	s := uint64(*seed)
	if *seed == -1 {
		s = uint64(time.Now().UnixNano())
	}
	opts := engine.GenerateOptions{
		MaxTokens:    *maxTok,
		Stop:         stops,
		ContextShift: *shift,
		ShiftKeep:    *keep,
		Sampling: sampling.Params{
			Temperature: float32(*temp), TopK: *topK, TopP: float32(*topP), MinP: float32(*minP),
			RepeatPenalty: float32(*repeat), Seed: s,
		},
	}
	for _, f := range []struct {
		flag string
		v    float64
	}{{"-temp", *temp}, {"-top-p", *topP}, {"-min-p", *minP}, {"-repeat-penalty", *repeat}} {
		if !(math.Abs(f.v) <= math.MaxFloat32) {
			fmt.Fprintf(stderr, "generate: %s must be a finite number of float32 range, got %v\n", f.flag, f.v)
			return exitUsage
		}
	}
	// Out-of-range options are usage errors, named as the flags are.
	if err := opts.Validate(sampling.MaxVocabSize); err != nil {
		fmt.Fprintf(stderr, "generate: %s\n", flagError(err))
		return exitUsage
	}

	model, err := mf.load()
	if err != nil {
		fmt.Fprintf(stderr, "generate: %v\n", err)
		return exitError
	}
	if !model.Generates() {
		fmt.Fprintf(stderr, "generate: %s\n", notGenerative(model))
		return exitError
	}
	if opts.ContextShift && model.Tokenizer().Special().AddBOS {
		opts.ShiftKeep++ // -keep counts the prompt's tokens after BOS, as llama.cpp's --keep
	}
	if opts.Constraint, err = grammarFlag(model, *grammarF, *schemaF); err != nil {
		fmt.Fprintf(stderr, "generate: %v\n", err)
		return exitUsage
	}
	session, err := model.NewSession(engine.SessionOptions{ContextLength: *ctxLimit, KVType: *kvType, Threads: *threads})
	if err != nil {
		fmt.Fprintf(stderr, "generate: %s\n", flagError(err))
		if errors.Is(err, engine.ErrInvalidOption) {
			return exitUsage // -ctx beyond what the model holds
		}
		return exitError
	}
	if w := model.ContextWarning(session.ContextLength()); w != "" {
		fmt.Fprintf(stderr, "generate: warning: -ctx: %s\n", w)
	}
	var onToken engine.TokenFunc
	if !*jsonOut {
		onToken = func(t engine.Token) error {
			_, err := io.WriteString(stdout, t.Text)
			return err
		}
	}
	var cached engine.Timings // the prompt's evaluation, with -prompt-cache
	if *cacheF != "" {
		if err := loadPromptCache(session, *cacheF); err != nil {
			fmt.Fprintf(stderr, "generate: -prompt-cache: %v\n", err)
			return exitError
		}
		if cached, err = cachePrompt(ctx, session, *prompt, opts.ParseSpecial, *cacheF); err != nil {
			fmt.Fprintf(stderr, "generate: -prompt-cache: %s\n", flagError(err))
			return exitError
		}
	}
	res, err := session.Generate(ctx, *prompt, opts, onToken)
	res.Timings.Prefill += cached.Prefill
	res.Timings.PrefillTokens += cached.PrefillTokens
	if err != nil {
		fmt.Fprintf(stderr, "generate: %s\n", flagError(err))
		if errors.Is(err, engine.ErrInvalidOption) && len(res.Tokens) == 0 {
			return exitUsage // options that exclude each other (-stop with a grammar)
		}
		return exitError
	}
	if *jsonOut {
		out := generateJSON{
			Text: res.Text, Tokens: nonNil(res.Tokens), PromptTokens: nonNil(res.PromptTokens),
			FinishReason: string(res.FinishReason), Seed: s,
			Usage: openai.UsageOf(res),
			Timings: timingsJSON{
				TimeToFirstTokenMS: ms(res.Timings.TimeToFirstToken),
				PrefillMS:          ms(res.Timings.Prefill), PrefillTokens: res.Timings.PrefillTokens,
				PrefillTokensPerSecond: res.Timings.PrefillTokensPerSecond(),
				DecodeMS:               ms(res.Timings.Decode), DecodeTokens: res.Timings.DecodeTokens,
				DecodeTokensPerSecond: res.Timings.DecodeTokensPerSecond(),
			},
		}
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "generate: %v\n", err)
			return exitError
		}
	} else {
		fmt.Fprintln(stdout)
	}
	t := res.Timings
	prefill := fmt.Sprintf("prefill %.1f tok/s", t.PrefillTokensPerSecond())
	if t.PrefillTokens == 0 {
		prefill = "prefill none (the prompt cache held the prompt)"
	}
	fmt.Fprintf(stderr, "seed %d; %d prompt tokens, %d generated (%s); first token after %v; %s, decode %.1f tok/s; KV cache %s\n",
		s, len(res.PromptTokens), len(res.Tokens), res.FinishReason, t.TimeToFirstToken.Round(time.Microsecond),
		prefill, t.DecodeTokensPerSecond(), session.KVType())
	if res.Shifts > 0 {
		fmt.Fprintf(stderr, "context shifted %d times, %d tokens dropped\n", res.Shifts, res.ShiftedTokens)
	}
	return exitOK
}

// notGenerative says what a model that does not generate does instead,
// and which command does it.
func notGenerative(model *engine.Model) string {
	if model.Reranks() {
		return fmt.Sprintf("this %s model is a reranker: it scores documents for a query and does not generate text (wasmlm rerank -query Q DOC...)", model.Architecture())
	}
	return fmt.Sprintf("this %s model is an embedding model: it embeds text and does not generate it (wasmlm embed TEXT...)", model.Architecture())
}

// grammarFlag compiles the grammar of -grammar FILE or -json-schema FILE;
// nil without either.
func grammarFlag(model *engine.Model, grammarFile, schemaFile string) (engine.Constraint, error) {
	var f policy.ResponseFormat
	switch {
	case grammarFile != "" && schemaFile != "":
		return nil, errors.New("-grammar and -json-schema exclude each other")
	case grammarFile != "":
		src, err := os.ReadFile(grammarFile)
		if err != nil {
			return nil, fmt.Errorf("-grammar: %w", err)
		}
		if len(bytes.TrimSpace(src)) == 0 {
			return nil, fmt.Errorf("-grammar %s: the file is empty", grammarFile)
		}
		f.Grammar = string(src)
	case schemaFile != "":
		schema, err := os.ReadFile(schemaFile)
		if err != nil {
			return nil, fmt.Errorf("-json-schema: %w", err)
		}
		if len(bytes.TrimSpace(schema)) == 0 {
			return nil, fmt.Errorf("-json-schema %s: the file is empty", schemaFile)
		}
		f.Type, f.Schema = policy.FormatJSONSchema, schema
	default:
		return nil, nil
	}
	g, err := policy.NewGrammars(model).FormatGrammar(f)
	if err != nil {
		var oe *engine.OptionError
		if errors.As(err, &oe) {
			name := map[bool]string{true: "-grammar " + grammarFile, false: "-json-schema " + schemaFile}[grammarFile != ""]
			// The place in the schema, if any: "properties.k.minLength".
			if at := strings.TrimPrefix(strings.TrimPrefix(oe.Field, "response_format.json_schema.schema"), "."); at != oe.Field && at != "" {
				return nil, fmt.Errorf("%s: %s %s", name, at, oe.Problem)
			}
			return nil, fmt.Errorf("%s: %s", name, oe.Problem)
		}
		return nil, err
	}
	return g, nil
}

// optionFlags are the flags of generate's options, by the option's name.
var optionFlags = map[string]string{
	"max_tokens": "-n", "temperature": "-temp", "top_k": "-top-k", "top_p": "-top-p", "min_p": "-min-p",
	"repeat_penalty": "-repeat-penalty", "stop": "-stop", "context_length": "-ctx", "kv_type": "-kv-type",
	"threads": "-threads", "n_keep": "-keep",
}

// flagError words err for the command line: an invalid option is named by
// its flag ("-top-p must be in [0, 1] ..."), anything else as it is.
func flagError(err error) string {
	var oe *engine.OptionError
	if !errors.As(err, &oe) {
		return err.Error()
	}
	name, index, _ := strings.Cut(oe.Field, "[")
	if flag, ok := optionFlags[name]; ok {
		if index != "" {
			return fmt.Sprintf("%s (the %s one given) %s", flag, ordinal(index), oe.Problem)
		}
		return flag + " " + oe.Problem
	}
	return err.Error()
}

// ordinal turns the index part of "stop[2]" ("2]") into "3rd".
func ordinal(index string) string {
	n, err := strconv.Atoi(strings.TrimSuffix(index, "]"))
	if err != nil {
		return index
	}
	n++
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// nonNil makes empty id lists print as [] rather than null.
func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}
