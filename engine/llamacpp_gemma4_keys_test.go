//go:build !js

package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// TestGemma4KeysAsLlamaCpp: what the engine does with the gemma4 keys
// whose reading the parity models do not vary is llama.cpp's. For each, a
// model with the key written (or left out) is evaluated after a prompt of
// 61 tokens, past its window of 8, by llama.cpp and by the engine, which
// must agree (its output weak, OutputStd 0.05, so that the distribution is
// flat and every logit shows in it; stronger where a soft-cap of 30 must
// show, which makes it more chaotic: measured 2.4e-5); and the engine computing it otherwise (another reading of
// the key) must not, or the model was not telling the two apart.
func TestGemma4KeysAsLlamaCpp(t *testing.T) {
	runner := llamacppref.Need(t)
	base := gemma4Spec(tensor.F32)
	base.OutputStd = 0.05 // a flat distribution: every logit shows in it
	sliding := func(c *Config, edit func(a *AttentionSpec)) {
		for l := range c.LayerSpecs {
			if c.LayerSpecs[l].Attention.Window > 0 {
				edit(&c.LayerSpecs[l].Attention)
			}
		}
	}
	tests := []struct {
		name  string
		spec  func(sp *modelgen.Spec) // changes to base; nil: none
		edit  func(data []byte) []byte
		other func(c *Config) // another reading, which llama.cpp's must not match; nil: none
	}{
		{name: "gemma4"},
		{name: "rope.freq_base_swa", edit: func(d []byte) []byte {
			return withKeys(t, d, map[string]gguf.Value{"gemma4.rope.freq_base_swa": gguf.ValueOf(float32(500))}, "")
		}, other: func(c *Config) { sliding(c, func(a *AttentionSpec) { a.RopeTheta = 10000 }) }},
		{name: "without rope.freq_base_swa: 10000", other: func(c *Config) { sliding(c, func(a *AttentionSpec) { a.RopeTheta = 0 }) }},
		{name: "linear rope scaling: the full layers only", edit: func(d []byte) []byte {
			return withKeys(t, d, map[string]gguf.Value{"gemma4.rope.scaling.type": gguf.ValueOf("linear"), "gemma4.rope.scaling.factor": gguf.ValueOf(float32(4))}, "")
		}, other: func(c *Config) { sliding(c, func(a *AttentionSpec) { a.RopeScale = 0 }) }},
		{name: "final_logit_softcapping", spec: func(sp *modelgen.Spec) { sp.FinalSoftCap = 0.5 },
			other: func(c *Config) { c.FinalSoftCap = 0 }},
		{name: "without final_logit_softcapping: 30", spec: func(sp *modelgen.Spec) { sp.OutputStd = 0.3 }, edit: func(d []byte) []byte {
			return withKeys(t, d, nil, "gemma4.final_logit_softcapping")
		}, other: func(c *Config) { c.FinalSoftCap = 0 }},
		{name: "the sliding layers without rope_freqs", other: func(c *Config) { sliding(c, func(a *AttentionSpec) { a.NoRopeFactors = false }) }},
	}
	prompt := []int{5}
	for i := range 60 {
		prompt = append(prompt, 3+i*37%380)
	}
	dir := t.TempDir()
	files := make([][]byte, len(tests))
	jobs := make([]llamacppref.Job, len(tests))
	for i, tt := range tests {
		sp := base
		if tt.spec != nil {
			tt.spec(&sp)
		}
		files[i] = testmodel.GGUF(t, sp)
		if tt.edit != nil {
			files[i] = tt.edit(files[i])
		}
		path := filepath.Join(dir, fmt.Sprintf("%d.gguf", i))
		require.NoError(t, os.WriteFile(path, files[i], 0o644))
		jobs[i] = llamacppref.Job{Model: path, Prompts: [][]int{prompt}, Tokens: 1, TopK: 10, KVType: llamacppref.KVF32}
	}
	outs, err := runner.Run(jobs)
	require.NoError(t, err)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Empty(t, outs[i].Error, "llama.cpp refused the model")
			ref := outs[i].Runs[0].Steps[0]
			diff := func(edit func(*Config)) float64 {
				m, err := Load(files[i], LoadOptions{})
				require.NoError(t, err)
				if edit != nil {
					edit(&m.config)
				}
				s := newSession(t, m)
				for pos, tok := range prompt {
					require.NoError(t, s.forward(tok, pos, pos == len(prompt)-1))
				}
				return maxProbDiff(s.logits, ref)
			}
			d := diff(nil)
			t.Logf("engine vs llama.cpp: %.1e", d)
			assert.Less(t, d, 5e-5)
			if tt.other != nil {
				assert.Greater(t, diff(tt.other), 1e-4, "the other reading is told apart")
			}
		})
	}
}
