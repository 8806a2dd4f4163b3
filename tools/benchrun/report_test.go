//go:build !js

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPeersFile: bench/peers.json has the peers' numbers, where they come
// from, each with a target and a shape and type our benchmark measures.
func TestPeersFile(t *testing.T) {
	p, err := readPeers("../../bench/peers.json")
	require.NoError(t, err)
	assert.Contains(t, p.Source, "measured")
	require.Len(t, p.Peers, 11)
	for _, peer := range p.Peers {
		assert.Contains(t, []string{"stories15M", "stories110M"}, peer.Shape)
		assert.Contains(t, []string{"F32", "Q8_0", "Q4_0", "Q4_K"}, peer.Type)
		assert.Contains(t, []string{"match", "match-all-workers", "stretch-half"}, peer.Target)
		assert.Positive(t, peer.DecodeTokensPerSecond)
	}
}

// TestCompare: each peer is paired with our numbers of its shape and type,
// and the verdict uses the browser (the SIMD page when it ran) against the
// peer's target.
func TestCompare(t *testing.T) {
	results := []Result{
		{Host: "chromium", Shape: "stories15M", TensorType: "F32", DecodeTokensPerSecond: 100},
		{Host: "wasm-simd", Shape: "stories15M", TensorType: "F32", DecodeTokensPerSecond: 200},
		{Host: "wasm", Shape: "stories15M", TensorType: "F32", DecodeTokensPerSecond: 50},
		{Host: "chromium", Shape: "stories110M", TensorType: "Q8_0", DecodeTokensPerSecond: 20},
		{Host: "chromium-simd", Shape: "stories110M", TensorType: "Q8_0", DecodeTokensPerSecond: 40},
		{Host: "chromium", Shape: "stories110M", TensorType: "Q4_0", Error: "boom"},
	}
	peers := []Peer{
		{Name: "a", Shape: "stories15M", Type: "F32", DecodeTokensPerSecond: 133, Target: "match"},
		{Name: "b", Shape: "stories110M", Type: "Q8_0", DecodeTokensPerSecond: 29, Target: "match-all-workers"},
		{Name: "c", Shape: "stories110M", Type: "Q8_0", DecodeTokensPerSecond: 62, Target: "stretch-half"},
		{Name: "d", Shape: "stories110M", Type: "Q4_0", DecodeTokensPerSecond: 13, Target: "match"},
	}
	cs := compare(results, peers)
	require.Len(t, cs, 4)
	assert.Equal(t, map[string]float64{"chromium": 100, "wasm-simd": 200}, cs[0].Ours, "wasm is not a comparison host")
	assert.Equal(t, "missed (chromium 0.75×, target ≥ 1×)", cs[0].Verdict)
	assert.Equal(t, "met (chromium-simd with 1 worker 1.38×, target ≥ 1× with all workers)", cs[1].Verdict)
	assert.Equal(t, "met (chromium-simd 0.65×, stretch target ≥ 0.5×)", cs[2].Verdict)
	assert.Empty(t, cs[3].Ours, "a failed run is no number")
	assert.Equal(t, "not measured", cs[3].Verdict)
}

// TestPrintTable: one row per result, sorted by shape, type and host; errors
// and skipped hosts are shown; the K-quant fallback is spelled out.
func TestPrintTable(t *testing.T) {
	rep := Report{
		Settings: Settings{Mode: "quick", PromptTokens: 128, MaxTokens: 128},
		Hosts:    []Host{{Name: "chromium-simd", Skipped: "not yet"}},
		Results: []Result{
			{Host: "chromium", Model: "stories15M-Q4_K", Shape: "stories15M", TensorType: "Q4_K", MatrixTypes: map[string]int{"Q4_K": 6, "Q5_0": 37}, DecodeTokensPerSecond: 44.6, GeneratedTokens: 128},
			{Host: "native", Model: "stories15M-Q4_K", Shape: "stories15M", TensorType: "Q4_K", MatrixTypes: map[string]int{"Q4_K": 6, "Q5_0": 37}, DecodeTokensPerSecond: 82.4, GeneratedTokens: 128, PeakMemorySource: "VmHWM"},
			{Host: "wasm", Model: "stories260K", Shape: "stories260K", TensorType: "F16", Error: "exit status 1:\n  no\n node"},
			{Host: "native", Model: "stories15M-F32", Shape: "stories15M", TensorType: "F32", DecodeTokensPerSecond: 136.8, GeneratedTokens: 100,
				PromptTokens: 128, PrefillTokensPerSecond: 301.25, TimeToFirstTokenMS: 425.4,
				PeakMemoryBytes: 80 << 20, ProcessPeakRSSBytes: 82 << 20, ProcessPeakRSSSource: "its VmHWM", FileSize: 60 << 20},
		},
	}
	sortResults(rep.Results, allHosts())
	var b bytes.Buffer
	printTable(&b, rep, benchTargets(t).Budget)
	out := b.String()
	rows := []string{}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "| stories") {
			rows = append(rows, l)
		}
	}
	require.Len(t, rows, 4, out)
	assert.Contains(t, rows[0], "| stories260K | F16 | wasm | 128 | error: exit status 1: no node |", "the prompt asked for")
	assert.Contains(t, rows[1], "| F32 | native | 128 | 301.2 | 425 | 136.8 (100 tokens) | 80.0 | 82.0 | 60.0 |", "prompt tokens, prompt tok/s, TTFT, decode, peak, process, file")
	assert.Contains(t, rows[3], "| 44.6 | — | — | 0.0 |", "no peak memory, no process peak")
	assert.Contains(t, rows[2], "| Q4_K (6 of 43 matrices; 37 Q5_0) | native | 0 | 0.0 | 0 | 82.4 |")
	assert.Contains(t, rows[3], "| chromium | 0 | 0.0 | 0 | 44.6 |")
	assert.Contains(t, out, "| model | type | host | prompt | prompt tok/s | TTFT ms | decode tok/s | peak MiB | process MiB |")
	assert.Contains(t, out, "peak / budget")
	assert.InDelta(t, 0.5, benchTargets(t).Budget.fraction(Result{PeakMemoryBytes: 80, FileSize: 100, KVCacheBytes: 40}), 1e-12, "80 of 1.2·100 + 40")
	assert.Contains(t, out, "chromium-simd: not run: not yet")
	assert.Contains(t, out, "native: VmHWM")
	assert.Contains(t, out, "process — the peak resident memory of the process that ran the model: native: its VmHWM.")
}

// TestPrintPeers: peers of shapes not measured are left out, and so are our
// hosts without numbers.
func TestPrintPeers(t *testing.T) {
	rep := Report{
		Results: []Result{{Host: "chromium", Shape: "stories15M", TensorType: "Q8_0", DecodeTokensPerSecond: 50}},
		Peers: PeerFile{Source: "measured by hand", Peers: []Peer{
			{Name: "wllama", Host: "chromium", Threads: 1, Shape: "stories15M", Type: "Q8_0", DecodeTokensPerSecond: 100, Target: "match"},
			{Name: "wllama", Host: "chromium", Threads: 2, Shape: "stories110M", Type: "Q8_0", DecodeTokensPerSecond: 29, Target: "match-all-workers"},
		}},
	}
	var b bytes.Buffer
	printPeers(&b, rep)
	out := b.String()
	assert.Contains(t, out, "| stories15M | Q8_0 | wllama | chromium, 1 thread | 100.0 | 50.0 | 0.50× | missed (chromium 0.50×, target ≥ 1×) |")
	assert.NotContains(t, out, "stories110M")
	assert.NotContains(t, out, "wasm-simd")
}

func TestRunUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-mode", "slow"}, `-mode "slow"`},
		{[]string{"-hosts", "native,safari"}, `unknown host "safari"`},
		{[]string{"-hosts", "native", "-targets", "missing-targets.json"}, `-targets: open missing-targets.json`},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), tt.args, &out, &errOut))
		assert.Contains(t, errOut.String(), tt.want)
	}
}
