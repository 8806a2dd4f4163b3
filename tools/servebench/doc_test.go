//go:build !js

package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tools/benchdoc"
)

// TestBenchmarksServeTableIsResults: docs/benchmarks.md's table of wasmlm
// serve under load, its block of bench/results-serve.json, is what -print
// prints for that file.
func TestBenchmarksServeTableIsResults(t *testing.T) {
	r, err := readResults("../../bench/results-serve.json")
	require.NoError(t, err)
	require.NotEmpty(t, r.Rows)
	var b strings.Builder
	printTable(&b, r)
	page, err := os.ReadFile("../../docs/benchmarks.md")
	require.NoError(t, err)
	tables := benchdoc.Tables(b.String())
	require.Len(t, tables, 1)
	var found bool
	for _, m := range benchdoc.Block.FindAllStringSubmatch(string(page), -1) {
		if m[1] == "bench/results-serve.json" {
			found = true
			assert.Equal(t, "1", m[2])
			assert.Equal(t, benchdoc.Text(tables[0]), m[3], "docs/benchmarks.md's table of bench/results-serve.json")
		}
	}
	assert.True(t, found, "docs/benchmarks.md has no block of bench/results-serve.json")
}
