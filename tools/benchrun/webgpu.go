//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/chromedp/chromedp"

	"github.com/wasmlm/wasmlm/internal/headless"
)

// The webgpu mode (make bench BENCH=webgpu): the page's forward pass on
// the WebGPU adapter Chromium finds (WasmLM.load's device: 'webgpu')
// beside the CPU path (device: 'cpu') in the same Chromium, and, of the
// GPU's run, what the page does not show: the adapter, the submissions
// and dispatches of the prompt and of each token, the bytes of weights the
// products read per token and each kernel's time on the device
// (tools/gpuprofile, in a worker of the same browser).

// The webgpu mode's bounds on a fallback adapter (SwiftShader, which runs
// the shaders on the CPU: a TinyLlama token takes minutes there): a prompt
// of one product tile and two generated tokens (one decode step), no
// warm-up, on every host of the run, so the rows compare the same work.
const (
	fallbackPromptTokens = 8
	fallbackMaxTokens    = 2
)

// fallbackLimits is Settings.Limits on a fallback adapter.
const fallbackLimits = "the adapter is a fallback, software one (it runs the shaders on the CPU): every run is bounded to an 8-token prompt and 2 generated tokens without warm-up, and its speeds are not the GPU path's on a GPU"

// gpuFlagsOf are the Chromium flags of the webgpu mode's -gpu (and
// -headed): SwiftShader's adapter or the machine's GPU.
func gpuFlagsOf(name string, headed bool) (map[string]any, error) {
	var flags map[string]any
	switch name {
	case "swiftshader":
		flags = headless.WebGPUFlags()
	case "system":
		flags = headless.SystemGPUFlags()
	default:
		return nil, fmt.Errorf("-gpu %q: want swiftshader or system", name)
	}
	if headed {
		flags["headless"] = false
	}
	return flags, nil
}

// GPUAdapter is the WebGPU adapter of the run's Chromium, as a page sees
// it (navigator.gpu.requestAdapter(): GPUAdapterInfo, features).
type GPUAdapter struct {
	Vendor       string   `json:"vendor"`
	Architecture string   `json:"architecture"`
	Device       string   `json:"device,omitempty"`
	Description  string   `json:"description,omitempty"`
	Fallback     bool     `json:"fallback"`
	Features     []string `json:"features,omitempty"`
	Error        string   `json:"error,omitempty"` // why there is none
}

// adapterScript describes the page's adapter.
const adapterScript = `(async () => {
	if (!navigator.gpu) return { error: 'no navigator.gpu' };
	const a = await navigator.gpu.requestAdapter();
	if (!a) return { error: 'navigator.gpu.requestAdapter() gave no adapter' };
	const i = a.info ?? {};
	return { vendor: i.vendor ?? '', architecture: i.architecture ?? '', device: i.device ?? '', description: i.description ?? '',
		fallback: !!(i.isFallbackAdapter ?? a.isFallbackAdapter), features: [...a.features].sort() };
})()`

// probeAdapter describes the adapter the browser's pages find.
func (b *browser) probeAdapter() GPUAdapter {
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	var a GPUAdapter
	if err := chromedp.Do(tab, chromedp.Navigate(b.site+blankPage)); err != nil {
		return GPUAdapter{Error: err.Error()}
	}
	raw, err := chromedp.Run(tab, chromedp.Evaluate[json.RawMessage](adapterScript, chromedp.EvalAwaitPromise))
	if err == nil {
		err = json.Unmarshal(raw, &a)
	}
	if err != nil {
		return GPUAdapter{Error: err.Error()}
	}
	return a
}

// boundForAdapter bounds the run's settings where the adapter is a
// fallback one.
func boundForAdapter(s Settings, a GPUAdapter) Settings {
	if !a.Fallback {
		return s
	}
	s.PromptTokens, s.MaxTokens, s.LongPromptTokens, s.WarmupMS = fallbackPromptTokens, fallbackMaxTokens, 0, 0
	s.Limits = fallbackLimits + ". " + s.Limits
	return s
}

// GPUProfile is tools/gpuprofile's report of a model on the worker's
// adapter.
type GPUProfile struct {
	Adapter                GPUProfileAdapter `json:"adapter"`
	MatrixBytes            int64             `json:"matrix_bytes"`
	Matrices               int               `json:"matrices"`
	PromptTokens           int               `json:"prompt_tokens"`
	GeneratedTokens        int               `json:"generated_tokens"`
	PromptSubmissions      int               `json:"prompt_submissions"`
	PromptDispatches       int               `json:"prompt_dispatches"`
	DecodeSubmissions      float64           `json:"decode_submissions_per_token"`
	DecodeDispatches       float64           `json:"decode_dispatches_per_token"`
	PrefillTokensPerSecond float64           `json:"prefill_tokens_per_second"`
	DecodeTokensPerSecond  float64           `json:"decode_tokens_per_second"`
	Kernels                []KernelShare     `json:"kernels"`
	Timed                  bool              `json:"timed"`
	TimedError             string            `json:"timed_error,omitempty"`
	Error                  string            `json:"error,omitempty"`
}

// GPUProfileAdapter is the adapter and device tools/gpuprofile ran on.
type GPUProfileAdapter struct {
	Vendor         string `json:"vendor"`
	Architecture   string `json:"architecture"`
	Description    string `json:"description"`
	Fallback       bool   `json:"fallback"`
	Subgroups      bool   `json:"subgroups"`
	SubgroupMin    int    `json:"subgroup_min"`
	SubgroupMax    int    `json:"subgroup_max"`
	F16            bool   `json:"shader_f16"`
	TimestampQuery bool   `json:"timestamp_query"`
}

// KernelShare is one kernel's dispatches and time on the device per token.
type KernelShare struct {
	Label                    string  `json:"label"`
	PromptDispatchesPerToken float64 `json:"prompt_dispatches_per_token"`
	PromptNSPerToken         float64 `json:"prompt_ns_per_token"`
	DecodeDispatchesPerToken float64 `json:"decode_dispatches_per_token"`
	DecodeNSPerToken         float64 `json:"decode_ns_per_token"`
}

// gpuProfileBinary is tools/gpuprofile's build on the run's site.
const gpuProfileBinary = "gpuprofile.wasm"

// setUpWebGPU describes the browser's adapter into rep, bounds the run's
// settings (c's and rep's) where it is a fallback one, and builds and
// serves tools/gpuprofile (a build that fails leaves the GPU's rows
// without its report, and the limits say why).
func (b *browser) setUpWebGPU(ctx context.Context, c *config, rep *Report, log io.Writer) {
	a := b.probeAdapter()
	rep.Adapter = &a
	if a.Error != "" {
		fmt.Fprintf(log, "benchrun: no WebGPU adapter: %s\n", a.Error)
		return
	}
	fmt.Fprintf(log, "benchrun: WebGPU adapter %s/%s %q, fallback %v\n", a.Vendor, a.Architecture, a.Description, a.Fallback)
	c.settings = boundForAdapter(c.settings, a)
	if err := buildJS(ctx, c.goCmd, c.root, "./tools/gpuprofile", filepath.Join(c.tmp, gpuProfileBinary), false, ""); err != nil {
		fmt.Fprintf(log, "benchrun: tools/gpuprofile: %v\n", err)
		c.settings.Limits += " tools/gpuprofile did not build: " + oneLine(err.Error())
	} else {
		if !b.cliMounted {
			b.mountCLI(c.root, c.tmp)
		}
		b.gpuProfile = true
	}
	rep.Settings = c.settings
}

// runGPUProfile runs tools/gpuprofile on m in a worker of a tab of its
// own, timed, with spec's prompt and tokens.
func (b *browser) runGPUProfile(ctx context.Context, m benchModel, spec runSpec, log io.Writer) *GPUProfile {
	model := "/models/" + filepath.Base(m.Path)
	run := cliRun{
		Binary: cliBuildURL + gpuProfileBinary,
		Argv:   []string{"gpuprofile", "-m", model, "-prompt", strconv.Itoa(spec.Prompt), "-n", strconv.Itoa(max(spec.N, 2)), "-timed"},
		Env:    map[string]string{}, Cwd: "/", Files: map[string]string{model: m.URL},
	}
	fmt.Fprintf(log, "benchrun: gpuprofile %s, %d-token prompt, %d generated, timed...\n", m.Name, spec.Prompt, max(spec.N, 2))
	p := &GPUProfile{}
	res, err := b.runCLI(ctx, run)
	if err == nil {
		if err = json.Unmarshal([]byte(res.Stdout), p); err != nil {
			err = fmt.Errorf("unexpected output (%v): %.200s", err, res.Stdout)
		}
	}
	if err != nil {
		p.Error = err.Error()
		fmt.Fprintf(log, "benchrun:   error: %s\n", p.Error)
		return p
	}
	fmt.Fprintf(log, "benchrun:   %d dispatches for the prompt, %.1f a generated token; %.1f MiB of weights a token\n",
		p.PromptDispatches, p.DecodeDispatches, float64(p.MatrixBytes)/(1<<20))
	return p
}
