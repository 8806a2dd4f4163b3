//go:build !js

package main

import "slices"

// runSpec is one measurement of a model on a host: a greedy generation of N
// tokens after a Prompt-token prompt, in a process (or tab) of its own.
type runSpec struct {
	Prompt, N int
}

// heavyShapes are the shapes too slow for some of our hosts: TinyLlama-1.1B,
// 10 times stories110M's work per token, the 3B shape (the memory
// benchmark's), 3 times TinyLlama's, and the Qwen3-0.6B, Gemma-3-1B,
// LFM2-1.2B and Qwen3.5-0.8B shapes (the archs and hybrid benchmarks'), about half to once TinyLlama's. The
// hosts of pure-Go kernels (wasm, chromium, chromium-2w) would take too
// long, and wasm-simd and chromium-simd-2w would repeat chromium-simd, so
// they leave them out. Natively they run in full: with the AVX2 kernels
// TinyLlama reads a prompt at 20–40 tokens/s and decodes at
// 10–15 (a machine without AVX2 takes minutes a model).
func heavyShapes() []string {
	return []string{"tinyllama", "llama3b", "qwen3-0.6b", "gemma3-1b", "lfm2-1.2b", "qwen35-0.8b"}
}

// heavyHosts are the hosts that run heavyShapes.
func heavyHosts() []string {
	return append([]string{"native", "native-2t", "chromium-simd", "chromium-auto", "chromium-webgpu"}, peerHosts()...)
}

// limitsNote is what Settings.Limits says of plan's limits.
const limitsNote = "tinyllama (and llama3b, qwen3-0.6b, gemma3-1b, lfm2-1.2b, qwen35-0.8b) run on native, chromium-simd, chromium-auto, chromium-webgpu and the peers only. " +
	"The long prompt runs where the model's context holds it and the generated tokens (stories110M, tinyllama)."

// plan is what host runs of model m: the short prompt, then the long one
// where the model's context holds it and the tokens generated after it,
// within the limits on heavyShapes. An empty plan skips the model.
func plan(host string, m benchModel, s Settings) []runSpec {
	n := s.MaxTokens
	long := s.LongPromptTokens > 0 && s.LongPromptTokens != s.PromptTokens && m.ContextLength >= s.LongPromptTokens+n-1
	if slices.Contains(heavyShapes(), m.Shape) && !slices.Contains(heavyHosts(), host) {
		return nil
	}
	out := []runSpec{{Prompt: s.PromptTokens, N: n}}
	if long {
		out = append(out, runSpec{Prompt: s.LongPromptTokens, N: n})
	}
	return out
}
