//go:build !js

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKernelKind(t *testing.T) {
	for _, c := range []struct{ label, kind string }{
		{"product/Q4_0/tile1/subgroups", "products Q4_0"},
		{"product/Q8_0/tile8/shared", "products Q8_0"},
		{"encode/Q8_0", "activation encoding"},
		{"attention single f32", "attention"},
		{"kv store f16", "KV store"},
		{"rmsnorm", "norms"},
		{"rmsnorm-inplace", "norms"},
		{"add rmsnorm", "norms"},
		{"layernorm", "norms"},
		{"rope", "rotations"},
		{"swiglu", "element-wise"},
		{"add", "element-wise"},
	} {
		assert.Equal(t, c.kind, kernelKind(c.label), c.label)
	}
}

// TestKernelKinds: kernels of a kind are added up, the kinds ordered by
// their time per generated token.
func TestKernelKinds(t *testing.T) {
	got := kernelKinds([]KernelShare{
		{Label: "add", DecodeDispatchesPerToken: 4, DecodeNSPerToken: 10},
		{Label: "product/Q4_0/tile1/subgroups", DecodeDispatchesPerToken: 7, DecodeNSPerToken: 900},
		{Label: "product/Q4_0/tile8/subgroups", PromptDispatchesPerToken: 0.9, PromptNSPerToken: 300},
		{Label: "rmsnorm", DecodeDispatchesPerToken: 2, DecodeNSPerToken: 20},
		{Label: "add rmsnorm", DecodeDispatchesPerToken: 2, DecodeNSPerToken: 30},
	})
	assert.Equal(t, []KernelShare{
		{Label: "products Q4_0", DecodeDispatchesPerToken: 7, DecodeNSPerToken: 900, PromptDispatchesPerToken: 0.9, PromptNSPerToken: 300},
		{Label: "norms", DecodeDispatchesPerToken: 4, DecodeNSPerToken: 50},
		{Label: "element-wise", DecodeDispatchesPerToken: 4, DecodeNSPerToken: 10},
	}, got)
}

// TestBoundForAdapter: a fallback adapter bounds every run; a GPU's does
// not.
func TestBoundForAdapter(t *testing.T) {
	s := Settings{PromptTokens: 128, MaxTokens: 128, LongPromptTokens: 512, WarmupMS: 1000, Limits: limitsNote}
	assert.Equal(t, s, boundForAdapter(s, GPUAdapter{Vendor: "nvidia", Architecture: "ampere"}))
	b := boundForAdapter(s, GPUAdapter{Vendor: "google", Architecture: "swiftshader", Fallback: true})
	assert.Equal(t, []int{fallbackPromptTokens, fallbackMaxTokens, 0, 0}, []int{b.PromptTokens, b.MaxTokens, b.LongPromptTokens, b.WarmupMS})
	assert.True(t, strings.HasPrefix(b.Limits, fallbackLimits))
	assert.Contains(t, b.Limits, limitsNote)
}

// TestPrintWebGPU: the tables say the adapter is a fallback one, and
// show the GPU's work per token and its kernels by kind.
func TestPrintWebGPU(t *testing.T) {
	var swiftshader GPUProfileAdapter
	swiftshader.Vendor, swiftshader.Architecture, swiftshader.Fallback = "google", "swiftshader", true
	rep := Report{
		Settings: Settings{Mode: "webgpu", PromptTokens: 8, MaxTokens: 2},
		Adapter:  &GPUAdapter{Vendor: "google", Architecture: "swiftshader", Fallback: true, Features: []string{"subgroups", "timestamp-query"}},
		Results: []Result{
			{Host: "chromium-simd", Shape: "tinyllama", TensorType: "Q4_0", Device: "cpu", PromptTokens: 8, GeneratedTokens: 2, PrefillTokensPerSecond: 30, DecodeTokensPerSecond: 10},
			{Host: "chromium-webgpu", Shape: "tinyllama", TensorType: "Q4_0", Device: "webgpu", PromptTokens: 8, GeneratedTokens: 2, PrefillTokensPerSecond: 0.1, DecodeTokensPerSecond: 0.01,
				GPU: &GPUProfile{Adapter: swiftshader, MatrixBytes: 8 << 20, Matrices: 155, PromptTokens: 8, PromptDispatches: 300, DecodeDispatches: 290, DecodeSubmissions: 1, Timed: true,
					Kernels: []KernelShare{{Label: "product/Q4_0/tile1/subgroups", DecodeDispatchesPerToken: 155, DecodeNSPerToken: 3e9}, {Label: "rope", DecodeDispatchesPerToken: 44, DecodeNSPerToken: 1e9}}}},
		},
	}
	var b strings.Builder
	printWebGPU(&b, rep)
	out := b.String()
	t.Log(out)
	assert.Contains(t, out, "The adapter is a fallback, software one")
	assert.Contains(t, out, "| tinyllama | Q4_0 | chromium-webgpu | webgpu | google/swiftshader | yes | 8 | 0.10 | 0.01 |")
	assert.Contains(t, out, "| tinyllama | Q4_0 | chromium-simd | cpu | — | — | 8 | 30.00 | 10.00 |")
	assert.Contains(t, out, "| tinyllama | Q4_0 | google/swiftshader | yes | 155 | 8.0 | 8.0 | 1.0 | 300 | 37.5 | 290.0 | 1.0 |")
	assert.Contains(t, out, "| tinyllama | Q4_0 | products Q4_0 | 155.0 | 3000.00 | 75% |")
	assert.Contains(t, out, "| tinyllama | Q4_0 | rotations | 44.0 | 1000.00 | 25% |")
}

func TestGPUFlagsOf(t *testing.T) {
	for _, c := range []struct {
		name, adapter string
		headed        bool
	}{
		{"swiftshader", "swiftshader", false},
		{"system", "", true},
	} {
		flags, err := gpuFlagsOf(c.name, c.headed)
		assert.NoError(t, err, c.name)
		assert.Equal(t, true, flags["enable-unsafe-webgpu"], c.name)
		if c.adapter != "" {
			assert.Equal(t, c.adapter, flags["use-webgpu-adapter"], c.name)
		} else {
			assert.NotContains(t, flags, "use-webgpu-adapter", c.name)
		}
		if c.headed {
			assert.Equal(t, false, flags["headless"], c.name)
		} else {
			assert.NotContains(t, flags, "headless", c.name)
		}
	}
	_, err := gpuFlagsOf("cuda", false)
	assert.ErrorContains(t, err, `-gpu "cuda"`)
}
