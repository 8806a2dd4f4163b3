//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The llama.cpp hosts run native llama.cpp through node-llama-cpp (pinned
// in package.json, installed by `npm ci --omit=optional`: its prebuilt CPU
// binary, no GPU builds, never compiled here) by tools/benchrun/llamacpp.mjs,
// a process per run as for our CLI hosts, on the same files.

// llamaCppHost is llama.cpp with a number of threads.
type llamaCppHost struct {
	Host
	threads int
	node    string // the node executable
	script  string // llamacpp.mjs
}

// llamaCppHosts are the wanted llama.cpp hosts, Skipped where node or
// node-llama-cpp is missing.
func llamaCppHosts(root string, want map[string]bool) []llamaCppHost {
	var hosts []llamaCppHost
	node, nodeErr := exec.LookPath("node")
	for _, threads := range []int{1, 2} {
		name := fmt.Sprintf("llama.cpp-%dt", threads)
		if !want[name] {
			continue
		}
		h := llamaCppHost{threads: threads, node: node, script: filepath.Join(root, "tools", "benchrun", "llamacpp.mjs"),
			Host: Host{Name: name, Description: fmt.Sprintf("native llama.cpp, %d thread%s, through node-llama-cpp's prebuilt CPU binary "+
				"(tools/benchrun/llamacpp.mjs): a greedy generation after the same prompt of token ids as wasmlm bench's, timed around its evaluate", threads, plural(threads))}}
		switch {
		case nodeErr != nil:
			h.Skipped = "needs Node.js (Debian package nodejs)"
		default:
			if _, err := os.Stat(filepath.Join(root, "node_modules", "node-llama-cpp", "package.json")); err != nil {
				h.Skipped = "needs node-llama-cpp: run npm ci --omit=optional"
			}
		}
		hosts = append(hosts, h)
	}
	return hosts
}

// llamaCppJSON is what llamacpp.mjs prints.
type llamaCppJSON struct {
	LoadMS                 float64 `json:"load_ms"`
	FileSize               int64   `json:"file_size"`
	KVCacheBytes           int64   `json:"kv_cache_bytes"`
	ContextLength          int     `json:"context_length"`
	PromptTokens           int     `json:"prompt_tokens"`
	GeneratedTokens        int     `json:"generated_tokens"`
	TimeToFirstTokenMS     float64 `json:"time_to_first_token_ms"`
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	DecodeTokensPerSecond  float64 `json:"decode_tokens_per_second"`
	PeakMemoryBytes        uint64  `json:"peak_memory_bytes"`
	Threads                int     `json:"threads"`
}

// run measures one model with llama.cpp in a Node process of its own.
func (h llamaCppHost) run(ctx context.Context, m benchModel, s Settings, spec runSpec) Result {
	r := newResult(h.Name, m)
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	args, err := json.Marshal(map[string]any{"model": m.Path, "threads": h.threads, "prompt": spec.Prompt, "n": spec.N, "warmupMs": s.WarmupMS})
	if err != nil {
		r.Error = err.Error()
		return r
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, h.node, h.script, string(args))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		r.Error = fmt.Sprintf("%v: %s", err, lastLines(stderr.String(), 5))
		return r
	}
	var out llamaCppJSON
	if err := json.Unmarshal([]byte(lastLine(stdout.String())), &out); err != nil {
		r.Error = fmt.Sprintf("unexpected output (%v): %.200s", err, stdout.String())
		return r
	}
	if out.Threads != h.threads {
		r.Error = fmt.Sprintf("asked for %d threads, llama.cpp ran %d", h.threads, out.Threads)
		return r
	}
	r.FileSize, r.KVCacheBytes, r.LoadMS = out.FileSize, out.KVCacheBytes, out.LoadMS
	r.KVType, r.ContextLength = "f16", out.ContextLength // llama.cpp's default cache type
	r.PromptTokens, r.GeneratedTokens, r.FinishReason = out.PromptTokens, out.GeneratedTokens, "length"
	r.TimeToFirstTokenMS, r.PrefillTokensPerSecond, r.DecodeTokensPerSecond = out.TimeToFirstTokenMS, out.PrefillTokensPerSecond, out.DecodeTokensPerSecond
	r.PeakMemoryBytes = out.PeakMemoryBytes
	r.PeakMemorySource = "the Node process's peak resident set (maxRSS): Node, the model's mapped pages and llama.cpp's buffers (its repacked copies of Q4_0 and Q4_K weights included)"
	r.ProcessPeakRSSBytes, r.ProcessPeakRSSSource = r.PeakMemoryBytes, "the Node process's maxRSS (a process per run)"
	return r
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// lastLines is the last n lines of s, on one line.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
