//go:build !js

package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchmarksServeTableIsResults: docs/benchmarks.md's table of wasmlm
// serve under load is what -print prints for bench/results-serve.json.
func TestBenchmarksServeTableIsResults(t *testing.T) {
	r, err := readResults("../../bench/results-serve.json")
	require.NoError(t, err)
	require.NotEmpty(t, r.Rows)
	var b strings.Builder
	printTable(&b, r)
	readme, err := os.ReadFile("../../docs/benchmarks.md")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(readme), b.String()), "docs/benchmarks.md lacks the table of bench/results-serve.json:\n%s", b.String())
}
