//go:build !js

package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// parityModel is the engine as llamacppref drives it: fresh sessions of
// one model, with the KV cache of the case's type.
type parityModel struct {
	m  *Model
	kv KVType
}

func (p parityModel) Greedy(prompt []int, n int) ([]int, error) {
	s, err := p.m.NewSession(SessionOptions{KVType: p.kv})
	if err != nil {
		return nil, err
	}
	res, err := s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: n}, nil)
	return res.Tokens, err
}

func (p parityModel) Logits(tokens []int) ([][]float32, error) {
	s, err := p.m.NewSession(SessionOptions{KVType: p.kv})
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(tokens))
	for pos, tok := range tokens {
		if err := s.Forward(tok, pos, true); err != nil {
			return nil, err
		}
		out[pos] = slices.Clone(s.Logits())
	}
	return out, nil
}

// loadParity loads a case's model for llamacppref.Check.
func loadParity(t testing.TB, c llamacppref.Case, data []byte) llamacppref.Model {
	m, err := Load(data, LoadOptions{})
	require.NoError(t, err)
	kv := KVF32
	if c.KVType == llamacppref.KVF16 {
		kv = KVF16
	}
	return parityModel{m: m, kv: kv}
}

// TestParityWithLlamaCpp checks every architecture against llama.cpp
// (internal/llamacppref; docs/models.md: Supported models): small random-weight
// models in F32 with an F32 KV cache, and in Q8_0 with an F32 cache and an
// F16 one (llama.cpp's default), each continued greedily for 64 tokens
// after 3 prompts. The tokens must be llama.cpp's, and so must the
// probabilities of its 10 most probable tokens at every step: within
// llamacppref.DefaultTolerance, or where Q8_0 or F16 rounding differs,
// llamacppref.DefaultRoundingTolerance. The layers' weights are small
// (Std 0.1: the random network does not amplify float32 rounding from
// layer to layer) and the output's large (OutputStd 0.5: the next-token
// distribution is peaked as a trained model's is, so greedy decoding
// meets few near ties); BOS and EOS are muted, as the engine ends a
// generation at BOS (as llama2.c does) and llama.cpp does not.
func TestParityWithLlamaCpp(t *testing.T) {
	llama := modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 384, ContextLength: 128}
	// Qwen3's heads are wider than dim/heads, as in Qwen3-0.6B (1024 wide,
	// 16 heads of 128): here 4 heads of 32 over a 64-wide stream.
	qwen3 := llama
	qwen3.HeadDim = 32
	// Phi-4-mini rotates 96 of its heads' 128 dimensions, by LongRoPE's
	// factors: here 12 of 16, by the long factors (a context of 128
	// positions, first trained for 32), and in phi3-short by the short
	// ones (256 positions, first trained for 256), over whole heads.
	phi3 := modelgen.Family{RopeDims: 12, RopeOriginalContext: 32, RopeAttnFactor: 1.1832, SlidingWindow: 2047,
		RopeFactorsLong:  []float32{1, 1.5, 2.5, 4, 7, 12},
		RopeFactorsShort: []float32{1, 1.02, 1.05, 1.1, 1.2, 1.4}}
	phi3Short := modelgen.Family{RopeOriginalContext: 256, RopeAttnFactor: 1.19,
		RopeFactorsLong:  []float32{1, 1.5, 2.5, 4, 7, 12, 20, 30},
		RopeFactorsShort: []float32{1, 1.02, 1.05, 1.1, 1.2, 1.4, 1.7, 2}}
	long := llama
	long.ContextLength = 256
	// SmolLM3's every 4th layer has no rope: 4 layers, the last without.
	fourLayers := llama
	fourLayers.Layers = 4
	// Granite 3.x's multipliers (granite-3.3-2b: 12, 1/64 for its heads of
	// 64, 0.22, 8), the attention's for these heads of 16; its output
	// weights 8 times the others', as its logits are divided by 8.
	granite := modelgen.Family{EmbeddingScale: 12, AttentionScale: 0.0625, ResidualScale: 0.22, LogitScale: 8}
	archs := []struct {
		name, arch string
		shape      modelgen.Shape
		family     modelgen.Family
		outputStd  float64
	}{
		{"llama", "llama", llama, modelgen.Family{}, 0.5},
		{"qwen2", "qwen2", llama, modelgen.Family{}, 0.5},
		{"qwen3", "qwen3", qwen3, modelgen.Family{}, 0.5},
		{"phi3", "phi3", llama, phi3, 0.5},
		{"phi3-short", "phi3", long, phi3Short, 0.5},
		{"smollm3", "smollm3", fourLayers, modelgen.Family{}, 0.5},
		{"olmo2", "olmo2", llama, modelgen.Family{}, 0.5},
		{"granite", "granite", llama, granite, 4},
	}
	var cases []llamacppref.Case
	for _, a := range archs {
		for _, c := range []struct {
			typ tensor.Type
			kv  llamacppref.KVType
		}{{tensor.F32, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF32}, {tensor.Q8_0, llamacppref.KVF16}} {
			cases = append(cases, llamacppref.Case{
				Name:   fmt.Sprintf("%s-%v-kv%s", a.name, c.typ, c.kv),
				KVType: c.kv,
				Spec: modelgen.Spec{Arch: a.arch, Shape: a.shape, Family: a.family, Type: c.typ, Seed: 14, Std: 0.1, OutputStd: a.outputStd,
					SeparateOutput: true, MuteSpecial: true},
			})
		}
	}
	cases = append(cases, gemmaParityCases()...)
	cases = append(cases, graniteHybridParityCases()...)
	llamacppref.Check(t, cases, loadParity)
}
