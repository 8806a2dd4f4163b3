//go:build !js

package engine

import (
	"bytes"
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

// qwen35ParityCases are qwen35's and qwen35moe's rows of the parity
// check: F32 weights with an F32 cache, and Q8_0 weights with an F16
// cache (llama.cpp's default; the recurrent state is float32 whatever the
// cache), each continued greedily for 64 tokens after llamacppref's 3
// prompts. qwen35moe's model is the first 4 layers (Gated DeltaNet but
// the last) of qwen35's shape, each with 8 experts of which a token takes
// 2 (their weights renormalised) beside a shared expert.
func qwen35ParityCases() []llamacppref.Case {
	moe := qwen35Shape
	moe.Layers = 4
	var cases []llamacppref.Case
	for _, sp := range []modelgen.Spec{
		{Arch: "qwen35", Shape: qwen35Shape},
		{Arch: "qwen35moe", Shape: moe, MoE: modelgen.MoE{Experts: 8, ExpertsUsed: 2, ExpertHiddenDim: 32, SharedHiddenDim: 64}},
	} {
		for _, r := range []struct {
			typ tensor.Type
			kv  llamacppref.KVType
		}{{tensor.F32, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF16}} {
			sp.Type, sp.Seed, sp.Std, sp.OutputStd, sp.SeparateOutput, sp.MuteSpecial = r.typ, 14, 0.1, 0.5, true, true
			cases = append(cases, llamacppref.Case{Name: fmt.Sprintf("%s-%v-kv%s", sp.Arch, r.typ, r.kv), KVType: r.kv, Spec: sp})
		}
	}
	return cases
}

// TestParityWithLlamaCppQwen35 holds qwen35 and qwen35moe to llama.cpp as
// TestParityWithLlamaCpp holds the other families: the greedy tokens must
// be llama.cpp's, and the top-10 probabilities at every step within its
// tolerances.
func TestParityWithLlamaCppQwen35(t *testing.T) {
	llamacppref.Check(t, qwen35ParityCases(), loadParity)
}

// TestQwen35KeysAsLlamaCpp: what the engine makes of qwen35's (and
// qwen35moe's) keys is what llama.cpp makes of them. For each file, a qwen35 model with a key
// written, changed or left out, the engine's next-token probabilities
// after a prompt of 41 tokens must be llama.cpp's; and a file the engine
// refuses (rope sections that leave a rotated pair to the fourth section)
// must compute, in llama.cpp, otherwise than the same model whose
// sections turn every pair, which is what the engine would have run.
func TestQwen35KeysAsLlamaCpp(t *testing.T) {
	runner := llamacppref.Need(t)
	spec := func(interval int) modelgen.Spec {
		sp := qwen35Spec(tensor.F32)
		sp.OutputStd, sp.MuteSpecial, sp.SSM.FullAttentionInterval = 0.05, true, interval
		return sp
	}
	moe := qwen35moeSpec(tensor.F32)
	moe.OutputStd, moe.MuteSpecial = 0.05, true
	sections := func(s ...int32) map[string]gguf.Value {
		return map[string]gguf.Value{"qwen35.rope.dimension_sections": gguf.ArrayOf(s)}
	}
	tests := []struct {
		name string
		spec modelgen.Spec
		set  map[string]gguf.Value
		drop string
		// engine is the file the engine runs when it is not the same
		// (the refused file's twin); want says whether it agrees.
		engine map[string]gguf.Value
		differ bool
		mtp    bool // the last layer also has a prediction layer's own tensors
	}{
		{name: "full_attention_interval 4", spec: spec(4)},
		{name: "full_attention_interval 2: layers 1, 3, 5, 7 attend", spec: spec(2)},
		{name: "full_attention_interval 3: layers 2 and 5 attend", spec: spec(3)},
		{name: "without full_attention_interval: 4", spec: spec(4), drop: "qwen35.full_attention_interval"},
		{name: "nextn_predict_layers 1: the last layer is a prediction layer, not run", spec: spec(4),
			set: map[string]gguf.Value{"qwen35.nextn_predict_layers": gguf.ValueOf(uint32(1))}, mtp: true},
		{name: "Qwen3.5's sections, wider than the rotated pairs", spec: spec(4), set: sections(11, 11, 10, 0)},
		{name: "qwen35moe without feed_forward_length, which no layer uses", spec: moe, drop: "qwen35moe.feed_forward_length"},
		{name: "sections leaving pairs 0 and 3 to the fourth: they do not turn in llama.cpp", spec: spec(4), set: sections(0, 2, 2, 0),
			engine: sections(2, 1, 1, 0), differ: true},
	}
	prompt := []int{5}
	for i := range 40 {
		prompt = append(prompt, 3+i*37%380)
	}
	dir := t.TempDir()
	files := make([][]byte, len(tests))
	jobs := make([]llamacppref.Job, len(tests))
	for i, tt := range tests {
		files[i] = withKeys(t, testmodel.GGUF(t, tt.spec), tt.set, tt.drop)
		if tt.mtp {
			files[i] = withPredictionLayer(t, files[i], tt.spec.Layers-1, tt.spec.Dim)
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
			data := files[i]
			if tt.engine != nil {
				_, err := Load(data, LoadOptions{})
				require.ErrorIs(t, err, ErrUnsupported, "the engine refuses the file")
				data = withKeys(t, testmodel.GGUF(t, tt.spec), tt.engine, "")
			}
			m, err := Load(data, LoadOptions{})
			require.NoError(t, err)
			s := newSession(t, m)
			for pos, tok := range prompt {
				require.NoError(t, s.forward(tok, pos, pos == len(prompt)-1))
			}
			d := maxProbDiff(s.logits, outs[i].Runs[0].Steps[0])
			t.Logf("engine vs llama.cpp: %.1e", d)
			if tt.differ {
				assert.Greater(t, d, 1e-4, "llama.cpp computes the refused file otherwise")
			} else {
				assert.Less(t, d, 1e-5)
			}
		})
	}
}

// withPredictionLayer is the GGUF file data with the tensors of a
// multi-token prediction layer (llama.cpp's nextn: eh_proj, enorm, hnorm)
// added to layer l, as the converter writes Qwen3.5's, in F32.
func withPredictionLayer(t *testing.T, data []byte, l, dim int) []byte {
	t.Helper()
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors() {
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
	}
	ones := func(n int) []byte { return bytes.Repeat([]byte{0, 0, 0x80, 0x3f}, n) } // float32 1, little-endian
	b.AddTensor(fmt.Sprintf("blk.%d.nextn.eh_proj.weight", l), tensor.F32, []uint64{uint64(2 * dim), uint64(dim)}, ones(2*dim*dim))
	b.AddTensor(fmt.Sprintf("blk.%d.nextn.enorm.weight", l), tensor.F32, []uint64{uint64(dim)}, ones(dim))
	b.AddTensor(fmt.Sprintf("blk.%d.nextn.hnorm.weight", l), tensor.F32, []uint64{uint64(dim)}, ones(dim))
	out, err := b.Bytes()
	require.NoError(t, err)
	return out
}
