//go:build !js

package engine

import (
	"fmt"
	"testing"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/llamacppref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// TestParityMXFP4WithLlamaCpp checks MXFP4 matrices against llama.cpp, as
// TestParityWithLlamaCpp checks the other types: a plain llama model whose
// every matrix (the token embeddings and the output too) is MXFP4, which
// llama.cpp loads and runs for any tensor, with an F32 KV cache and an F16
// one.
func TestParityMXFP4WithLlamaCpp(t *testing.T) {
	shape := modelgen.Shape{Dim: 64, HiddenDim: 160, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 384, ContextLength: 128}
	var cases []llamacppref.Case
	for _, kv := range []llamacppref.KVType{llamacppref.KVF32, llamacppref.KVF16} {
		cases = append(cases, llamacppref.Case{
			Name:   fmt.Sprintf("llama-%v-kv%s", tensor.MXFP4, kv),
			KVType: kv,
			Spec: modelgen.Spec{Arch: "llama", Shape: shape, Type: tensor.MXFP4, Seed: 14, Std: 0.1, OutputStd: 0.5,
				SeparateOutput: true, MuteSpecial: true},
		})
	}
	llamacppref.Check(t, cases, loadParity)
}
