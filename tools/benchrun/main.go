//go:build !js

// Command benchrun is `make bench`: it measures wasmlm on every host this
// machine has — natively, as WebAssembly in Node (with and without the
// SIMD128 kernels), and in headless Chromium through the page's own JS API —
// on the default model and random-weight models of llama2.c's stories15M
// and stories110M shapes in F32, Q8_0, Q4_0 and Q4_K, prints one table (and
// one against the peers of bench/peers.json) and writes bench/results.json.
//
//	go run ./tools/benchrun [-mode full|quick] [-hosts native,wasm,...] [-out FILE]
//	go run ./tools/benchrun -print bench/results.json
//
// Every host runs the same measurement: load the model, warm up, then a
// greedy generation of -n tokens after a -prompt-token prompt that never
// stops early (see bench/README.md). It expects `make web` to have built
// web/dist; the models are generated into -models by `wasmlm bench -gen`,
// which reuses them while the generator's version is unchanged.
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
)

// allHosts are the hosts in the order they run and the table shows them.
func allHosts() []string {
	return []string{"native", "wasm", "wasm-simd", "chromium", "chromium-simd", "chromium-2w", "chromium-simd-2w"}
}

// modeShapes are the generated shapes each mode runs (the default model always runs).
func modeShapes(mode string) ([]string, error) {
	switch mode {
	case "full":
		return []string{"stories15M", "stories110M"}, nil
	case "quick":
		return []string{"stories15M"}, nil
	}
	return nil, fmt.Errorf("-mode %q: want full or quick", mode)
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
		mode     = fs.String("mode", "full", "full (default model, stories15M and stories110M shapes) or quick (default model and stories15M)")
		hostList = fs.String("hosts", strings.Join(allHosts(), ","), "hosts to run, comma-separated")
		root     = fs.String("root", ".", "the repository root")
		modelDir = fs.String("models", "bench/models", "where the generated models are kept (gitignored)")
		dist     = fs.String("web", "web/dist", "the `make web` site")
		peers    = fs.String("peers", "bench/peers.json", "the peers' numbers")
		out      = fs.String("out", "", "results file (default: bench/results.json in full mode, bench/results-quick.json in quick mode)")
		printOf  = fs.String("print", "", "print the tables of this results file and exit")
		compare  = fs.String("compare", "", "BEFORE,AFTER: print how decode speed changed between two results files, per host, and exit")
		goCmd    = fs.String("go", "go", "the go command")
		set      = Settings{Method: "load the model, warm up (generate rounds of 8 tokens for warmup_ms), then a greedy generation of max_tokens tokens after a prompt of prompt_tokens tokens, with the end-of-generation tokens banned (native and Node) or muted in the model (generated models), so every run generates them all; decode tokens/s is (generated - 1) / the time from the first to the last token, prefill tokens/s is the prompt's rate, TTFT is from the call to the first token"}
	)
	fs.IntVar(&set.PromptTokens, "prompt", 128, "prompt tokens")
	fs.IntVar(&set.MaxTokens, "n", 128, "tokens generated")
	warmup := fs.Duration("warmup", time.Second, "how long each run generates before measuring")
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
	if *printOf != "" {
		rep, err := readReport(*printOf)
		if err != nil {
			fmt.Fprintf(stderr, "benchrun: %v\n", err)
			return 1
		}
		printTable(stdout, rep)
		printPeers(stdout, rep)
		return 0
	}
	set.Mode, set.WarmupMS = *mode, int(warmup.Milliseconds())
	shapes, err := modeShapes(*mode)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 2
	}
	want := map[string]bool{}
	for _, h := range strings.Split(*hostList, ",") {
		if !slices.Contains(allHosts(), h) {
			fmt.Fprintf(stderr, "benchrun: unknown host %q (known: %s)\n", h, strings.Join(allHosts(), ", "))
			return 2
		}
		want[h] = true
	}
	if *out == "" {
		*out = map[string]string{"full": "bench/results.json", "quick": "bench/results-quick.json"}[*mode]
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(*root, p)
	}
	rep, err := measure(ctx, config{
		root: abs("."), modelDir: abs(*modelDir), dist: abs(*dist), peers: abs(*peers), goCmd: *goCmd,
		shapes: shapes, want: want, settings: set,
	}, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 1
	}
	printTable(stdout, rep)
	printPeers(stdout, rep)
	if err := writeReport(abs(*out), rep); err != nil {
		fmt.Fprintf(stderr, "benchrun: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "\nwrote %s\n", *out)
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(stderr, "benchrun: %s on %s failed: %s\n", r.Model, r.Host, r.Error)
			return 1
		}
	}
	return 0
}

// config is one run's inputs.
type config struct {
	root, modelDir, dist, peers, goCmd string
	shapes                             []string
	want                               map[string]bool
	settings                           Settings
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
	models, err := generateModels(ctx, cli[0].argv[0], c.root, c.modelDir, c.shapes, log)
	if err != nil {
		return rep, err
	}
	for _, h := range cli {
		if !c.want[h.Name] {
			continue
		}
		rep.Hosts = append(rep.Hosts, h.Host)
		if h.Skipped != "" {
			continue
		}
		for _, m := range models {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			fmt.Fprintf(log, "benchrun: %s %s...\n", h.Name, m.Name)
			rep.Results = append(rep.Results, h.run(ctx, m, c.settings))
			logResult(log, rep.Results[len(rep.Results)-1])
		}
	}
	if err := measureBrowser(ctx, c, models, &rep, log); err != nil {
		return rep, err
	}
	rep.Machine.LoadAverageEnd = loadAverage()
	sortResults(rep.Results, allHosts())
	return rep, nil
}

// measureBrowser runs the browser hosts.
func measureBrowser(ctx context.Context, c config, models []benchModel, rep *Report, log io.Writer) error {
	hosts := browserHosts(c.want)
	var b *browser
	for _, h := range hosts {
		if h.Skipped == "" && b == nil {
			var err error
			if b, err = startBrowser(c.dist, c.modelDir); err != nil {
				h.Skipped = err.Error()
			}
		}
		rep.Hosts = append(rep.Hosts, h.Host)
		if h.Skipped != "" {
			fmt.Fprintf(log, "benchrun: %s: not run: %s\n", h.Name, h.Skipped)
			continue
		}
		for _, m := range models {
			if ctx.Err() != nil {
				b.close()
				return ctx.Err()
			}
			fmt.Fprintf(log, "benchrun: %s %s...\n", h.Name, m.Name)
			rep.Results = append(rep.Results, b.run(h, m, c.settings, log))
			logResult(log, rep.Results[len(rep.Results)-1])
		}
	}
	if b != nil {
		b.close()
	}
	return nil
}

func logResult(w io.Writer, r Result) {
	if r.Error != "" {
		fmt.Fprintf(w, "benchrun:   error: %s\n", r.Error)
		return
	}
	fmt.Fprintf(w, "benchrun:   decode %.1f tok/s, prefill %.1f tok/s, TTFT %.0f ms, peak %s MiB (%d prompt, %d generated; load average %.2f)\n",
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
