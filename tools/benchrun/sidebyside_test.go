//go:build !js

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlan: the long prompt runs where the context holds it and the tokens
// generated after it; TinyLlama runs only on its hosts, natively shorter.
func TestPlan(t *testing.T) {
	s := Settings{PromptTokens: 128, LongPromptTokens: 512, MaxTokens: 128}
	m := func(shape string, ctx int) benchModel { return benchModel{Shape: shape, ContextLength: ctx} }
	assert.Equal(t, []runSpec{{128, 128}}, plan("wasm", m("stories260K", defaultContextLength), s))
	assert.Equal(t, []runSpec{{128, 128}}, plan("native", m("stories15M", 256), s))
	assert.Equal(t, []runSpec{{128, 128}, {512, 128}}, plan("chromium", m("stories110M", 1024), s))
	assert.Equal(t, []runSpec{{128, 128}, {512, 128}}, plan("llama.cpp-1t", m("stories110M", 1024), s))
	assert.Equal(t, []runSpec{{128, 128}}, plan("native", m("stories110M", 638), s), "512 + 128 - 1 positions needed")
	assert.Equal(t, []runSpec{{128, 128}, {512, 128}}, plan("native", m("stories110M", 639), s))

	for _, h := range []string{"wasm", "wasm-simd", "chromium", "chromium-2w", "chromium-simd-2w"} {
		assert.Empty(t, plan(h, m("tinyllama", 2048), s), h)
	}
	for _, h := range []string{"chromium-simd", "llama.cpp-1t", "llama.cpp-2t", "wllama-1t"} {
		assert.Equal(t, []runSpec{{128, 128}, {512, 128}}, plan(h, m("tinyllama", 2048), s), h)
	}
	assert.Equal(t, []runSpec{{128, 128}, {512, 128}}, plan("native", m("tinyllama", 2048), s))
	assert.Equal(t, []runSpec{{128, 128}, {512, 128}}, plan("native-2t", m("tinyllama", 2048), s))

	s.LongPromptTokens = 0
	assert.Equal(t, []runSpec{{128, 128}}, plan("native", m("stories110M", 1024), s), "no long prompt")
}

// TestModes: each mode's models and hosts, and its results file.
func TestModes(t *testing.T) {
	full, err := modeOf("full")
	require.NoError(t, err)
	assert.True(t, full.defaultModel)
	assert.Equal(t, []string{"stories15M", "stories110M", "tinyllama"}, full.shapes)
	assert.Nil(t, full.hosts, "every host")
	assert.Equal(t, "bench/results.json", full.out)
	peers, err := modeOf("peers")
	require.NoError(t, err)
	assert.False(t, peers.defaultModel)
	assert.Equal(t, []string{"Q8_0", "Q4_0", "Q4_K"}, peers.types)
	assert.Equal(t, []string{"native", "chromium-simd", "chromium-auto", "llama.cpp-1t", "llama.cpp-2t", "wllama-1t"}, peers.hosts)
	assert.Equal(t, "bench/results-peers.json", peers.out)
	for _, h := range append(peers.hosts, heavyHosts()...) {
		assert.Contains(t, allHosts(), h)
	}
	_, err = modeOf("slow")
	assert.Error(t, err)
}

// sideBySideReport is two models, one at two prompt lengths, with the
// peers and our hosts, a failed run and a host the tables leave out.
func sideBySideReport() Report {
	r := func(host, shape, typ string, prompt int, pps, ttft, dps float64) Result {
		return Result{Host: host, Model: shape + "-" + typ, Shape: shape, TensorType: typ, Prompt: prompt, PromptTokens: prompt,
			PrefillTokensPerSecond: pps, TimeToFirstTokenMS: ttft, DecodeTokensPerSecond: dps, GeneratedTokens: 128}
	}
	native := r("native", "tinyllama", "Q4_0", 128, 1.5, 85000, 1.4)
	native.GeneratedTokens = 32
	return Report{
		Settings: Settings{PromptTokens: 128, LongPromptTokens: 512, MaxTokens: 128},
		Results: []Result{
			r("llama.cpp-1t", "stories110M", "Q4_0", 128, 400, 320, 180),
			r("llama.cpp-2t", "stories110M", "Q4_0", 128, 700, 183, 250),
			r("wllama-1t", "stories110M", "Q4_0", 128, 13, 9900, 10),
			r("chromium-simd", "stories110M", "Q4_0", 128, 220, 580, 82),
			r("wasm", "stories110M", "Q4_0", 128, 8, 16000, 6),
			r("llama.cpp-1t", "stories110M", "Q4_0", 512, 350, 1460, 66),
			{Host: "chromium-simd", Shape: "stories110M", TensorType: "Q4_0", Prompt: 512, Error: "boom"},
			r("llama.cpp-1t", "tinyllama", "Q4_0", 128, 68, 1880, 27.5),
			r("chromium-simd", "tinyllama", "Q4_0", 128, 40, 3200, 17),
			native,
			r("chromium-simd", "stories15M", "Q4_0", 128, 1400, 90, 560), // no llama.cpp: no row
		},
	}
}

// exampleTargets are bench/targets.json's with peers targets of the
// example report's hosts: prompt ≥ 0.5× llama.cpp with one thread on
// stories110M and TinyLlama, decode ≥ 0.6× on TinyLlama.
func exampleTargets(t *testing.T) Targets {
	tg := benchTargets(t)
	tg.Peers = RatioTargets{
		About: "Chromium + SIMD (one worker) against llama.cpp with one thread", OursLabel: "Chromium + SIMD", PeerLabel: "llama.cpp, 1 thread",
		Compare: []HostPair{{Ours: "chromium-simd", Peer: "llama.cpp-1t"}},
		Ratios: []RateRatio{
			{Rate: "prompt", AtLeast: 0.5, Shapes: []string{"stories110M", "tinyllama"}, Types: []string{"Q8_0", "Q4_0", "Q4_K"}},
			{Rate: "decode", AtLeast: 0.6, Shapes: []string{"tinyllama"}, Types: []string{"Q8_0", "Q4_0", "Q4_K"}},
		},
	}
	require.NoError(t, tg.check())
	return tg
}

// TestTargetsOwnPairs: a ratio with hosts of its own judges only those,
// labelled; the others the targets' pairs.
func TestTargetsOwnPairs(t *testing.T) {
	rep := sideBySideReport()
	rep.Results = append(rep.Results, Result{Host: "chromium-auto", Shape: "tinyllama", TensorType: "Q4_0", Prompt: 128, PromptTokens: 128,
		PrefillTokensPerSecond: 60, DecodeTokensPerSecond: 20, GeneratedTokens: 128, Workers: 2},
		Result{Host: "llama.cpp-2t", Shape: "tinyllama", TensorType: "Q4_0", Prompt: 128, PromptTokens: 128,
			PrefillTokensPerSecond: 120, DecodeTokensPerSecond: 30, GeneratedTokens: 128})
	tg := RatioTargets{About: "Chromium against llama.cpp", OursLabel: "Chromium", PeerLabel: "llama.cpp",
		Ratios: []RateRatio{
			{Rate: "prompt", AtLeast: 0.8, Shapes: []string{"tinyllama"}, Types: []string{"Q4_0"},
				Compare: []HostPair{{Ours: "chromium-auto", Peer: "llama.cpp-1t", Label: "'auto' ÷ 1 thread"}, {Ours: "chromium-auto", Peer: "llama.cpp-2t", Label: "'auto' ÷ 2 threads"}}},
			{Rate: "decode", AtLeast: 0.9, Shapes: []string{"tinyllama"}, Types: []string{"Q4_0"},
				Compare: []HostPair{{Ours: "chromium-simd", Peer: "llama.cpp-1t", Label: "one worker ÷ 1 thread"}}},
		}}
	require.NoError(t, Targets{Peers: tg, Native: tg, Budget: MemoryBudget{1}, Memory: MemoryTarget{FileFactor: 1}, Grammar: GrammarTarget{Host: "native", MaxDecodeShare: 1, MaxMSPerToken: 1},
		Embed: EmbedTarget{Host: "native", Peer: "llama.cpp-1t", Shapes: []string{"x"}, AtLeast: 1}}.check())
	ts := tg.judge(sideBySide(rep))
	require.Len(t, ts, 3)
	assert.Equal(t, target{What: "prompt, 'auto' ÷ 1 thread", Shape: "tinyllama", Type: "Q4_0", Prompt: 128, Ours: 60, Peer: 68, Ratio: 60.0 / 68, Needed: 0.8, Verdict: "met"}, ts[0])
	assert.Equal(t, target{What: "prompt, 'auto' ÷ 2 threads", Shape: "tinyllama", Type: "Q4_0", Prompt: 128, Ours: 60, Peer: 120, Ratio: 0.5, Needed: 0.8, Verdict: "missed"}, ts[1])
	assert.Equal(t, target{What: "decode, one worker ÷ 1 thread", Shape: "tinyllama", Type: "Q4_0", Prompt: 128, Ours: 17, Peer: 27.5, Ratio: 17 / 27.5, Needed: 0.9, Verdict: "missed"}, ts[2])
	assert.True(t, tg.hostsIn([]string{"llama.cpp-1t", "chromium-simd"}), "one of its hosts ran")
	assert.False(t, tg.hostsIn([]string{"llama.cpp-1t", "native"}))

	tg.Ratios[1].Compare = nil
	assert.ErrorContains(t, Targets{Peers: tg}.check(), "a compare is required")
}

// TestTargets: the peers targets, per model and prompt, met or missed, and
// not measured where our run failed.
func TestTargets(t *testing.T) {
	rows := sideBySide(sideBySideReport())
	require.Len(t, rows, 3)
	assert.Equal(t, []int{128, 512, 128}, []int{rows[0].Prompt, rows[1].Prompt, rows[2].Prompt})
	assert.NotContains(t, rows[0].By, "wasm", "not a side-by-side host")
	assert.Len(t, rows[0].By, 4)
	assert.NotContains(t, rows[1].By, "chromium-simd", "a failed run is no number")

	tg := exampleTargets(t)
	ts := tg.Peers.judge(rows)
	require.Len(t, ts, 4)
	assert.Equal(t, target{What: "prompt", Shape: "stories110M", Type: "Q4_0", Prompt: 128, Ours: 220, Peer: 400, Ratio: 0.55, Needed: 0.5, Verdict: "met"}, ts[0])
	assert.Equal(t, "not measured", ts[1].Verdict)
	assert.Equal(t, "prompt", ts[2].What)
	assert.InDelta(t, 40.0/68, ts[2].Ratio, 1e-12)
	assert.Equal(t, "met", ts[2].Verdict)
	assert.Equal(t, "decode", ts[3].What, "decode only on TinyLlama")
	assert.InDelta(t, 17/27.5, ts[3].Ratio, 1e-12)
	assert.Equal(t, "met", ts[3].Verdict)

	rows[2].By["chromium-simd"] = Result{DecodeTokensPerSecond: 16, PrefillTokensPerSecond: 30}
	ts = tg.Peers.judge(rows)
	assert.Equal(t, []string{"missed", "missed"}, []string{ts[2].Verdict, ts[3].Verdict}, "0.44× of prompt, 0.58× of decode")
}

// TestPrintSideBySide: one table of prompt tokens/s with TTFT, one of decode
// tokens/s with the ratios, one of the targets; columns only for the hosts
// that ran, shortened generations marked.
func TestPrintSideBySide(t *testing.T) {
	var b bytes.Buffer
	printSideBySide(&b, sideBySideReport(), exampleTargets(t))
	out := b.String()
	for _, want := range []string{
		"| model | prompt | llama.cpp, 1 thread | llama.cpp, 2 threads | wllama, 1 thread | native | Chromium + SIMD | Chromium + SIMD ÷ llama.cpp 1 thread |",
		"| stories110M Q4_0 | 128 | 400.0 (0.32 s) | 700.0 (0.18 s) | 13.0 (9.90 s) | — | 220.0 (0.58 s) | 0.55× |",
		"| stories110M Q4_0 | 512 | 350.0 (1.46 s) | — | — | — | — | — |",
		"| tinyllama Q4_0 | 128 | 68.0 (1.88 s) | — | — | 1.5 (85.00 s) | 40.0 (3.20 s) | 0.59× |",
		"| stories110M Q4_0 | 128 | 180.0 | 250.0 | 10.0 | — | 82.0 | 0.46× | 8.20× |",
		"| tinyllama Q4_0 | 128 | 27.5 | — | — | 1.4 (32 tokens) | 17.0 | 0.62× | — |",
		"Targets, Chromium + SIMD (one worker) against llama.cpp with one thread: 3 of 4 met:",
		"| prompt tok/s ≥ 0.5× | stories110M Q4_0 | 128 | 220.0 | 400.0 | 0.55× | met |",
		"| prompt tok/s ≥ 0.5× | stories110M Q4_0 | 512 | — | — | — | not measured |",
		"| decode tok/s ≥ 0.6× | tinyllama Q4_0 | 128 | 17.0 | 27.5 | 0.62× | met |",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "stories15M", "no peer measured it")
	assert.NotContains(t, out, "wasm", "not a side-by-side host")

	b.Reset()
	printSideBySide(&b, Report{Results: []Result{{Host: "native", Shape: "stories15M"}}}, exampleTargets(t))
	assert.Empty(t, b.String(), "no peers, no tables")
}

func TestLastLine(t *testing.T) {
	assert.Equal(t, `{"a":1}`, lastLine("[node-llama-cpp] a warning\n{\"a\":1}\n\n"))
	assert.Equal(t, "c | d", lastLines("a\nb\nc\nd\n", 2))
	assert.True(t, strings.HasPrefix(limitsNote, "tinyllama"))
}

// TestGenNames: a run generates only the models it needs.
func TestGenNames(t *testing.T) {
	peers, err := modeOf("peers")
	require.NoError(t, err)
	assert.Equal(t, []string{"tinyllama-Q8_0", "tinyllama-Q4_0", "tinyllama-Q4_K", "qwen3-0.6b-Q8_0", "qwen3-0.6b-Q4_0", "qwen3-0.6b-Q4_K"}, genNames(peers, nil))
	assert.Equal(t, []string{"tinyllama-Q4_0"}, genNames(peers, []string{"tinyllama-Q4_0"}))
	full, err := modeOf("full")
	require.NoError(t, err)
	assert.Nil(t, genNames(full, nil), "every model of the mode")
	assert.Equal(t, []string{"stories15M-F32"}, genNames(full, []string{"stories260K", "stories15M-F32"}))
}
