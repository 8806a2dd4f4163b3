//go:build !js

package llamacppref

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestRunnerReportsRefusal: llama.cpp runs a model modelgen writes, and
// refuses one that lacks a tensor its architecture needs (qwen3 without
// blk.0.attn_q_norm.weight), saying so in that job's Output, not failing
// the others. Skipped without Node.js or node-llama-cpp, except in CI.
func TestRunnerReportsRefusal(t *testing.T) {
	r := Need(t)
	sp := modelgen.Spec{Arch: "qwen3", Shape: modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 32,
		VocabSize: 300, ContextLength: 64}, Seed: 1, MuteSpecial: true}
	good, err := modelgen.Build(sp)
	require.NoError(t, err)
	f, err := gguf.Parse(good)
	require.NoError(t, err)
	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors() {
		if ti.Name != "blk.0.attn_q_norm.weight" {
			b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
		}
	}
	bad, err := b.Bytes()
	require.NoError(t, err)

	dir := t.TempDir()
	var jobs []Job
	for name, data := range map[string][]byte{"good.gguf": good, "bad.gguf": bad} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, data, 0o644))
		jobs = append(jobs, Job{Model: path, Prompts: [][]int{{1, 7}}, Tokens: 4, TopK: 3, KVType: KVF32})
	}
	outs, err := r.Run(jobs)
	require.NoError(t, err)
	for i, out := range outs {
		if filepath.Base(jobs[i].Model) == "bad.gguf" {
			assert.Contains(t, out.Error, "attn_q_norm", "llama.cpp names the missing tensor")
			continue
		}
		require.Empty(t, out.Error)
		assert.Equal(t, "qwen3", out.Architecture)
		assert.Equal(t, len(f.Tensors()), out.Tensors)
		require.Len(t, out.Runs, 1)
		assert.Len(t, out.Runs[0].Tokens, 4)
		require.Len(t, out.Runs[0].Steps, 4)
		assert.Len(t, out.Runs[0].Steps[0], 3)
	}
}
