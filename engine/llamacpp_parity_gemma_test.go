//go:build !js

package engine

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// gemmaParityCases are TestParityWithLlamaCpp's gemma2 and gemma3 rows:
// small random models with a sliding window of 16 positions, continued
// greedily for 64 tokens after prompts of 1, 17 and 41 tokens, so that
// the continuations run far past the window (up to 105 positions) and the
// sliding layers' rings wrap round several times. gemma2 (3 layers: 0 and
// 2 slide) keeps Gemma 2's soft-caps in one model and has small ones,
// which bend most scores and logits, in another; gemma3 (7 layers: 0–4
// and 6 slide, 5 attends to all) has heads twice as wide as dim/heads, as
// Gemma-3-1B's, and its global layer's rope base, 1e6, differs from the
// sliding layers' 10000. Each is in F32 (F32 cache) and Q8_0 (F32 and F16
// caches).
//
// The output is the token embedding, as in the real models, so
// MuteSpecial zeroes BOS's embedding: the prompts start with another
// token (a first position of all zeros would give a uniform, tied
// distribution). The embeddings are drawn as small as the layers' weights
// (OutputStd 0.1): scaled by √dim, larger ones dominate the residual
// stream, whose post-normed sub-layer outputs are of the order of one,
// and the next-token distributions become so peaked (llama.cpp's margin
// between its two best tokens 7–10 in log-probability) that the greedy
// tokens agree whatever the arithmetic and the other probabilities are
// too small to test; at 0.1 the margins are 0.0002–0.03, as the other
// families'. One more gemma3 model has an output of its own (output.weight)
// and larger embeddings (0.5): its distributions are flatter and it is chaotic, each
// GELU input that an F16 rounding boundary (see llamacppref's
// f16Activations) separates from llama.cpp's moving what follows. In F32
// it agrees within the rounding tolerance (measured 2.3e-4); quantized, a
// Q8_0 step moves far more inputs across such boundaries, and it parts
// from llama.cpp by up to the tolerance itself (4.9e-2; other seeds more),
// so it runs in F32 only.
func gemmaParityCases() []llamacppref.Case {
	base := modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 3, Heads: 4, KVHeads: 2, VocabSize: 384, ContextLength: 128}
	gemma3 := base
	gemma3.Layers, gemma3.HeadDim = 7, 32
	prompts, all := slidingParityRuns(base.VocabSize)
	var cases []llamacppref.Case
	for _, v := range []struct {
		name   string
		arch   string
		shape  modelgen.Shape
		family modelgen.Family
		output bool
		runs   []parityRun
	}{
		{"gemma2", "gemma2", base, modelgen.Family{SlidingWindow: 16}, false, all},
		{"gemma2-softcaps", "gemma2", base, modelgen.Family{SlidingWindow: 16, AttnSoftCap: 1, FinalSoftCap: 5}, false, all},
		{"gemma3", "gemma3", gemma3, modelgen.Family{SlidingWindow: 16}, false, all},
		{"gemma3-output", "gemma3", gemma3, modelgen.Family{SlidingWindow: 16}, true, all[:1]},
	} {
		outputStd := 0.1 // the tied embeddings'
		if v.output {
			outputStd = 0.5 // the output matrix's; the embeddings are drawn with Std
		}
		for _, r := range v.runs {
			cases = append(cases, llamacppref.Case{
				Name:    fmt.Sprintf("%s-%v-kv%s", v.name, r.typ, r.kv),
				KVType:  r.kv,
				Prompts: prompts,
				Spec: modelgen.Spec{Arch: v.arch, Shape: v.shape, Family: v.family, Type: r.typ, Seed: 14, Std: 0.1, OutputStd: outputStd,
					SeparateOutput: v.output, MuteSpecial: true},
			})
		}
	}
	return cases
}

// parityRun is a parity case's weights and cache.
type parityRun struct {
	typ tensor.Type
	kv  llamacppref.KVType
}

// slidingParityRuns are the prompts of the parity cases of models with a
// sliding window of 16 positions, for a vocabulary of vocab tokens: of 1,
// 17 and 41 tokens, each starting with a token other than BOS (whose
// embedding MuteSpecial zeroes); and their runs: F32 with an F32 cache,
// Q8_0 with an F32 and an F16 one.
func slidingParityRuns(vocab int) ([][]int, []parityRun) {
	prompts := llamacppref.Prompts(vocab, 6)
	prompts = [][]int{prompts[0], prompts[2], prompts[5]}
	for i := range prompts {
		prompts[i] = append([]int{5 + i}, prompts[i][1:]...)
	}
	return prompts, []parityRun{{tensor.F32, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF16}}
}

// TestGemmaKeysAsLlamaCpp: the gemma keys the engine reads, and what it
// does with each, are llama.cpp's. For each, a gemma model with the key
// written (or left out) is evaluated after a prompt of 61 tokens, past its
// window of 16, by llama.cpp and by the engine, which must agree; and the
// engine reading it otherwise (the reading llama.cpp's code at another
// version, or a guess, might have) must not, or the model was not telling
// the two apart. The models' output is weak (OutputStd 0.05), so that the
// next-token distribution is flat and every logit shows in it.
func TestGemmaKeysAsLlamaCpp(t *testing.T) {
	runner := llamacppref.Need(t)
	shape := modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 7, Heads: 4, KVHeads: 2, HeadDim: 32, VocabSize: 384, ContextLength: 128}
	spec := func(arch string, edit func(*modelgen.Spec)) modelgen.Spec {
		sp := modelgen.Spec{Arch: arch, Shape: shape, Family: modelgen.Family{SlidingWindow: 16}, Seed: 14, Std: 0.1, OutputStd: 0.05, MuteSpecial: true}
		if arch == "gemma2" {
			sp.Layers = 3
		}
		if edit != nil {
			edit(&sp)
		}
		return sp
	}
	tests := []keyCase{
		{name: "gemma3", spec: spec("gemma3", nil)},
		{name: "gemma3 without a window: no layer slides", spec: spec("gemma3", nil), drop: "gemma3.attention.sliding_window",
			other: func(p *hyperParams) { p.layers.window = 16 }},
		{name: "gemma3 rope.freq_base_swa", spec: spec("gemma3", nil), set: map[string]gguf.Value{"gemma3.rope.freq_base_swa": gguf.ValueOf(float32(500))},
			other: func(p *hyperParams) { p.layers.windowTheta = 10000 }},
		{name: "gemma3 sliding_window_pattern", spec: spec("gemma3", nil), set: map[string]gguf.Value{"gemma3.attention.sliding_window_pattern": gguf.ValueOf(uint32(3))},
			other: func(p *hyperParams) { p.layers.windowPeriod = 6 }},
		{name: "gemma3 linear rope scaling: the global layers only", spec: spec("gemma3", func(sp *modelgen.Spec) { sp.RopeLinearScale = 4 }),
			other: func(p *hyperParams) { p.layers.windowScale = 4 }},
		{name: "gemma3 final_logit_softcapping", spec: spec("gemma3", func(sp *modelgen.Spec) { sp.FinalSoftCap = 0.5 }),
			other: func(p *hyperParams) { p.FinalSoftCap = 0 }},
		{name: "gemma3 of 62 layers (27B): queries scaled by 1/√(dim/heads)", spec: spec("gemma3", func(sp *modelgen.Spec) { sp.Layers = 62 }),
			other: func(p *hyperParams) { p.layers.attnScale = 1 / float32(math.Sqrt(32)) }},
		{name: "gemma2 of 46 layers (27B): queries scaled by 1/√(dim/heads)", spec: spec("gemma2", func(sp *modelgen.Spec) { sp.Layers = 46 }),
			other: func(p *hyperParams) { p.layers.attnScale = 1 / float32(math.Sqrt(32)) }},
		{name: "gemma2 rope.freq_base_swa", spec: spec("gemma2", nil), set: map[string]gguf.Value{"gemma2.rope.freq_base_swa": gguf.ValueOf(float32(500))},
			other: func(p *hyperParams) { p.layers.windowTheta = p.RopeTheta }},
		{name: "gemma2 sliding_window_pattern", spec: spec("gemma2", nil), set: map[string]gguf.Value{"gemma2.attention.sliding_window_pattern": gguf.ValueOf(uint32(3))},
			other: func(p *hyperParams) { p.layers.windowPeriod = 2 }},
		{name: "gemma2 linear rope scaling: every layer", spec: spec("gemma2", func(sp *modelgen.Spec) { sp.RopeLinearScale = 4 }),
			other: func(p *hyperParams) { p.layers.windowScale = 1 }},
		{name: "gemma2 without final_logit_softcapping: Gemma 2's, 30", spec: spec("gemma2", func(sp *modelgen.Spec) { sp.FinalSoftCap, sp.OutputStd = 30, 1 }),
			drop: "gemma2.final_logit_softcapping", other: func(p *hyperParams) { p.FinalSoftCap = 0 }},
		{name: "gemma2 without attn_logit_softcapping: Gemma 2's, 50", spec: spec("gemma2", func(sp *modelgen.Spec) { sp.AttnSoftCap, sp.Std = 50, 0.5 }),
			drop: "gemma2.attn_logit_softcapping", other: func(p *hyperParams) { p.layers.softCap = 0 }},
		{name: "gemma2 without sliding_window: Gemma 2's, 4096", spec: spec("gemma2", func(sp *modelgen.Spec) { sp.SlidingWindow = 4096 }),
			drop: "gemma2.attention.sliding_window", other: func(p *hyperParams) { p.layers.window = 16 }},
	}
	checkKeysAsLlamaCpp(t, runner, tests)
}

// keyCase is a model whose keys a test holds to llama.cpp's reading of
// them (checkKeysAsLlamaCpp).
type keyCase struct {
	name  string
	spec  modelgen.Spec
	set   map[string]gguf.Value // keys added to modelgen's file
	drop  string                // a key removed from it
	other func(*hyperParams)    // another reading of the keys, which llama.cpp's must not match; nil: none
	// tolerance is how far the engine's probabilities may be from
	// llama.cpp's; 0: 1e-5.
	tolerance float64
}

// checkKeysAsLlamaCpp evaluates each case's model after a prompt of 61
// tokens, by llama.cpp and by the engine, which must agree (within the
// case's tolerance, 1e-5 unless it says); and the engine reading the keys
// as the case's other says must not (by more than 1e-4), or the model was
// not telling the two apart.
func checkKeysAsLlamaCpp(t *testing.T, runner *llamacppref.Runner, tests []keyCase) {
	prompt := []int{5}
	for i := range 60 {
		prompt = append(prompt, 3+i*37%380)
	}
	dir := t.TempDir()
	files := make([][]byte, len(tests))
	jobs := make([]llamacppref.Job, len(tests))
	for i, tt := range tests {
		files[i] = withKeys(t, testmodel.GGUF(t, tt.spec), tt.set, tt.drop)
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
			diff := func(edit func(*hyperParams)) float64 {
				m, err := Load(files[i], LoadOptions{})
				require.NoError(t, err)
				if edit != nil {
					f, err := gguf.Parse(files[i])
					require.NoError(t, err)
					p, err := ggufParams(f, m.arch)
					require.NoError(t, err)
					edit(p)
					p.VocabSize, p.LayerSpecs = m.config.VocabSize, m.arch.layerSpecs(p.Config, p.layers)
					m.config = p.Config
				}
				s := newSession(t, m)
				for pos, tok := range prompt {
					require.NoError(t, s.forward(tok, pos, pos == len(prompt)-1))
				}
				return maxProbDiff(s.logits, ref)
			}
			d := diff(nil)
			t.Logf("engine vs llama.cpp: %.1e", d)
			assert.Less(t, d, cmp.Or(tt.tolerance, 1e-5))
			if tt.other != nil {
				assert.Greater(t, diff(tt.other), 1e-4, "the other reading is told apart")
			}
		})
	}
}

// withKeys is the GGUF file data with the keys set added (or replaced) and
// the key drop removed.
func withKeys(t *testing.T, data []byte, set map[string]gguf.Value, drop string) []byte {
	t.Helper()
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		if _, replaced := set[kv.Key]; kv.Key != drop && !replaced {
			b.Set(kv.Key, kv.Value)
		}
	}
	for k, v := range set {
		b.Set(k, v)
	}
	for _, ti := range f.Tensors() {
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
	}
	out, err := b.Bytes()
	require.NoError(t, err)
	return out
}

// maxProbDiff is max |p - p(llama.cpp)| over llama.cpp's top tokens ref,
// p the softmax of logits.
func maxProbDiff(logits []float32, ref []llamacppref.Prob) float64 {
	top := slices.Max(logits)
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - top))
	}
	worst := 0.0
	for _, r := range ref {
		worst = math.Max(worst, math.Abs(math.Exp(float64(logits[r.Token]-top))/sum-r.P))
	}
	return worst
}
