package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// TestSplitCommandWritesLlamaCppParts: wasmlm split -max-tensors 10 writes
// the parts llama-gguf-split --split-max-tensors 10 wrote from the same
// model (testdata/split-merge.json), from the whole file and from a split
// set named by its first part alike.
func TestSplitCommandWritesLlamaCppParts(t *testing.T) {
	var golden mergeGolden
	data, err := os.ReadFile(mergeGoldenPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &golden))
	whole, first, _ := splitModel(t)
	for _, model := range []string{whole, first} {
		prefix := filepath.Join(t.TempDir(), "out")
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"split", "-max-tensors", "10", model, prefix}, &stdout, &stderr)
		require.Equal(t, exitOK, code, stderr.String())
		var got []string
		for i := range golden.Parts {
			b, err := os.ReadFile(gguf.SplitPath(prefix, i+1, len(golden.Parts)))
			require.NoError(t, err)
			got = append(got, digest(b))
			assert.Contains(t, stdout.String(), filepath.Base(gguf.SplitPath(prefix, i+1, len(golden.Parts))))
		}
		assert.Equal(t, golden.Parts, got, model)
	}
}

// TestSplitCommandMaxSize: with -max-size each part's tensor data stays
// within the bound, and the parts join back into the model's tensors.
func TestSplitCommandMaxSize(t *testing.T) {
	whole, _, _ := splitModel(t)
	prefix := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"split", "-max-size", "40K", whole, prefix}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	orig, err := os.ReadFile(whole)
	require.NoError(t, err)
	want, err := gguf.Parse(orig)
	require.NoError(t, err)
	joined, err := readModel(gguf.SplitPath(prefix, 1, 4))
	require.NoError(t, err, stdout.String())
	got, err := gguf.Parse(joined)
	require.NoError(t, err)
	require.Len(t, got.Tensors(), len(want.Tensors()))
	for i, ti := range want.Tensors() {
		assert.Equal(t, ti.Name, got.Tensors()[i].Name)
		assert.Equal(t, ti.Data, got.Tensors()[i].Data, ti.Name)
	}
	for i := 1; i <= 4; i++ {
		b, err := os.ReadFile(gguf.SplitPath(prefix, i, 4))
		require.NoError(t, err)
		f, err := gguf.Parse(b)
		require.NoError(t, err)
		var n int
		for _, ti := range f.Tensors() {
			n += len(ti.Data)
		}
		assert.LessOrEqual(t, n, 40_000, "part %d", i)
	}
}

func TestSplitCommandErrors(t *testing.T) {
	whole, _, _ := splitModel(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no bound", []string{whole, "out"}, exitUsage, "give -max-size"},
		{"both bounds", []string{"-max-size", "1M", "-max-tensors", "3", whole, "out"}, exitUsage, "give one of them"},
		{"bad size", []string{"-max-size", "12X", whole, "out"}, exitUsage, `-max-size "12X"`},
		{"negative tensors", []string{"-max-tensors", "-2", whole, "out"}, exitUsage, "positive count"},
		{"missing model", []string{"-max-size", "1M", filepath.Join(t.TempDir(), "none.gguf"), "out"}, exitError, "none.gguf"},
		{"part smaller than a tensor", []string{"-max-size", "100", whole, filepath.Join(t.TempDir(), "out")}, exitError, "split:"},
		{"one argument", []string{"-max-size", "1M", whole}, exitUsage, "usage: wasmlm split"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"split"}, tc.args...), &stdout, &stderr)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}
