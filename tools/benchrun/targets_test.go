//go:build !js

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchTargets reads bench/targets.json, as `make bench` does.
func benchTargets(t *testing.T) Targets {
	t.Helper()
	tg, err := readTargets("../../bench/targets.json")
	require.NoError(t, err)
	return tg
}

// TestTargetsFileIsUsed: bench/targets.json parses, each of its lists is a
// mode's, and each judges something in the last results of that mode — a
// list no mode's tables read would be a target nobody checks.
func TestTargetsFileIsUsed(t *testing.T) {
	tg := benchTargets(t)
	read := func(mode string) Report {
		md, err := modeOf(mode)
		require.NoError(t, err)
		rep, err := readReport(filepath.Join("../..", md.out))
		require.NoError(t, err, mode)
		return rep
	}
	var b strings.Builder
	uses := map[string]func() int{
		"peers":  func() int { return len(tg.Peers.judge(sideBySide(read("peers")))) },
		"native": func() int { return len(tg.Native.judge(sideBySide(read("native")))) },
		"memory": func() int {
			n := 0
			for _, row := range memoryRows(read("memory")) {
				if r, ok := row.By[oursHost]; ok && tg.Memory.verdict(r, ok) != "not measured" {
					n++
				}
			}
			return n
		},
		"grammar": func() int {
			n := 0
			for _, g := range grammarTargets(read("grammar"), tg.Grammar) {
				if g.Measurable {
					n++
				}
			}
			return n
		},
		"embed": func() int { return len(embedTargets(embedRows(read("embed")), tg.Embed)) },
		"full": func() int {
			n := 0
			for _, r := range read("full").Results {
				if r.PeakMemoryBytes > 0 && tg.Budget.fraction(r) > 0 {
					n++
				}
			}
			return n
		},
	}
	for mode, use := range uses {
		assert.Positive(t, use(), "bench/targets.json's list for the %s mode judges nothing in its results", mode)
	}
	// Every list of the file is one of those: Targets has no other field.
	src, err := os.ReadFile("../../bench/targets.json")
	require.NoError(t, err)
	for _, key := range []string{`"peers"`, `"native"`, `"memory"`, `"grammar"`, `"embed"`, `"budget"`} {
		assert.Contains(t, string(src), key)
	}
	printAll(&b, read("peers"), tg)
	assert.Contains(t, b.String(), "Targets, "+tg.Peers.About)
}

// TestReadTargetsRefuses: a targets file with an unknown field, host or
// rate, or a target without its bound, is an error naming it.
func TestReadTargetsRefuses(t *testing.T) {
	good, err := os.ReadFile("../../bench/targets.json")
	require.NoError(t, err)
	for _, tc := range []struct{ name, from, to, want string }{
		{"unknown field", `"budget": {`, `"budget": {"extra": 1, `, "unknown field"},
		{"unknown host", `"peer": "llama.cpp-2t", "label": "workers`, `"peer": "llama.cpp-9t", "label": "workers`, "peers.compare.peer"},
		{"unknown rate", `"rate": "decode", "at_least": 0.8`, `"rate": "ttft", "at_least": 0.8`, "native.ratios.rate"},
		{"no bound", `"at_least": 0.5}`, `"at_least": 0}`, "embed"},
		{"no memory factor", `"file_factor": 1.15`, `"file_factor": 0`, "memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, string(good), tc.from)
			path := filepath.Join(t.TempDir(), "targets.json")
			require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(good), tc.from, tc.to, 1)), 0o644))
			_, err := readTargets(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
