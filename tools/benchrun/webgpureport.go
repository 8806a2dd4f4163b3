//go:build !js

package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// printWebGPU writes the webgpu mode's tables: the page's speed on each
// device, the GPU's work per token (tools/gpuprofile: dispatches,
// submissions, bytes of weights) and its kernels' time by kind.
func printWebGPU(w io.Writer, rep Report) {
	var rows []Result
	for _, r := range rep.Results {
		if r.Device != "" || r.GPU != nil || r.Host == "chromium-webgpu" {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 && rep.Adapter == nil {
		return
	}
	m := rep.Machine
	fmt.Fprintf(w, "\nThe GPU path (%s, %s; %s, %d cores; load average %s → %s): prompt %d tokens, %d generated, warm-up %d ms\n",
		m.Date, m.ChromiumVersion, m.CPU, m.Cores, m.LoadAverageStart, m.LoadAverageEnd,
		rep.Settings.PromptTokens, rep.Settings.MaxTokens, rep.Settings.WarmupMS)
	if a := rep.Adapter; a != nil {
		if a.Error != "" {
			fmt.Fprintf(w, "WebGPU adapter: none (%s)\n", a.Error)
		} else {
			fmt.Fprintf(w, "WebGPU adapter: %s; features %s\n", adapterLabel(*a), strings.Join(a.Features, ", "))
		}
		if a.Fallback {
			fmt.Fprintln(w, "The adapter is a fallback, software one: its numbers say nothing of a GPU's speed.")
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| model | type | host | device | adapter | fallback | prompt | prompt tok/s | decode tok/s | load s |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|--:|--:|--:|--:|")
	for _, r := range rows {
		adapter, fallback := "—", "—"
		if (r.Device == "webgpu" || r.Host == "chromium-webgpu") && rep.Adapter != nil {
			adapter, fallback = adapterLabel(*rep.Adapter), yesNo(rep.Adapter.Fallback)
		}
		if r.Error != "" {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | error: %s | | | |\n", r.Shape, r.TensorType, r.Host, cmp.Or(r.Device, "—"), adapter, fallback, oneLine(r.Error))
			continue
		}
		decode := fmt.Sprintf("%.2f", r.DecodeTokensPerSecond)
		if r.GeneratedTokens != rep.Settings.MaxTokens {
			decode += fmt.Sprintf(" (%d tokens)", r.GeneratedTokens)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d | %.2f | %s | %.1f |\n", r.Shape, r.TensorType, r.Host, r.Device, adapter, fallback,
			r.PromptTokens, r.PrefillTokensPerSecond, decode, r.LoadMS/1000)
	}

	fmt.Fprintln(w, "\nThe GPU's work per token (tools/gpuprofile, the same forward pass in a worker of the same browser):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| model | type | adapter | fallback | matrices | weights MiB | weights read / generated token MiB | / prompt token MiB | dispatches: prompt | per prompt token | per generated token | submissions / generated token |")
	fmt.Fprintln(w, "|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		p := r.GPU
		if p == nil {
			continue
		}
		if p.Error != "" {
			fmt.Fprintf(w, "| %s | %s | error: %s | | | | | | | | | |\n", r.Shape, r.TensorType, oneLine(p.Error))
			continue
		}
		a := GPUAdapter{Vendor: p.Adapter.Vendor, Architecture: p.Adapter.Architecture, Description: p.Adapter.Description}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s | %s | %s | %d | %.1f | %.1f | %.1f |\n", r.Shape, r.TensorType,
			adapterLabel(a), yesNo(p.Adapter.Fallback), p.Matrices,
			mib(uint64(p.MatrixBytes)), mib(uint64(p.MatrixBytes)), mib(uint64(p.MatrixBytes/productTile)),
			p.PromptDispatches, float64(p.PromptDispatches)/float64(max(p.PromptTokens, 1)), p.DecodeDispatches, p.DecodeSubmissions)
	}
	printKernelKinds(w, rows)
}

// productTile is the tokens a prompt product's workgroup computes at once
// (engine/gpu's productTile), each weight read once for them.
const productTile = 8

// printKernelKinds writes each GPU row's kernels by kind: dispatches and
// time on the device per generated token and per prompt token.
func printKernelKinds(w io.Writer, rows []Result) {
	header := false
	for _, r := range rows {
		p := r.GPU
		if p == nil || p.Error != "" || !p.Timed {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nTime on the device by kernel kind (timestamp-query; each dispatch timed in a compute pass of its own), per token:")
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| model | type | kernels | dispatches / generated token | ms / generated token | share | dispatches / prompt token | ms / prompt token | share |")
			fmt.Fprintln(w, "|---|---|---|--:|--:|--:|--:|--:|--:|")
			header = true
		}
		kinds := kernelKinds(p.Kernels)
		var decode, prompt float64
		for _, k := range kinds {
			decode += k.DecodeNSPerToken
			prompt += k.PromptNSPerToken
		}
		for _, k := range kinds {
			fmt.Fprintf(w, "| %s | %s | %s | %.1f | %.2f | %s | %.2f | %.2f | %s |\n", r.Shape, r.TensorType, k.Label,
				k.DecodeDispatchesPerToken, k.DecodeNSPerToken/1e6, share(k.DecodeNSPerToken, decode),
				k.PromptDispatchesPerToken, k.PromptNSPerToken/1e6, share(k.PromptNSPerToken, prompt))
		}
	}
}

// kernelKinds adds up kernels of a kind (kernelKind), the most time per
// generated token first.
func kernelKinds(ks []KernelShare) []KernelShare {
	byKind := map[string]*KernelShare{}
	var out []*KernelShare
	for _, k := range ks {
		kind := kernelKind(k.Label)
		s := byKind[kind]
		if s == nil {
			s = &KernelShare{Label: kind}
			byKind[kind] = s
			out = append(out, s)
		}
		s.DecodeDispatchesPerToken += k.DecodeDispatchesPerToken
		s.DecodeNSPerToken += k.DecodeNSPerToken
		s.PromptDispatchesPerToken += k.PromptDispatchesPerToken
		s.PromptNSPerToken += k.PromptNSPerToken
	}
	slices.SortStableFunc(out, func(a, b *KernelShare) int {
		return cmp.Or(cmp.Compare(b.DecodeNSPerToken, a.DecodeNSPerToken), cmp.Compare(b.PromptNSPerToken, a.PromptNSPerToken))
	})
	res := make([]KernelShare, len(out))
	for i, s := range out {
		res[i] = *s
	}
	return res
}

// kernelKind is the kind of engine/gpu's kernel label: the products by
// weight type (product/Q4_0/tile8/subgroups), the activations' encoding
// for them (encode/Q8_0), attention, the KV cache's store, norms,
// rotations, and the element-wise rest (residual adds, gated units,
// biases, scales, copies).
func kernelKind(label string) string {
	switch {
	case strings.HasPrefix(label, "product/"):
		return "products " + strings.Split(label, "/")[1]
	case strings.HasPrefix(label, "encode/"):
		return "activation encoding"
	case strings.HasPrefix(label, "attention"):
		return "attention"
	case strings.HasPrefix(label, "kv store"):
		return "KV store"
	case strings.Contains(label, "norm"):
		return "norms"
	case strings.HasPrefix(label, "rope"):
		return "rotations"
	}
	return "element-wise"
}

func share(part, whole float64) string {
	if whole <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f%%", 100*part/whole)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// adapterLabel names an adapter: vendor/architecture, and its
// description where it has one.
func adapterLabel(a GPUAdapter) string {
	s := a.Vendor + "/" + a.Architecture
	if a.Description != "" {
		s += " (" + a.Description + ")"
	}
	return s
}
