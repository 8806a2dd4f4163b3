//go:build !js

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMB(t *testing.T) {
	assert.Equal(t, "0 MB", mb(0))
	assert.Equal(t, "620 MB", mb(619_895_424))
	assert.Equal(t, "1,140 MB", mb(1_140_000_000))
	assert.Equal(t, "12,345,678 MB", mb(12_345_678e6))
	assert.EqualValues(t, 2, kvBytes("f16"))
	assert.EqualValues(t, 4, kvBytes("f32"))
	assert.EqualValues(t, 4, kvBytes(""), "older records: F32")
}

// memoryReport is the memory mode's run: TinyLlama on our three hosts,
// the 3B shape with wllama failing, and results the table leaves out.
func memoryReport() Report {
	const tiny, b3 = 619_895_424, 1_697_000_000
	r := func(host, shape string, file int64, kv int64, kvType string, process uint64) Result {
		return Result{Host: host, Model: shape + "-Q4_0", Shape: shape, TensorType: "Q4_0", Prompt: 128, FileSize: file,
			KVCacheBytes: kv, KVType: kvType, ContextLength: 2048, ProcessPeakRSSBytes: process, GeneratedTokens: 32}
	}
	ours := r("chromium-simd", "tinyllama", tiny, 92_274_688, "f32", 786_000_000)
	ours.PeakMemoryBytes = 730_000_000
	ours.ProcessRSSBeforeLoadBytes, ours.ProcessRSSAfterUnloadBytes, ours.OtherRenderersRSSBytes = 119e6, 170e6, 325e6
	ours.OtherProcess, ours.OtherProcessPeakRSSBytes, ours.CacheStorage = "browser", 233e6, "opfs"
	peer := r("wllama-1t", "tinyllama", tiny, 46_137_344, "f16", 1_140_000_000)
	peer.ProcessRSSBeforeLoadBytes, peer.OtherProcess = 120e6, "browser"
	big := r("chromium-simd", "llama3b", b3, 939_524_096, "f32", 3_100_000_000)
	big.ContextLength = 4096
	return Report{
		Settings: Settings{Mode: "memory", PromptTokens: 128, MaxTokens: 32},
		Results: []Result{
			r("native", "tinyllama", tiny, 92_274_688, "f32", 700_000_000),
			ours, peer,
			big,
			{Host: "wllama-1t", Model: "llama3b-Q4_0", Shape: "llama3b", TensorType: "Q4_0", Prompt: 128, FileSize: b3, Error: "wllama: out of\n memory"},
			r("chromium-simd", "stories110M", 62e6, 1, "f32", 200e6),   // not a memory shape
			r("llama.cpp-1t", "tinyllama", tiny, 46_137_344, "f16", 1), // not a memory host
		},
	}
}

// TestPrintMemory: a row per model of the 1.1B and 3B shapes, our
// renderer's peak against the target, wllama's and native's beside it,
// failures and what each Chromium run's processes held said below.
func TestPrintMemory(t *testing.T) {
	rep := memoryReport()
	rows := memoryRows(rep)
	require.Len(t, rows, 2)
	assert.Len(t, rows[0].By, 3, "native, chromium-simd and wllama: not llama.cpp")
	m := benchTargets(t).Memory
	assert.InDelta(t, 1.15*619_895_424+92_274_688+150e6, m.bound(rep.Results[1]), 1e-6)

	var b bytes.Buffer
	printMemory(&b, rep, m)
	out := b.String()
	for _, want := range []string{
		"Peak resident memory of the process that ran the model (the target: the worker's process in Chromium ≤ 1.15 × file + KV cache + 150 MB; MB = 10⁶ bytes), 32 tokens generated after a 128-token prompt:",
		"| model | file | KV cache | Chromium + SIMD, renderer | its WebAssembly memory | target | | wllama, 1 thread, renderer | native, wasmlm |",
		"| tinyllama Q4_0 | 620 MB | 92 MB (f32, 2048 positions) | 786 MB (1.27×) | 730 MB | 955 MB | met | 1,140 MB (1.84×) | 700 MB (1.13×) |",
		"| llama3b Q4_0 | 1,697 MB | 940 MB (f32, 4096 positions) | 3,100 MB (1.83×) | — | 3,041 MB | missed | failed | — |",
		"- Chromium + SIMD on tinyllama Q4_0: the tab's renderer held 119 MB before the load and 170 MB after the unload, the other renderers 325 MB; the largest other Chromium process (browser) peaked at 233 MB; the model cache: opfs.",
		"- wllama, 1 thread on tinyllama Q4_0: the tab's renderer held 120 MB before the load and 0 MB after the unload, the other renderers 0 MB; the largest other Chromium process (browser) peaked at 0 MB; its KV cache: 46 MB (f16).",
		"- wllama, 1 thread on llama3b Q4_0 failed: wllama: out of memory.",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "stories110M")

	assert.Equal(t, "not measured", m.verdict(Result{}, false))
	assert.Equal(t, "not measured", m.verdict(Result{FileSize: 1, Error: "boom"}, true))
	assert.Equal(t, "not measured", m.verdict(Result{FileSize: 1}, true), "an older record, without the process's peak")

	b.Reset()
	printMemory(&b, Report{Results: []Result{{Host: "native", Shape: "tinyllama", ProcessPeakRSSBytes: 1}}}, m)
	assert.Empty(t, b.String(), "no browser host ran a memory shape: the speed benchmark's native-only run")
}

// TestMemoryMode: the memory mode's models, hosts and defaults, which the
// command line overrides.
func TestMemoryMode(t *testing.T) {
	md, err := modeOf("memory")
	require.NoError(t, err)
	assert.Equal(t, []string{"tinyllama", "llama3b"}, md.shapes)
	assert.Equal(t, []string{"tinyllama-Q4_0", "llama3b-Q4_0"}, genNames(md, nil))
	assert.Equal(t, []string{"native", "chromium-simd", "wllama-1t"}, md.hosts)
	assert.Equal(t, "bench/results-memory.json", md.out)
	assert.True(t, md.cache, "the page's default options")

	s := Settings{PromptTokens: 128, LongPromptTokens: 512, MaxTokens: 128}
	got, gs := md.with(s, map[string]bool{}, false)
	assert.Equal(t, Settings{PromptTokens: 128, MaxTokens: memoryTokens}, gs)
	assert.True(t, got.cache)
	got, gs = md.with(s, map[string]bool{"n": true, "long-prompt": true, "cache": true}, false)
	assert.Equal(t, s, gs, "what the command line says wins")
	assert.False(t, got.cache)

	full, err := modeOf("full")
	require.NoError(t, err)
	got, gs = full.with(s, map[string]bool{}, false)
	assert.Equal(t, s, gs)
	assert.False(t, got.cache, "the speed benchmark reads the model from the server")

	big := benchModel{Shape: "llama3b", ContextLength: 4096}
	assert.Empty(t, plan("chromium", big, s))
	assert.Equal(t, []runSpec{{128, 128}, {512, 128}}, plan("native", big, s))
	assert.Equal(t, []runSpec{{128, memoryTokens}}, plan("wllama-1t", big, withDefaults(md, s)))
	assert.Equal(t, []string{"{ cache: false, simd: true, workers: 1 }", "{ simd: false, workers: 2 }"},
		[]string{loadOptions(browserHost{simd: true}), loadOptions(browserHost{cache: true, workers: 2})})
}

// withDefaults is s with md's defaults.
func withDefaults(md mode, s Settings) Settings {
	_, s = md.with(s, map[string]bool{}, false)
	return s
}
