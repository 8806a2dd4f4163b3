//go:build !js

package engine

import (
	"fmt"
	"testing"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// yarnParityCases are llama and qwen2 models whose files say YaRN rope
// scaling (yarn.go), for each rotation style: a factor of 4 over an
// original context of 32 with rope base 500, so that over heads of 16 the
// correction dimensions (pairs 0 to 3) leave a pair extrapolated, a few
// mixed and the rest interpolated, and the magnitude factor is not 1. The
// context (128 positions) runs past the original one. F32, F32 cache.
func yarnParityCases() []llamacppref.Case {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 384, ContextLength: 128}
	var cases []llamacppref.Case
	for _, arch := range []string{"llama", "qwen2"} {
		cases = append(cases, llamacppref.Case{
			Name:   fmt.Sprintf("%s-yarn-%v-kv%s", arch, tensor.F32, llamacppref.KVF32),
			KVType: llamacppref.KVF32,
			Spec: modelgen.Spec{Arch: arch, Shape: shape, Family: modelgen.Family{RopeYaRNFactor: 4, RopeOriginalContext: 32},
				RopeTheta: 500, Type: tensor.F32, Seed: 14, Std: 0.1, OutputStd: 0.5, SeparateOutput: true, MuteSpecial: true},
		})
	}
	return cases
}

// TestParityGptOssWithLlamaCpp checks against llama.cpp, as
// TestParityWithLlamaCpp does, what gpt-oss brought to the engine:
// YaRN rope scaling in the llama family (yarnParityCases).
func TestParityGptOssWithLlamaCpp(t *testing.T) {
	llamacppref.Check(t, yarnParityCases(), loadParity)
}
