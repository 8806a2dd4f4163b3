//go:build !js

package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// benchModel is one model file the benchmark runs.
type benchModel struct {
	Name          string         // stories260K, stories15M-Q8_0, ...
	Shape         string         // stories260K, stories15M, stories110M, tinyllama
	Type          string         // the file's tensor type
	Path          string         // on disk
	URL           string         // path on the site the browser host serves
	FileSize      int64          //
	MatrixTypes   map[string]int // matrices by stored type (generated models)
	ContextLength int            // the session's: the model's, at most 4096 (as the engine sizes it)
}

// defaultContextLength is models/stories260K-F16.gguf's context length
// (`wasmlm info`): too short for the long prompt.
const defaultContextLength = 512

// maxSessionContext is the most context a session allocates (engine's
// default), and so the most the long prompt can use.
const maxSessionContext = 4096

// cliHost runs `wasmlm bench` as a process: natively, or a GOOS=js build
// under Node.
type cliHost struct {
	Host
	argv []string // the command that runs wasmlm: its binary, or a runner and the .wasm
	args []string // flags of wasmlm bench the host adds (native: -threads)
	root string   // the repository root, which Settings.Schema is relative to
}

// cliTimeout bounds one model's run on one host.
const cliTimeout = 15 * time.Minute

// cliJSON is the part of `wasmlm bench -json`'s output the harness reads.
type cliJSON struct {
	Models []cliModel `json:"models"`
}

// cliModel is one model's result in cliJSON.
type cliModel struct {
	FileSize               int64         `json:"file_size"`
	KVCacheBytes           int64         `json:"kv_cache_bytes"`
	LoadMS                 float64       `json:"load_ms"`
	PromptTokens           int           `json:"prompt_tokens"`
	GeneratedTokens        int           `json:"generated_tokens"`
	FinishReason           string        `json:"finish_reason"`
	TimeToFirstTokenMS     float64       `json:"time_to_first_token_ms"`
	PrefillTokensPerSecond float64       `json:"prefill_tokens_per_second"`
	DecodeTokensPerSecond  float64       `json:"decode_tokens_per_second"`
	PeakMemoryBytes        uint64        `json:"peak_memory_bytes"`
	PeakMemorySource       string        `json:"peak_memory_source"`
	ProcessPeakRSSBytes    uint64        `json:"process_peak_rss_bytes"`
	ContextLength          int           `json:"context_length"`
	KVType                 string        `json:"kv_type"`
	Constrained            []Constrained `json:"constrained"`
}

// cliOutput reads `wasmlm bench -json`'s output of one model into r.
func cliOutput(r *Result, stdout []byte) (cliModel, bool) {
	var out cliJSON
	if err := json.Unmarshal(stdout, &out); err != nil || len(out.Models) != 1 {
		r.Error = fmt.Sprintf("unexpected output (%v): %.200s", err, stdout)
		return cliModel{}, false
	}
	o := out.Models[0]
	r.FileSize, r.KVCacheBytes, r.LoadMS = o.FileSize, o.KVCacheBytes, o.LoadMS
	r.PromptTokens, r.GeneratedTokens, r.FinishReason = o.PromptTokens, o.GeneratedTokens, o.FinishReason
	r.TimeToFirstTokenMS, r.PrefillTokensPerSecond, r.DecodeTokensPerSecond = o.TimeToFirstTokenMS, o.PrefillTokensPerSecond, o.DecodeTokensPerSecond
	r.PeakMemoryBytes, r.PeakMemorySource = o.PeakMemoryBytes, o.PeakMemorySource
	r.KVType, r.ContextLength = cmp.Or(o.KVType, "f32"), o.ContextLength // no kv_type before the F16 cache: F32
	r.Constrained = o.Constrained
	return o, true
}

// benchArgs are `wasmlm bench`'s arguments for a run of the model at path.
func benchArgs(path string, s Settings, spec runSpec) []string {
	return []string{"bench", "-m", path, "-json",
		"-prompt", strconv.Itoa(spec.Prompt), "-n", strconv.Itoa(spec.N), "-warmup", strconv.Itoa(s.WarmupMS) + "ms"}
}

// run measures one model in a process of its own, so the peak memory is
// that model's alone (WebAssembly memory never shrinks).
func (h cliHost) run(ctx context.Context, m benchModel, s Settings, spec runSpec) Result {
	r := newResult(h.Name, m)
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	args := append(append([]string{}, h.argv[1:]...), benchArgs(m.Path, s, spec)...)
	args = append(args, h.args...)
	args = append(args, grammarArgs(s, filepath.Join(h.root, s.Schema))...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, h.argv[0], args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		r.Error = fmt.Sprintf("%v: %s", err, strings.TrimSpace(stderr.String()))
		return r
	}
	o, ok := cliOutput(&r, stdout.Bytes())
	if !ok {
		return r
	}
	if o.ProcessPeakRSSBytes > 0 {
		r.ProcessPeakRSSBytes, r.ProcessPeakRSSSource = o.ProcessPeakRSSBytes, "wasmlm bench's process: its VmHWM, reset before the model"
		if !strings.HasPrefix(h.Name, "native") {
			r.ProcessPeakRSSSource = "Node's process (the WebAssembly memory, V8 and Node): its VmHWM, reset by wasmlm bench before the model"
		}
	}
	return r
}

func newResult(host string, m benchModel) Result {
	return Result{
		Host: host, Model: m.Name, Shape: m.Shape, TensorType: m.Type, MatrixTypes: m.MatrixTypes,
		FileSize: m.FileSize, LoadAverage1m: loadAverage1m(),
	}
}

// simdFiles are what the SIMD host needs: the Node runner, the JS glue and
// the kernel module (another engineer's work in progress; the host runs
// when they are all there and the build succeeds).
func simdFiles(root string) []string {
	return []string{
		filepath.Join(root, "tools", "wasm_exec_simd.sh"),
		filepath.Join(root, "web", "simd.js"),
		filepath.Join(root, "internal", "simdgen", "kernels.wasm"),
	}
}

// buildCLIHosts builds wasmlm for each wanted CLI host into dir. A host that
// cannot run here comes back with Skipped set.
func buildCLIHosts(ctx context.Context, goCmd, root, dir string, want map[string]bool, log io.Writer) []cliHost {
	goroot := strings.TrimSpace(output(goCmd, "env", "GOROOT"))
	_, nodeErr := exec.LookPath("node")
	var hosts []cliHost
	add := func(name, desc string, build func() ([]string, string), args ...string) {
		if !want[name] {
			return
		}
		h := cliHost{Host: Host{Name: name, Description: desc}, args: args, root: root}
		h.argv, h.Skipped = build()
		if h.Skipped != "" {
			fmt.Fprintf(log, "benchrun: %s: not run: %s\n", name, h.Skipped)
		}
		hosts = append(hosts, h)
	}
	gobuild := func(out string, env []string, args ...string) string {
		cmd := exec.CommandContext(ctx, goCmd, append(append([]string{"build", "-o", out}, args...), "./cmd/wasmlm")...)
		cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Sprintf("go build %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(b))
		}
		return ""
	}
	js := []string{"GOOS=js", "GOARCH=wasm"}
	var nativeBuilt bool
	var nativeSkip string
	native := func() ([]string, string) { // one build for both native hosts
		bin := filepath.Join(dir, "wasmlm")
		if !nativeBuilt {
			nativeSkip, nativeBuilt = gobuild(bin, nil), true
		}
		return []string{bin}, nativeSkip
	}
	add("native", "wasmlm bench, a native build (GOOS/GOARCH of this machine), one thread (-threads 1)", native, "-threads", "1")
	add("native-2t", "the native build with two threads (-threads 2): each matrix product's rows split between them", native, "-threads", "2")
	add("wasm", "the same command built with GOOS=js GOARCH=wasm, run by Node (Go's go_js_wasm_exec); pure-Go kernels", func() ([]string, string) {
		if nodeErr != nil {
			return nil, "needs Node.js (Debian package nodejs)"
		}
		bin := filepath.Join(dir, "wasmlm.wasm")
		return []string{filepath.Join(goroot, "lib", "wasm", "go_js_wasm_exec"), bin}, gobuild(bin, js)
	})
	add("wasm-simd", "the wasm build with -tags wasmlm_simd, run by tools/wasm_exec_simd.sh: the SIMD128 kernels (internal/simdgen) through web/simd.js", func() ([]string, string) {
		if nodeErr != nil {
			return nil, "needs Node.js (Debian package nodejs)"
		}
		for _, f := range simdFiles(root) {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Sprintf("the SIMD kernels are not there yet (%v)", err)
			}
		}
		bin := filepath.Join(dir, "wasmlm-simd.wasm")
		return []string{simdFiles(root)[0], bin}, gobuild(bin, js, "-tags", "wasmlm_simd")
	})
	return hosts
}

// genNames are the generated models a run needs, for `wasmlm bench -gen
// -models`: the -models given (less the default model, which is not
// generated), else every type of md's shapes that md runs; nil: all.
func genNames(md mode, only []string) []string {
	var names []string
	if len(only) > 0 {
		for _, n := range only {
			if n != "stories260K" {
				names = append(names, n)
			}
		}
		return names
	}
	if md.types == nil {
		return nil
	}
	for _, s := range md.shapes {
		for _, t := range md.types {
			if s == "tinyllama" && t == "F32" {
				continue // never written
			}
			names = append(names, s+"-"+t)
		}
	}
	return names
}

// generateModels runs `wasmlm bench -gen` (which reuses what the same
// generator version already wrote) and returns the models of md (of only,
// when not empty), the default model first.
func generateModels(ctx context.Context, wasmlm, root, dir string, md mode, only []string, log io.Writer) ([]benchModel, error) {
	args := []string{"bench", "-gen", dir, "-shapes", strings.Join(md.shapes, ",")}
	if names := genNames(md, only); len(names) > 0 {
		args = append(args, "-models", strings.Join(names, ","))
	}
	cmd := exec.CommandContext(ctx, wasmlm, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, log, log
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("generating the models: %w", err)
	}
	var man struct {
		Models []struct {
			Name        string         `json:"name"`
			Shape       string         `json:"shape"`
			Type        string         `json:"type"`
			File        string         `json:"file"`
			Size        int64          `json:"size"`
			MatrixTypes map[string]int `json:"matrix_types"`
			Spec        struct {
				ContextLength int `json:"context_length"`
			} `json:"spec"`
		} `json:"models"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &man); err != nil {
		return nil, fmt.Errorf("%s/manifest.json: %w", dir, err)
	}
	var models []benchModel
	wanted := func(name, typ string) bool {
		return (len(only) == 0 || slices.Contains(only, name)) && (md.types == nil || slices.Contains(md.types, typ))
	}
	if md.defaultModel && wanted("stories260K", "F16") {
		def := filepath.Join(root, "models", "stories260K-F16.gguf")
		st, err := os.Stat(def)
		if err != nil {
			return nil, err
		}
		models = append(models, benchModel{Name: "stories260K", Shape: "stories260K", Type: "F16", Path: def,
			URL: "/models/stories260K-F16.gguf", FileSize: st.Size(), ContextLength: defaultContextLength})
	}
	for _, shape := range md.shapes {
		for _, e := range man.Models {
			if e.Shape == shape && wanted(e.Name, e.Type) {
				models = append(models, benchModel{
					Name: e.Name, Shape: e.Shape, Type: e.Type, Path: filepath.Join(dir, e.File),
					URL: modelsURL + e.File, FileSize: e.Size, MatrixTypes: e.MatrixTypes,
					ContextLength: min(e.Spec.ContextLength, maxSessionContext),
				})
			}
		}
	}
	if len(models) == 0 {
		return nil, fmt.Errorf("no model of mode's shapes %v is among -models %v", md.shapes, only)
	}
	return models, nil
}
