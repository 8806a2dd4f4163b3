//go:build js

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/sampling"
	"github.com/wasmlm/wasmlm/webgpu"
)

// Report is gpuprofile's output.
type Report struct {
	Adapter Adapter `json:"adapter"`
	// MatrixBytes are the bytes of the matrices the products read (every
	// one once a generated token; once per tile of TileTokens tokens of a
	// prompt), Matrices how many there are.
	MatrixBytes int64 `json:"matrix_bytes"`
	Matrices    int   `json:"matrices"`
	// PromptTokens were evaluated, then GeneratedTokens generated.
	PromptTokens    int `json:"prompt_tokens"`
	GeneratedTokens int `json:"generated_tokens"`
	// The prompt's submissions and dispatches (its first token's logits
	// included), each generated token's after the first, and the speeds
	// (Timed: of a generation timed dispatch by dispatch, slower than the
	// forward pass's).
	PromptSubmissions      int     `json:"prompt_submissions"`
	PromptDispatches       int     `json:"prompt_dispatches"`
	DecodeSubmissions      float64 `json:"decode_submissions_per_token"`
	DecodeDispatches       float64 `json:"decode_dispatches_per_token"`
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	DecodeTokensPerSecond  float64 `json:"decode_tokens_per_second"`
	// Kernels are each kernel's dispatches per prompt token and per
	// generated token and, Timed (-timed on a device with
	// timestamp-query), its time on the device; TimedError says why a
	// -timed run was not.
	Kernels    []Kernel `json:"kernels"`
	Timed      bool     `json:"timed"`
	TimedError string   `json:"timed_error,omitempty"`
}

// Adapter is the worker's adapter and device.
type Adapter struct {
	Vendor         string `json:"vendor"`
	Architecture   string `json:"architecture"`
	Device         string `json:"device"`
	Description    string `json:"description"`
	Fallback       bool   `json:"fallback"`
	Subgroups      bool   `json:"subgroups"`
	SubgroupMin    int    `json:"subgroup_min"`
	SubgroupMax    int    `json:"subgroup_max"`
	F16            bool   `json:"shader_f16"`
	TimestampQuery bool   `json:"timestamp_query"`
}

// Kernel is one kernel's share of the timed run.
type Kernel struct {
	Label                    string  `json:"label"`
	PromptDispatchesPerToken float64 `json:"prompt_dispatches_per_token"`
	PromptNSPerToken         float64 `json:"prompt_ns_per_token"`
	DecodeDispatchesPerToken float64 `json:"decode_dispatches_per_token"`
	DecodeNSPerToken         float64 `json:"decode_ns_per_token"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpuprofile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("m", "", "the GGUF model")
	prompt := fs.Int("prompt", 128, "prompt tokens")
	n := fs.Int("n", 8, "tokens generated (at least 2: the first comes with the prompt)")
	timed := fs.Bool("timed", false, "time every dispatch on the device (timestamp-query; each in a compute pass of its own, waited for)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *path == "" || *prompt < 1 || *n < 2 {
		fmt.Fprintln(stderr, "gpuprofile: -m is required, -prompt at least 1, -n at least 2")
		return 2
	}
	rep, err := profile(*path, *prompt, *n, *timed)
	if err != nil {
		fmt.Fprintf(stderr, "gpuprofile: %v\n", err)
		return 1
	}
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Fprintln(stdout, string(out))
	return 0
}

func profile(path string, promptTokens, n int, timed bool) (Report, error) {
	var rep Report
	data, err := os.ReadFile(path)
	if err != nil {
		return rep, err
	}
	m, err := engine.Load(data, engine.LoadOptions{})
	if err != nil {
		return rep, err
	}
	h, err := webgpu.Open(webgpu.Options{})
	if err != nil {
		return rep, err
	}
	defer h.Close()
	a := h.Adapter()
	rep.Adapter = Adapter{Vendor: a.Vendor, Architecture: a.Architecture, Device: a.Device, Description: a.Description,
		Fallback: a.Fallback, Subgroups: a.Subgroups, SubgroupMin: a.SubgroupMin, SubgroupMax: a.SubgroupMax,
		F16: a.F16, TimestampQuery: a.TimestampQuery}
	for _, mat := range m.DeviceMatrices() {
		rep.MatrixBytes += int64(len(mat.Data))
		rep.Matrices++
	}
	prof := gpu.NewProfile(h)
	dev, err := gpu.NewDevice(prof, m)
	if err != nil {
		return rep, err
	}
	defer dev.Close()
	s, err := m.NewSession(engine.SessionOptions{Device: dev})
	if err != nil {
		return rep, err
	}
	defer s.Close()
	c := m.Config()
	sp := m.Tokenizer().Special()
	opts := engine.GenerateOptions{MaxTokens: n, Sampling: sampling.Params{LogitBias: map[int]float32{}}}
	for _, id := range []int{sp.BOS, sp.EOS, sp.EOT} {
		if id >= 0 && id < c.VocabSize {
			opts.Sampling.LogitBias[id] = float32(math.Inf(-1))
		}
	}
	ids := promptIDs(promptTokens, c.VocabSize, sp.BOS, opts.Sampling.LogitBias)

	// A first token uploads the weights and compiles the kernels, as the
	// page's load does; then the measured generation.
	if _, err := s.GenerateTokens(context.Background(), ids[:1], engine.GenerateOptions{MaxTokens: 1, Sampling: opts.Sampling}, nil); err != nil {
		return rep, err
	}
	s.Reset()
	if timed {
		if err := prof.SetTimed(true); err != nil {
			rep.TimedError = err.Error()
		}
	}
	rep.Timed = prof.Timed()
	first, res, err := generate(s, prof, ids, opts)
	if err != nil {
		return rep, err
	}
	decoded := len(res.Tokens) - 1
	rep.PromptTokens, rep.GeneratedTokens = len(res.PromptTokens), len(res.Tokens)
	rep.PromptSubmissions, rep.PromptDispatches = first.Submissions, first.Dispatches
	if decoded > 0 {
		rep.DecodeSubmissions = float64(prof.Submissions-first.Submissions) / float64(decoded)
		rep.DecodeDispatches = float64(prof.Dispatches-first.Dispatches) / float64(decoded)
	}
	rep.PrefillTokensPerSecond, rep.DecodeTokensPerSecond = res.Timings.PrefillTokensPerSecond(), res.Timings.DecodeTokensPerSecond()
	rep.Kernels = kernels(first.Kernels, prof.Kernels, res.Timings.PrefillTokens, decoded)
	return rep, nil
}

// counts is a Profile's counts at one moment.
type counts struct {
	Submissions, Dispatches int
	Kernels                 map[string]gpu.KernelStat
}

// generate runs a greedy generation of ids from a reset profile, and
// returns the profile's counts when the first token came (the prompt's).
func generate(s *engine.Session, prof *gpu.Profile, ids []int, opts engine.GenerateOptions) (counts, engine.Result, error) {
	prof.Reset()
	var first counts
	res, err := s.GenerateTokens(context.Background(), ids, opts, func(engine.Token) error {
		if first.Kernels == nil {
			first = counts{prof.Submissions, prof.Dispatches, maps.Clone(prof.Kernels)}
		}
		return nil
	})
	if err == nil && first.Kernels == nil {
		err = fmt.Errorf("the generation gave no token")
	}
	return first, res, err
}

// kernels are each kernel's dispatches and time per prompt token (from
// prompt, the counts when the first token came) and per generated token
// after the first (all less prompt, over decoded tokens).
func kernels(prompt, all map[string]gpu.KernelStat, promptTokens, decoded int) []Kernel {
	var out []Kernel
	for _, label := range slices.Sorted(maps.Keys(all)) {
		p, a := prompt[label], all[label]
		k := Kernel{Label: label}
		if promptTokens > 0 {
			k.PromptDispatchesPerToken = float64(p.Dispatches) / float64(promptTokens)
			k.PromptNSPerToken = float64(p.Time) / float64(promptTokens)
		}
		if decoded > 0 {
			k.DecodeDispatchesPerToken = float64(a.Dispatches-p.Dispatches) / float64(decoded)
			k.DecodeNSPerToken = float64(a.Time-p.Time) / float64(decoded)
		}
		out = append(out, k)
	}
	return out
}

// promptIDs is a prompt of n ids: BOS, then ids spread over the
// vocabulary, none banned (as wasmlm bench's prompt).
func promptIDs(n, vocab, bos int, banned map[int]float32) []int {
	ids := make([]int, 0, n)
	if bos >= 0 && bos < vocab {
		ids = append(ids, bos)
	}
	const stride = 7919
	for i := 1; len(ids) < n; i++ {
		id := i * stride % vocab
		for range min(len(banned), vocab) {
			if _, skip := banned[id]; !skip {
				break
			}
			id = (id + 1) % vocab
		}
		ids = append(ids, id)
	}
	return ids
}
